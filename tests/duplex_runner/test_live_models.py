"""The same lockstep live session twice gives the same bytes, with real models on both sides: the
cascade examiner with its offline LLM (SmolLM2-135M, greedy) against the fixed-latency control and
against the cascade itself on its fixed clock; the second run is served from the examiner's request
cache (no generation). Loads SmolLM2, faster-whisper and Piper: tens of seconds."""

from __future__ import annotations

import pytest

from .test_live import SUBSET, dataset, run_stage, script, usage

NAMES = ["events.jsonl", "examiner.json", "input.wav", "mix.wav", "output.wav", "runner.json"]


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DUPLEXEVAL_CACHE", str(tmp_path / "cache"))


@pytest.mark.parametrize("runner,args", [("fixed-latency", {"delay_s": 0.8}), ("cascade", {"clock": "fixed"})],
                         ids=["fixed-latency", "cascade"])
def test_a_lockstep_session_with_real_models_is_the_same_bytes_twice_and_replayed_from_the_cache(
        tmp_path, runner, args):
    data = dataset(tmp_path / "in", {"0": script(24.0)})
    first, samples = run_stage(tmp_path, "a", data, runner, args)
    assert samples[f"{SUBSET}/0"]["status"] == "ok"
    made = usage(first)
    assert made["requests"] >= 1 and made["cached"] == 0
    second, _ = run_stage(tmp_path, "b", data, runner, args)
    assert usage(second) == {"requests": 0, "cached": made["requests"]}
    for name in NAMES:
        a, b = (o / "samples" / SUBSET / "0" / name for o in (first, second))
        assert a.read_bytes() == b.read_bytes(), name
    from duplexeval_common.jsonio import read_json
    rec = read_json(first / "samples" / SUBSET / "0" / "runner.json")
    assert rec["deterministic"] is True and rec["live"]["settings"]["llm"] == "local"
    exam = read_json(first / "samples" / SUBSET / "0" / "examiner.json")
    assert exam["turns"][0]["answered"] and any(t["kind"] == "follow_up" for t in exam["turns"])
