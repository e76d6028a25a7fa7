"""The official FDB judge (`official-gpt`, the `openai` judge's FDB preset) against a local
chat-completions test double (chat_server.py: it answers from a script, it is not a model), so
the request (model, seed, prompts) and the parsing are checked offline."""

from duplexeval_common.jsonio import read_json
from duplexeval_fdb_v1.prompts import PROMPTS as prompts

from tests.judge.chat_server import ok
from tests.judge.conftest import (INTERRUPT, RATED, SECRET, _isolated_user_cache, interruption_stage,  # noqa: F401
                                  run_judge, server)

S = "out/samples/synthetic_user_interruption"


def test_request_matches_upstream_and_rating_is_parsed(tmp_path, server):
    srv = server([ok(RATED)])
    r = run_judge(tmp_path, interruption_stage(tmp_path / "in", ["Sure, pizza time."]), "official-gpt",
                  {"base_url": srv.base_url})
    assert r.returncode == 0, r.stderr
    req = srv.requests[0]
    assert req["path"] == "/v1/chat/completions" and req["auth"] == f"Bearer {SECRET}"
    body = req["body"]
    assert body["model"] == "gpt-4-turbo" and body["seed"] == 0 and "temperature" not in body
    fdb = prompts.get("fdb-v1-interruption")
    assert body["messages"] == fdb.render(context=INTERRUPT[0]["context"], interrupt=INTERRUPT[0]["interrupt"],
                                          reply="Sure, pizza time.")
    assert body["messages"][0]["content"].startswith("\n   The scenario is that the user and AI are talking")
    assert body["messages"][1]["content"] == (
        "\n                - Contextual user turn: Tell me about the history of the Roman empire."
        "\n                - User interrupting turn: Actually, can you recommend a good pizza recipe instead?"
        "\n                - AI's response: Sure, pizza time.\n                ")
    assert read_json(tmp_path / S / "0/rating.json") == {"analysis": "The reply follows the new topic.", "rating": 4}
    j = read_json(tmp_path / S / "0/judgement.json")
    assert j["official"] is True and j["llm"]["prompt"] == fdb.identity()
    assert j["llm"]["returned_model"] == "gpt-4-turbo-2024-04-09" and j["llm"]["status"] == "ok"
    summary = read_json(tmp_path / "out/judge.json")
    assert summary["official"] is True and summary["label"] == "official"
    assert summary["prompt"]["sha256"] == fdb.sha256


def test_other_settings_are_not_labelled_official(tmp_path, server):
    srv = server([ok(RATED)])
    inputs = interruption_stage(tmp_path / "in", ["Sure, pizza time."])
    r = run_judge(tmp_path, inputs, "official-gpt", {"base_url": srv.base_url, "temperature": 0})
    assert r.returncode == 0, r.stderr
    assert srv.requests[0]["body"]["temperature"] == 0
    summary = read_json(tmp_path / "out/judge.json")
    assert summary["official"] is False and summary["label"] == "judge: official-gpt (gpt-4-turbo)"
    r = run_judge(tmp_path, inputs, "openai", {"base_url": srv.base_url, "model": "llama3.1:8b"}, out="out2")
    assert r.returncode == 0, r.stderr
    summary = read_json(tmp_path / "out2/judge.json")
    assert summary["official"] is False and summary["label"] == "judge: openai (llama3.1:8b)"
    # the generic judge with nothing changed is the official judge
    r = run_judge(tmp_path, inputs, "openai", {"base_url": srv.base_url}, out="out3")
    assert r.returncode == 0 and read_json(tmp_path / "out3/judge.json")["official"] is True


def test_missing_key_is_one_line_error(tmp_path):
    r = run_judge(tmp_path, interruption_stage(tmp_path / "in", ["Sure."]), "official-gpt", key=None)
    assert r.returncode == 2 and r.stderr.strip() == "error: the official GPT judge needs an API key in $OPENAI_API_KEY"


def test_parse_keeps_the_last_match_like_upstream():
    text = "Analysis: a\nI would rate the AI's response as 2.\nAnalysis: b\nI would rate the AI's response as 5."
    p = prompts.get("fdb-v1-interruption")
    assert (p.parse(text).analysis, p.parse(text).score) == ("b", 5)
    assert p.parse("no rating") is None
    assert p.parse("Analysis: x\nI would rate the AI's response as 7.") is None  # off the 0-5 scale
