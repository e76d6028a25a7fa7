"""Live sessions given hostile input: a live.json holding huge values, control characters or lone
surrogates, a script listing far more goals than its turn limit reaches, an examiner endpoint that
echoes the key or answers with a novel (the chat-completions test double, tests/judge/
chat_server.py, not a model)."""

from __future__ import annotations

import copy
import re

import pytest

from duplexeval_common.jsonio import read_json
from duplexeval_runner_cascade import examiner as examiner_mod
from duplexeval_runner_cascade.examiner_llm import MAX_LINE_CHARS

from tests.judge import chat_server

from .test_live import SUBSET, dataset, run_stage, script as _script


def script(duration_s: float = 5.0) -> dict:
    return copy.deepcopy(_script(duration_s))  # test_live's GOALS are shared: never edit them in place


def unscripted(duration_s: float = 8.0) -> dict:
    """No opening and no say lines: every line is the examiner's LLM's."""
    s = script(duration_s)
    del s["examiner"]["opening"]
    s["examiner"]["goals"] = [{k: v for k, v in g.items() if k != "say"} for g in s["examiner"]["goals"]]
    return s


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DUPLEXEVAL_CACHE", str(tmp_path / "cache"))


def test_bad_live_json_values_are_quoted_short_in_one_line_and_the_others_complete(tmp_path):
    docs = {"ok": script()}
    docs["fmt"] = {**script(), "format": "x" * 1_000_000}
    docs["dur"] = {**script(), "duration_s": "y" * 1_000_000}
    docs["tl"] = script()
    docs["tl"]["examiner"]["turn_limit"] = ["z"] * 100_000
    docs["gid"] = script()
    docs["gid"]["examiner"]["goals"] = [{"id": "a" * 1_000_000, "goal": "g"}] * 2
    docs["nul"] = script()
    docs["nul"]["examiner"]["goals"][1]["say"] = "a\x00b"
    docs["esc"] = script()
    docs["esc"]["examiner"]["opening"] = "\x1b[31mHello"
    docs["long"] = script()
    docs["long"]["examiner"]["end_phrase"] = "Bye. " * 2000
    docs["surr"] = script()
    docs["surr"]["examiner"]["goals"][0]["id"] = "T\ud800"
    out, samples = run_stage(tmp_path, "s", dataset(tmp_path / "in", docs), "silence")
    assert samples[f"{SUBSET}/ok"]["status"] == "ok"
    expect = {"fmt": "format must be", "dur": "duration_s must be", "tl": "turn_limit must be",
              "gid": "repeats the id", "nul": "goals[1] say holds a control character",
              "esc": "opening holds a control character", "long": "end_phrase is 10000 characters long",
              "surr": "lone surrogate"}
    for sid, words in expect.items():
        got = samples[f"{SUBSET}/{sid}"]
        assert got["status"] == "failed" and words in got["reason"], (sid, got["reason"][:300])
        assert "internal error" not in got["reason"] and "\n" not in got["reason"]
        assert len(got["reason"]) < 300, (sid, len(got["reason"]))
        assert not (out / "samples" / SUBSET / sid).exists()
    assert len((out / "stage.json").read_bytes()) < 100_000


def test_goals_the_turn_limit_never_reaches_are_not_synthesized(tmp_path, monkeypatch):
    """10,000 goals with spoken lines and turn_limit 5: at most 4 goals are ever spoken, so the session
    opens with those lines made, not 10,000 (about 25 minutes of TTS on a CPU)."""
    made = []
    speech = examiner_mod.CascadeExaminer.speech
    monkeypatch.setattr(examiner_mod.CascadeExaminer, "speech",
                        lambda self, text, sr: made.append(text) or speech(self, text, sr))
    doc = script()
    doc["examiner"]["goals"] = [{"id": f"G{i}", "goal": "g", "say": f"Line number {i}."} for i in range(10_000)]
    _out, samples = run_stage(tmp_path, "s", dataset(tmp_path / "in", {"0": doc}), "silence")
    assert samples[f"{SUBSET}/0"]["status"] == "ok", samples
    assert len(made) <= 6, len(made)


