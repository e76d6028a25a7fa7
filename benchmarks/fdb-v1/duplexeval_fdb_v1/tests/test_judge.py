"""judge: a related reply rates above an unrelated one; `none` rates nothing."""

import json
import subprocess

from duplexeval_common import schemas
from duplexeval_common.jsonio import read_json
from duplexeval_fdb_v1.schemas import SCHEMAS

from tests.conftest import command, write_stage

INTERRUPT = [{"context": "Tell me about the history of the Roman empire.",
              "interrupt": "Actually, can you recommend a good pizza recipe instead?",
              "timestamp": [5.0, 7.0]}]


def _out(text):
    words = text.split()
    return {"text": text, "chunks": [{"text": w, "timestamp": [8.0 + i * 0.3, 8.2 + i * 0.3]}
                                     for i, w in enumerate(words)]}


def run_judge(tmp_path, judge):
    write_stage(tmp_path / "in", {
        "synthetic_user_interruption/0": {"interrupt.json": INTERRUPT,
                                          "output.json": _out("Sure, for a pizza make the dough with flour, "
                                                              "yeast and water, then add tomato sauce.")},
        "synthetic_user_interruption/1": {"interrupt.json": INTERRUPT,
                                          "output.json": _out("The stock market closed higher on Tuesday.")},
        "synthetic_user_interruption/2": {"interrupt.json": INTERRUPT, "output.json": _out("")},
        "synthetic_pause_handling/0": {"output.json": _out("hello")},
    })
    (tmp_path / "cfg.json").write_text(json.dumps({"benchmark": "fdb-v1", "judge": judge}))
    r = subprocess.run([command("judge"), "run", "--input", str(tmp_path / "in"), "--output",
                        str(tmp_path / "out"), "--config", str(tmp_path / "cfg.json")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return tmp_path / "out"


def test_embedding_relevance_orders_replies(tmp_path):
    out = run_judge(tmp_path, "embedding-relevance")
    s = out / "samples/synthetic_user_interruption"
    related, unrelated = (read_json(s / f"{i}/judgement.json") for i in (0, 1))
    assert related["rating"] > unrelated["rating"] + 1.0
    assert not related["official"]
    assert SCHEMAS.problem("rating", read_json(s / "0/rating.json")) is None
    assert read_json(s / "2/judgement.json")["rating"] is None and not (s / "2/rating.json").exists()
    assert not (out / "samples/synthetic_pause_handling").exists()  # only interruption samples
    summary = read_json(out / "judge.json")
    assert summary["label"].startswith("judge: embedding-relevance") and summary["official"] is False


def test_none_judge_records_that_nothing_was_judged(tmp_path):
    out = run_judge(tmp_path, "none")
    assert read_json(out / "judge.json")["judge"] == "none"
    j = read_json(out / "samples/synthetic_user_interruption/0/judgement.json")
    assert j["rating"] is None and not (out / "samples/synthetic_user_interruption/0/rating.json").exists()


def test_unknown_judge_is_one_line_error(tmp_path):
    write_stage(tmp_path / "in", {"synthetic_user_interruption/0": {"interrupt.json": INTERRUPT}})
    (tmp_path / "cfg.json").write_text(json.dumps({"benchmark": "fdb-v1", "judge": "gpt-9"}))
    r = subprocess.run([command("judge"), "run", "--input", str(tmp_path / "in"), "--output",
                        str(tmp_path / "out"), "--config", str(tmp_path / "cfg.json")],
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.strip() == \
        "error: unknown judge 'gpt-9'; known: embedding-relevance, local-llm, none, official-gpt, openai"
