"""Live sessions (duplexeval_runner/live.py) through the duplex-runner stage's CLI, with the cascade
package's examiner and the control runners as examinees, whose behaviour is known by construction.

Where the examiner's LLM is asked, it is a local chat-completions test double (tests/judge/
chat_server.py: a scripted HTTP server speaking the OpenAI protocol, not a model), so the requests
the examiner sends, and that a rerun sends none, can be checked offline.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import soundfile as sf
from click.testing import CliRunner

from duplexeval_common import schemas
from duplexeval_common.jsonio import read_json, read_jsonl
from duplexeval_runner.cli import main
from duplexeval_runner_cascade.examiner import NO_TALK_OVER

from tests.judge import chat_server

SUBSET = "daily"
SR = 16000
GOALS = [{"id": "T1", "goal": "get an idea for a main course", "say": "Could you suggest a main course?"},
         {"id": "T2", "goal": "ask for a vegetarian option", "say": "One guest is vegetarian. What then?"},
         {"id": "T3", "goal": "ask how long it takes", "say": "How long does that take to cook?"}]


def script(duration_s: float = 30.0, **examiner) -> dict:
    return {"format": "duplexeval-live/1", "duration_s": duration_s, "sample_rate": SR, "examiner": {
        "system_prompt": "You are planning a dinner for four and want help.",
        "opening": "Hi, can you help me plan a dinner?", "goals": GOALS,
        "end_phrase": "Thanks. The conversation is over.", "turn_limit": 5, **examiner}}


def dataset(root, scripts: dict[str, dict | str]):
    rows = []
    for sid, doc in scripts.items():
        d = root / "samples" / SUBSET / sid
        d.mkdir(parents=True)
        (d / "live.json").write_text(doc if isinstance(doc, str) else json.dumps(doc))
        rows.append({"subset": SUBSET, "id": sid, "task": "daily"})
    (root / "manifest.json").write_text(json.dumps({"dataset": "live-test", "samples": rows}))
    return root


def run_stage(tmp_path, name, data, runner, runner_args=None, examiner_args=None):
    out = tmp_path / name
    cfg = {"runner": runner, "runner_args": runner_args or {}, "seed": 0,
           "examiner": {"engine": "cascade", "args": examiner_args or {}}}
    (tmp_path / f"{name}.json").write_text(json.dumps(cfg))
    res = CliRunner().invoke(main, ["run", "--input", str(data), "--output", str(out), "--config",
                                    str(tmp_path / f"{name}.json"), "--allow-failures"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return out, read_json(out / "stage.json")["samples"]


def files(out, sid="0"):
    d = out / "samples" / SUBSET / sid
    user, sr_u = sf.read(str(d / "input.wav"), dtype="float32")
    model, sr_m = sf.read(str(d / "output.wav"), dtype="float32")
    mix, sr_x = sf.read(str(d / "mix.wav"), dtype="float32")
    assert sr_u == sr_m == sr_x == SR
    return d, user, model, mix, read_json(d / "examiner.json"), read_json(d / "runner.json")


def usage(out) -> dict:
    """The examiner's LLM requests of a stage run (stage.json's invocation notes)."""
    return read_json(out / "stage.json")["invocation_notes"]["examiner_llm"]


def audible(x: np.ndarray, level: float = 1e-3) -> np.ndarray:
    return np.abs(x) > level


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DUPLEXEVAL_CACHE", str(tmp_path / "cache"))


def test_silence_leaves_every_turn_unanswered_and_the_recording_is_what_was_played(tmp_path):
    out, samples = run_stage(tmp_path, "s", dataset(tmp_path / "in", {"0": script()}), "silence")
    assert samples[f"{SUBSET}/0"]["status"] == "ok"
    d, user, model, mix, exam, rec = files(out)
    n = int(30.0 * SR)
    assert len(user) == len(model) == n and mix.shape == (n, 2)
    assert np.array_equal(mix[:, 0], user) and np.array_equal(mix[:, 1], model)
    assert not model.any()
    assert schemas.problem("examiner", exam) is None and schemas.problem("runner-record", rec) is None
    assert rec["live"]["examiner"] == "cascade" and rec["deterministic"] is True  # silence, and SmolLM2 greedy
    turns = exam["turns"]
    assert [t["kind"] for t in turns] == ["opening", "scripted", "scripted", "end"]
    assert [t["goal"] for t in turns] == ["T1", "T2", "T3", None]
    assert [t["text"] for t in turns[1:3]] == [g["say"] for g in GOALS[1:]]
    assert not any(t["answered"] for t in turns) and exam["goals_reached"] == [] and exam["model_turns"] == []
    assert exam["ended"]["reason"] == "end_phrase"
    assert read_json(out / "stage.json")["invocation_notes"]["examiner_llm"] == {"requests": 0, "cached": 0}
    assert turns[0]["start_s"] == 0.5
    for a, b in zip(turns, turns[1:]):  # unanswered: the next line response_timeout_s after the last
        assert b["start_s"] - a["end_s"] == pytest.approx(6.0, abs=0.021)
    # the examiner channel is audible only inside its turns, and in each of them
    inside = np.zeros(n, bool)
    for t in turns:
        a, b = int(round(t["start_s"] * SR)), int(round(t["end_s"] * SR))
        inside[a:b] = True
        assert audible(user[a:b]).mean() > 0.3
    assert not audible(user[~inside]).any()


def test_always_talk_overlaps_every_line_and_the_slow_examiner_yields_where_the_fast_does_not(tmp_path):
    data = dataset(tmp_path / "in", {"0": script()})
    shares = {}
    for preset in ("slow", "fast"):
        out, _ = run_stage(tmp_path, preset, data, "always-talk", examiner_args={"preset": preset})
        _d, user, model, _mix, exam, _rec = files(out)
        turns = exam["turns"]
        spoken = audible(user)
        shares[preset] = float((spoken & audible(model)).sum() / spoken.sum())
        assert exam["talked_over_model"] >= 1 and not any(t["answered"] for t in turns)
        if preset == "slow":  # the model's speech began during the opening: it stopped there
            assert turns[0]["yielded"] and turns[0]["end_s"] < turns[0]["planned_end_s"] and exam["yielded"] >= 1
        else:
            assert not any(t["yielded"] for t in turns) and exam["yielded"] == 0
            assert turns[0]["end_s"] == turns[0]["planned_end_s"]
    assert shares["slow"] > 0.85 and shares["fast"] > 0.85, shares


def test_the_examiner_waits_for_the_reply_asks_its_llm_and_a_rerun_replays_it_from_the_cache(tmp_path):
    lines = ["What about roast chicken?", "And for the vegetarian guest?"]
    srv = chat_server.start(lambda body, n: chat_server.ok(lines[min(n, len(lines) - 1)]))
    try:
        data = dataset(tmp_path / "in", {"0": script(40.0)})
        ex = {"llm": "openai", "llm_url": srv.base_url, "llm_model": "examiner-test"}
        out, samples = run_stage(tmp_path, "a", data, "fixed-latency", {"delay_s": 0.5}, ex)
        assert samples[f"{SUBSET}/0"]["status"] == "ok"
        _d, user, model, _mix, exam, _rec = files(out)
        asked = len(srv.requests)
        assert asked == 2 and usage(out) == {"requests": 2, "cached": 0}
        for r in srv.requests:
            system = r["body"]["messages"][0]
            assert system["role"] == "system" and NO_TALK_OVER in system["content"]
            assert r["body"]["temperature"] == 0.0 and r["body"]["model"] == "examiner-test"
        assert "ask for a vegetarian option" in srv.requests[0]["body"]["messages"][0]["content"]
        turns = exam["turns"]
        assert [t["kind"] for t in turns[:3]] == ["opening", "follow_up", "follow_up"]
        assert [t["text"] for t in turns[1:3]] == lines
        assert turns[0]["answered"] and turns[1]["answered"] and exam["goals_reached"][:2] == ["T1", "T2"]
        # the model's reply starts delay_s after the examiner's line ends (the control's rule), and the
        # examiner's next line starts after the reply ended, never over it
        for t, m in zip(turns, exam["model_turns"]):
            end = int(round(t["end_s"] * SR))
            start = end + int(np.argmax(audible(model[end:])))
            assert (start - end) / SR == pytest.approx(0.5, abs=0.15)
        for m, nxt in zip(exam["model_turns"], turns[1:]):
            assert nxt["start_s"] >= m["end_s"] + 0.4
        # a rerun: no request reaches the server, the examiner's lines and both channels are the same
        out2, _ = run_stage(tmp_path, "b", data, "fixed-latency", {"delay_s": 0.5}, ex)
        _d2, user2, model2, _m2, exam2, _r2 = files(out2)
        assert len(srv.requests) == asked and usage(out2) == {"requests": 0, "cached": 2}
        assert np.array_equal(user, user2) and np.array_equal(model, model2) and exam == exam2
    finally:
        srv.shutdown()


def test_a_bad_script_fails_its_sample_with_one_line_and_the_others_complete(tmp_path):
    bad_goals = script()
    bad_goals["examiner"]["goals"] = []
    data = dataset(tmp_path / "in", {"0": script(10.0), "1": bad_goals, "2": "{not json",
                                     "3": {**script(), "duration_s": -1}})
    out, samples = run_stage(tmp_path, "s", data, "silence")
    assert samples[f"{SUBSET}/0"]["status"] == "ok"
    reasons = {sid: samples[f"{SUBSET}/{sid}"].get("reason", "") for sid in "123"}
    assert all(samples[f"{SUBSET}/{sid}"]["status"] == "failed" for sid in "123")
    assert "live.json examiner: goals must be a non-empty list" in reasons["1"] and "daily/1" in reasons["1"]
    assert "live.json is not valid JSON" in reasons["2"]
    assert "duration_s must be a number" in reasons["3"]
    assert all("\n" not in r for r in reasons.values())
    for sid in "123":  # nothing half-written
        assert not (out / "samples" / SUBSET / sid / "output.wav").exists()
    events = read_jsonl(out / "samples" / SUBSET / "0" / "events.jsonl")
    assert events[0]["type"] == "session_start" and events[0]["live"] is True


def test_an_examiner_endpoint_that_fails_fails_that_session_only_and_a_rerun_resumes_it(tmp_path):
    broken = {"on": True}

    def answer(body, n):
        if broken["on"] and "FAIL-ME" in body["messages"][0]["content"]:
            return chat_server.error(500)
        return chat_server.ok("***")  # nonsense: nothing speakable

    srv = chat_server.start(answer)
    try:
        other = script(20.0)
        other["examiner"]["system_prompt"] += " FAIL-ME"
        data = dataset(tmp_path / "in", {"0": script(20.0), "1": other})
        ex = {"llm": "openai", "llm_url": srv.base_url, "llm_max_retries": 1}
        out, samples = run_stage(tmp_path, "a", data, "fixed-latency", {"delay_s": 0.5}, ex)
        assert samples[f"{SUBSET}/0"]["status"] == "ok"
        failed = samples[f"{SUBSET}/1"]
        assert failed["status"] == "failed" and "\n" not in failed["reason"]
        assert "failed after 2 attempts (last: HTTP 500)" in failed["reason"], failed["reason"]
        assert not (out / "samples" / SUBSET / "1" / "examiner.json").exists()
        # the nonsense answer: the examiner says the goal's scripted line instead
        exam = read_json(out / "samples" / SUBSET / "0" / "examiner.json")
        assert exam["turns"][1]["kind"] == "follow_up" and exam["turns"][1]["text"] == GOALS[1]["say"]
        done = (out / "samples" / SUBSET / "0" / "examiner.json").stat().st_mtime_ns
        broken["on"] = False
        out, samples = run_stage(tmp_path, "a", data, "fixed-latency", {"delay_s": 0.5}, ex)
        assert samples[f"{SUBSET}/1"]["status"] == "ok" and samples[f"{SUBSET}/0"]["status"] == "ok"
        assert (out / "samples" / SUBSET / "0" / "examiner.json").stat().st_mtime_ns == done  # not run again
    finally:
        srv.shutdown()


def test_the_same_lockstep_session_twice_is_the_same_bytes(tmp_path):
    data = dataset(tmp_path / "in", {"0": script(20.0)})
    outs = [run_stage(tmp_path, name, data, "silence")[0] for name in ("a", "b")]
    names = ["events.jsonl", "examiner.json", "input.wav", "mix.wav", "output.wav", "runner.json"]
    for name in names:
        a, b = (o / "samples" / SUBSET / "0" / name for o in outs)
        assert a.read_bytes() == b.read_bytes(), name
    assert sorted(p.name for p in (outs[0] / "samples" / SUBSET / "0").iterdir()) == ["_done.json", *names]


def test_without_scripted_lines_the_examiners_llm_opens_and_moves_on(tmp_path):
    """Upstream's task file has no spoken lines, only goals: the LLM writes the opening (asked before
    the clock starts) and, when a turn goes unanswered, the next line, told there was no answer."""
    srv = chat_server.start(lambda body, n: chat_server.ok(f"Generated line {n + 1}."))
    try:
        doc = script(25.0)
        del doc["examiner"]["opening"]
        for g in doc["examiner"]["goals"]:
            del g["say"]
        out, samples = run_stage(tmp_path, "s", dataset(tmp_path / "in", {"0": doc}), "silence",
                                 examiner_args={"llm": "openai", "llm_url": srv.base_url})
        assert samples[f"{SUBSET}/0"]["status"] == "ok", samples
        exam = read_json(out / "samples" / SUBSET / "0" / "examiner.json")
        turns = exam["turns"]
        assert [(t["kind"], t["text"]) for t in turns[:3]] == [
            ("opening", "Generated line 1."), ("follow_up", "Generated line 2."), ("follow_up", "Generated line 3.")]
        first, second = (r["body"]["messages"] for r in srv.requests[:2])
        assert len(first) == 1 and "start the conversation" in first[0]["content"]
        assert GOALS[0]["goal"] in first[0]["content"] and GOALS[1]["goal"] in second[0]["content"]
        assert [m["role"] for m in second[1:]] == ["assistant", "user"] and second[2]["content"] == "(no answer)"
    finally:
        srv.shutdown()


def test_a_sessions_seed_is_the_stages_plus_live_jsons_for_the_examiner_and_the_record(tmp_path):
    """live.json `seed` (an epoch's) is added to the stage's: runner.json records it and the
    examiner's LLM requests carry it (with temperature, so an endpoint samples by it)."""
    srv = chat_server.start(lambda body, n: chat_server.ok("Tell me more."))
    try:
        data = dataset(tmp_path / "in", {"0": script(12.0), "1": {**script(12.0), "seed": 1}})
        out, samples = run_stage(tmp_path, "s", data, "fixed-latency", {"delay_s": 0.5},
                                 {"llm": "openai", "llm_url": srv.base_url, "temperature": 0.7})
        assert all(s["status"] == "ok" for s in samples.values()), samples
        seeds = [read_json(out / "samples" / SUBSET / sid / "runner.json")["seed"] for sid in "01"]
        assert seeds == [0, 1]
        got = {(r["body"]["seed"], r["body"]["temperature"]) for r in srv.requests}
        assert got == {(0, 0.7), (1, 0.7)}
    finally:
        srv.shutdown()


def test_the_examiner_settings_table_in_docs_runners_md_is_the_code():
    """docs/runners.md lists every setting of the cascade examiner with its default, and no other."""
    import re
    from pathlib import Path
    from duplexeval_runner_cascade.examiner import SETTINGS
    text = (Path(__file__).resolve().parents[2] / "docs" / "runners.md").read_text()
    section = text[text.index("| `preset` | `slow` |"):]
    rows = {}
    for line in section.splitlines():
        m = re.match(r"\| `([a-z_]+)` \| ([^|]+) \|", line)
        if not m:
            break
        rows[m.group(1)] = m.group(2).strip().strip("`")
    defaults = SETTINGS.defaults()
    assert set(rows) == set(defaults)
    for name, value in defaults.items():
        shown = ("true" if value else "false") if isinstance(value, bool) else "empty" if value == "" else str(value)
        assert rows[name] == shown, (name, rows[name], value)
