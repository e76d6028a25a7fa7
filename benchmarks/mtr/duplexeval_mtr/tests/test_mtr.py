"""The MTR-DuplexBench judgements through the one client, against the chat-completions test
double (chat_server.py: scripted answers, not a model): the request each sends (model, messages,
temperature), the parsed score, the rescaled dialogue-quality score, the refusal rate and the
turn segmentation's independent runs."""

import json

import pytest

from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.jsonio import read_jsonl
from duplexeval_mtr.prompts import PROMPTS as prompts
from duplexeval_mtr import judging as mtr

from tests.judge.chat_server import ok
from tests.judge.conftest import SECRET


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)


def test_dialogue_quality_raw_and_rescaled(server, key):
    srv = server([ok("3")])
    judge = mtr.judge_for(mtr.DQ, base_url=srv.base_url)
    t = mtr.transcript([{"speaker": "user", "start": 31, "end": 33.5, "text": " How are you?"},
                        {"speaker": "model", "start": 34, "end": 36, "text": " Fine, thanks."}])
    j = mtr.dialogue_quality(judge, t, 31.0, 58.25)
    body = srv.requests[0]["body"]
    assert body["model"] == "gpt-4o" and "seed" not in body and "temperature" not in body
    assert body["messages"] == prompts.get(mtr.DQ).render(transcript=t, turn_start=31.0, turn_end=58.25)
    assert "from 31.0 to 58.25 seconds" in body["messages"][0]["content"]
    assert j.status == "ok" and j.score == 3.0 and j.parsed.extra["rescaled"] == round(3 * 5 / 2.97, 6)
    assert judge.official and j.record()["score_detail"] == {"rescaled": round(3 * 5 / 2.97, 6)}


def test_instruction_following_at_temperature_0_1(server, key):
    srv = server([ok("1"), ok("0")])
    judge = mtr.judge_for(mtr.IF, base_url=srv.base_url)
    js = [mtr.instruction_following(judge, " What is the capital of France? ", "Paris."),
          mtr.instruction_following(judge, "Name a colour.", "I like trains.")]
    assert [q["body"]["temperature"] for q in srv.requests] == [0.1, 0.1]
    assert srv.requests[0]["body"]["messages"][1]["content"].endswith(
        "User Question: What is the capital of France?\nModel Answer: Paris.\n\nYour output (1 or 0):")
    assert [j.score for j in js] == [1, 0] and mtr.mean_score(js)["mean"] == 0.5


def test_safety_refusal_rate_excludes_unparsed(server, key):
    srv = server(lambda body, n: ok("unsure") if "maybe" in body["messages"][0]["content"]
                 else ok("1") if "Here is how" in body["messages"][0]["content"] else ok("0"))
    judge = mtr.judge_for(mtr.SAFETY, base_url=srv.base_url, max_parse_attempts=2)
    js = mtr.judge_many(judge, [{"response": r} for r in ("I can't help with that.", "No.", "Sorry, no.",
                                                          "Here is how you do it.", "maybe")])
    assert [j.status for j in js] == ["ok"] * 4 + ["unparsed"]
    rate = mtr.refusal_rate(js)
    assert (rate["scored"], rate["unparsed"], rate["mean"], rate["refusal_rate"]) == (4, 1, 0.25, 0.75)
    assert len(srv.requests) == 6  # the unparsed one twice, the others once


def test_turn_segmentation_independent_runs_and_the_ledger(server, key, tmp_path):
    turns = {"filtered_turn": [{"start": 31.0, "end": 35.0}, {"start": 40.0, "end": 44.5}],
             "continuation_info": []}
    srv = server(lambda body, n: ok(f"```json\n{json.dumps(turns)}\n```") if body["seed"] % 2 == 0
                 else ok(json.dumps({**turns, "filtered_turn": turns["filtered_turn"][:1]})))
    judge = mtr.judge_for(mtr.SEGMENT, base_url=srv.base_url, max_concurrency=6)
    assert judge.official is False  # the segmentation prompt is written here, never official
    t = "user speaker, start/end time: (31.00, 35.00), content: hello"
    runs = mtr.segment_turns(judge, t, 30.0, 120.0, runs=6)
    assert sorted(q["body"]["seed"] for q in srv.requests) == [0, 1, 2, 3, 4, 5]
    assert [len(j.parsed.value["filtered_turn"]) for j in runs] == [2, 1, 2, 1, 2, 1]
    assert len({j.request_hash for j in runs}) == 6
    again = mtr.segment_turns(judge, t, 30.0, 120.0, runs=6)  # all from the cache
    assert len(srv.requests) == 6 and all(j.cached for j in again)
    mtr.write_ledger(tmp_path / "ledger.jsonl", [(f"dialogue-1/run-{k}", j) for k, j in enumerate(runs)])
    rows = read_jsonl(tmp_path / "ledger.jsonl")
    assert [r["seed"] for r in rows] == list(range(6)) and rows[0]["score_detail"]["value"] == turns
    with pytest.raises(DuplexEvalError, match="built for prompt mtr-turn-segmentation, not mtr-safety"):
        mtr.safety(judge, "x")
