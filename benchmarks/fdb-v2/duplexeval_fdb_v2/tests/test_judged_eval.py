"""`duplexeval eval --benchmark fdb-v2 --model silence` with a judge, end to end, against
tests/judge/chat_server.py: a local HTTP server speaking the OpenAI chat-completions protocol from
a script. It is a test double, not a model: its scripted replies check the requests the judge
stage sends and the scores the aggregate stage writes from them.

The silence control says nothing, so there are no examinee segments: the `openai` judge asks only
the task score of the three task kinds (daily has none); the `official` judge asks once per session
with upstream's consolidated layout built from a made-up eval_prompts.json."""

from __future__ import annotations

import json

from duplexeval_common.jsonio import read_json

from tests.judge import chat_server

from .conftest import evaluate
from .test_judged import made_up

KEY = "planted-test-key-0123456789abcdef"


def _serve(text):
    return chat_server.start(lambda body, n: chat_server.ok(text))


def test_openai_judge_end_to_end(eval_home):
    srv = _serve("Score: 4")
    try:
        got = evaluate(eval_home, "silence", "--judge", "openai", "--judge-arg", f"base_url={srv.base_url}",
                       "--judge-arg", f"api_key={KEY}", "--judge-arg", "model=test-judge")
    finally:
        srv.shutdown()
        srv.server_close()
    assert [s["name"] for s in got.run["stages"]] == ["dataset", "runner", "asr", "judge", "aggregate"]
    reqs = [q["body"] for q in srv.requests]
    assert len(reqs) == 3 and {q["model"] for q in reqs} == {"test-judge"}
    texts = " ".join(m["content"] for q in reqs for m in q["messages"])
    for kind in ("corrects a detail", "introduces people", "should not help"):
        assert kind in texts
    for kind in ("correction", "entity_tracking", "safety"):
        j = got.metrics["subsets"][kind]["judged"]
        assert j["task_score"]["value"] == 4 and j["events"] == 0 and j["unparsed"] == 0
        assert j["fluency"]["value"] is None
    assert got.metrics["subsets"]["daily"]["judged"]["task_score"]["value"] is None
    judge = read_json(got.stages["judge"] / "judge.json")
    assert judge["official"] is False and judge["model"] == "test-judge"


def test_official_judge_end_to_end(eval_home, tmp_path):
    path = made_up(tmp_path)
    reply = "```json\n" + json.dumps({"Turn-taking event and score": [[[0, 10], 4, 5], [[10, 30], 2, 3]],
                                      "Task-specific score": 3}) + "\n```"
    srv = _serve(reply)
    try:
        got = evaluate(eval_home, "silence", "--judge", "official", "--judge-arg", f"prompts={path}",
                       "--judge-arg", f"base_url={srv.base_url}", "--judge-arg", f"api_key={KEY}")
    finally:
        srv.shutdown()
        srv.server_close()
    reqs = [q["body"] for q in srv.requests]
    assert len(reqs) == 4 and {q["model"] for q in reqs} == {"gemini-2.5-pro"}
    assert all(q["temperature"] == 0.2 and len(q["messages"]) == 1 for q in reqs)
    first = [q["messages"][0]["content"] for q in reqs]
    assert all(t.startswith("SYSTEM INSTRUCTION:\nSYS") for t in first)
    assert sum("TASK-SPECIFIC RUBRIC" in t for t in first) == 3
    d = got.metrics["subsets"]["daily"]["judged"]
    assert d["fluency"]["value"] == 3 and d["instruction_following"]["value"] == 4
    assert d["bins"][0]["fluency"] == (4 * 10 + 2 * 5) / 15
    judge = read_json(got.stages["judge"] / "judge.json")
    import hashlib
    assert judge["official"] is True and judge["settings"]["prompts_sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()


def test_local_llm_judge_end_to_end(eval_home):
    """`--judge local-llm`: SmolLM2 offline answers each task prompt with one constrained choice 1-5."""
    got = evaluate(eval_home, "silence", "--judge", "local-llm")
    for kind in ("correction", "entity_tracking", "safety"):
        j = got.metrics["subsets"][kind]["judged"]
        assert j["unparsed"] == 0 and j["task_score"]["value"] in (1, 2, 3, 4, 5)
    rec = read_json(got.stages["judge"] / "samples" / "safety" / "safety-01" / "judgement.json")
    assert rec["status"] == "ok" and rec["official"] is False and len(rec["requests"]) == 1