def test_a_key_the_endpoint_echoes_reaches_no_output_and_no_cache_entry(tmp_path, monkeypatch):
    """The key's variable has a name the secrets policy does not know as a credential's (the user
    named it): the client's own key is still scrubbed from every line before it is spoken, cached
    or recorded."""
    key = "zq7-examiner-key-0001"
    monkeypatch.setenv("EXAMINER_LLM", key)
    box: list = []
    srv = chat_server.start(lambda body, n: chat_server.ok(
        f"Your header was {box[0].requests[-1]['auth']} and the key is {key}."))
    box.append(srv)
    try:
        ex = {"llm": "openai", "llm_url": srv.base_url, "api_key_env": "EXAMINER_LLM"}
        out, samples = run_stage(tmp_path, "s", dataset(tmp_path / "in", {"0": unscripted()}), "silence",
                                 examiner_args=ex)
        assert samples[f"{SUBSET}/0"]["status"] == "ok", samples
        assert srv.requests and srv.requests[0]["auth"] == f"Bearer {key}"
        written = [p for root in (out, tmp_path / "cache") for p in root.rglob("*") if p.is_file()]
        assert any("examiner" in p.as_posix() and p.suffix == ".json" for p in written if "cache" in p.parts)
        assert [p for p in written if key.encode() in p.read_bytes()] == []
    finally:
        srv.shutdown()


def test_an_endless_or_control_character_reply_is_spoken_as_a_bounded_plain_line(tmp_path):
    replies = ["Fine.\x00\x07 \x1b[31mOK.", "\ud83d\ude00 Sure.", "word " * 150_000]
    srv = chat_server.start(lambda body, n: chat_server.ok(replies[min(n, len(replies) - 1)]))
    try:
        ex = {"llm": "openai", "llm_url": srv.base_url}
        out, samples = run_stage(tmp_path, "s", dataset(tmp_path / "in", {"0": unscripted(20.0)}), "silence",
                                 examiner_args=ex)
        assert samples[f"{SUBSET}/0"]["status"] == "ok", samples
        turns = read_json(out / "samples" / SUBSET / "0" / "examiner.json")["turns"]
        texts = [t["text"] for t in turns]
        assert texts[0] == "Fine. 31mOK." and texts[1] == "\U0001F600 Sure."
        assert len(texts[2]) <= MAX_LINE_CHARS and texts[2].startswith("word word")  # cut by the session
        assert not any(re.search(r"[\x00-\x08\x0b-\x1f\x7f]", t) for t in texts)
    finally:
        srv.shutdown()


def test_a_damaged_or_read_only_request_cache_costs_only_a_repeated_request(tmp_path):
    srv = chat_server.start(lambda body, n: chat_server.ok("Tell me more."))
    try:
        ex = {"llm": "openai", "llm_url": srv.base_url}
        data = dataset(tmp_path / "in", {"0": unscripted()})
        _out, samples = run_stage(tmp_path, "a", data, "silence", examiner_args=ex)
        asked = len(srv.requests)
        assert samples[f"{SUBSET}/0"]["status"] == "ok" and asked >= 1
        entries = [p for p in (tmp_path / "cache").rglob("*.json")]
        assert entries
        for i, p in enumerate(entries):  # garbage, another JSON value, an entry whose text is a NUL
            p.write_text(["{not json", "[1, 2]", '{"request_hash": "%s", "status": "ok", "attempts": 1, '
                          '"request": {}, "replies": [{"text": "\\u0000"}]}' % p.stem][i % 3])
        out, samples = run_stage(tmp_path, "b", data, "silence", examiner_args=ex)
        assert samples[f"{SUBSET}/0"]["status"] == "ok", samples
        assert "internal error" not in str(samples)
    finally:
        srv.shutdown()
