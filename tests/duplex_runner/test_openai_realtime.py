"""The `openai-realtime` runner, with the real `openai` SDK, against a protocol test double.

The double (openai_realtime_server.py: the GA Realtime events over ws://127.0.0.1, not the model)
runs in its own process. Its reply becomes due `reply_delay_s` after the user's last loud sample E
(and not before its VAD's speech_stopped, silence_duration_ms later), and its audio comes
faster than real time, so where the runner must place it is known: at E + reply_delay_s, plus at
most one 20 ms frame (a frame is sent when it is complete) and the loopback round trip. It rejects
a truncate past the audio it delivered, as the real server does, so a barge-in that reports more
than played would show up as an `error`. Each realtime session takes its input's length plus
grace_s.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import pytest

from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.jsonio import read_json, read_jsonl
from duplexeval_runner.events import EventLog
from duplexeval_runner.harness import render
from duplexeval_runner.protocol import SessionFailed
from duplexeval_runner.stage import make_stage

from . import servers
from .conftest import first_audible, make_dataset
from .servers import Doubles

pytest.importorskip("openai")
pytest.importorskip("websockets")

from duplexeval_runner_openai_realtime.runner import OpenAIRealtimeRunner  # noqa: E402

# run alone, after the parallel tests (make test): real-time sessions: frame drift is asserted
pytestmark = pytest.mark.serial

SERVER = Path(__file__).with_name("openai_realtime_server.py")
SR = 24000
SUBSET = "synthetic_turn_taking"
KEY = "planted-oa-key-5c1f0e9a7b3d2468ACE"   # a test value, not shaped like a real key
LEVEL = 0.01      # the reply tone is 0.3; resampling ringing stays far below this
SLACK = 0.060     # one 20 ms frame + loopback round trip + pacing jitter on a shared machine
talk = functools.partial(servers.talk, sr=SR)  # a tone for speech, zeros for silence


@pytest.fixture
def server(tmp_path):
    """server(**script) starts a double in its own process; all are stopped after the test."""
    with Doubles(tmp_path) as doubles:
        yield lambda **script: doubles.start(SERVER, "--script", json.dumps({"api_key": KEY, **script}),
                                             url="ws://127.0.0.1:{port}/v1")


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("MODEL_URL", raising=False)
    monkeypatch.delenv("MODEL_INSECURE", raising=False)
    monkeypatch.delenv("MODEL_CA", raising=False)
    return KEY


def last_loud(x: np.ndarray, sr: int, level: float = 0.02) -> float:
    return (np.flatnonzero(np.abs(x) > level)[-1] + 1) / sr


def stage_run(tmp_path, samples: dict, runner_args: dict, sr: int = SR, name: str = "out"):
    root = tmp_path / f"{name}-in"
    if not root.exists():
        make_dataset(root, {(SUBSET, sid): (x, sr) for sid, x in samples.items()})
    out = tmp_path / name
    config = {"runner": "openai-realtime", "runner_args": runner_args, "seed": 0}
    code = make_stage(config).run([root], out, config)
    return code, read_json(out / "stage.json"), out


def events_of(log: EventLog, kind: str) -> list[dict]:
    return [e for e in log.rows if e["type"] == kind]


def server_errors(log: EventLog) -> list[dict]:
    """`error` events other than the core's pacing note (a loaded machine may cause one)."""
    return [e for e in events_of(log, "error") if "pacing" not in e["reason"]]


# --- end to end, through the stage ---

def test_reply_lands_at_speech_end_plus_delay_and_the_key_is_never_written(tmp_path, server, key):
    """A 16 kHz sample through the stage: output of the input's length and rate, the reply at E + 0.5 s,
    a response still in progress after the last frame is waited for, and the planted key appears in
    no file (events, runner.json, stage.json) while the server saw it as the bearer."""
    srv = server(reply_delay_s=0.5, reply_s=1.5, speed=1.0)
    sr = 16000
    user = talk(("silence", 0.3), ("speech", 1.0), ("silence", 1.3), sr=sr)
    end = last_loud(user, sr)
    code, stage, out = stage_run(tmp_path, {"1": user}, {"url": srv.url, "grace_s": 0.5}, sr=sr)
    assert code == 0, stage["samples"]
    d = out / "samples" / SUBSET / "1"
    audio = servers.output(d, len(user), sr)
    first = first_audible(audio, LEVEL) / sr
    assert 0 <= first - (end + 0.5) <= SLACK, (first, end + 0.5)
    assert audio[int((end + 0.5 + SLACK) * sr):].std() > 0.1          # the tone plays to the end of the input

    rec = read_json(d / "runner.json")
    assert rec["runner"] == "openai-realtime" and rec["clock"] == "realtime" and rec["kind"] == "stream"
    s = rec["settings"]
    assert s["runner_in_sr"] == SR and s["runner_out_sr"] == SR and s["frame_ms"] == 20 and s["grace_s"] == 0.5
    assert s["session"]["audio"]["input"]["turn_detection"] == {
        "type": "server_vad", "threshold": 0.5, "prefix_padding_ms": 300, "silence_duration_ms": 500,
        "create_response": True, "interrupt_response": True}
    assert s["model"] == "gpt-realtime" and s["voice"] == "alloy" and s["instructions"] is None
    assert s["client"]["openai"] == "3.57.0" and s["url"] == srv.url
    assert rec["profile"]["name"] == "openai-realtime" and "Full-Duplex-Bench @ d7336bd" in rec["profile"]["source"]
    st = rec["stats"]
    assert st["frames_sent"] == int(np.ceil((len(user) / sr + 0.5) / 0.02))
    assert st["responses"] == 1 and st["truncates"] == 0 and st["server_errors"] == 0

    events = read_jsonl(d / "events.jsonl")
    recv = [e for e in events if e["type"] == "recv_audio"]
    assert recv[0]["placed_at"] == pytest.approx(recv[0]["t"], abs=1e-4)   # placed at its arrival
    (vad_start,) = [e for e in events if e["type"] == "vad_start"]
    (vad_end,) = [e for e in events if e["type"] == "vad_end"]
    assert vad_start["t"] == pytest.approx(max(0.3 - 0.3, 0), abs=0.011)    # onset less prefix_padding_ms
    assert vad_end["t"] == pytest.approx(end + 0.5, abs=0.011)              # end plus silence_duration_ms
    # The input (2.6 s) plus grace (0.5 s) ends while the 1.5 s reply (from 1.8 s, at 1x) is still coming:
    # finish() waits for response.done before closing.
    done = [e for e in events if e["type"] == "server_event" and e.get("name") == "response.done"]
    assert len(done) == 1 and done[0]["status"] == "completed" and done[0]["usage"]["total_tokens"] > 0
    assert done[0]["t"] > len(user) / sr + 0.5
    assert [e["text"] for e in events if e["type"] == "text" and e["kind"] == "transcript"] == \
        ["Sure, I can help with that."]

    # A try that a loaded machine made drift past the limit was run again on a new connection
    # (drift_retries): one connection per try, the kept files are the last try's.
    tries = st["tries"]
    conns = srv.rows("connect", n=tries)
    assert len(conns) == tries and all(c == {"event": "connect", "path": "/v1/realtime", "model": "gpt-realtime",
                                             "auth_ok": True, "bearer": True} for c in conns)
    ses = srv.rows("session", n=tries)[-1]
    assert ses["append_bytes"] == [960] and ses["appends"] == st["frames_sent"] and ses["errors"] == []
    upds = srv.rows("session_update", n=tries)
    assert len(upds) == tries and all(u["value"] == s["session"] for u in upds)
    for f in out.rglob("*"):
        if f.is_file() and f.suffix != ".wav":
            assert KEY not in f.read_text(errors="replace"), f


@pytest.mark.parametrize("speed", [0.0, 1.0], ids=["reply-delivered", "reply-in-progress"])
def test_barge_in_drops_unplayed_audio_and_truncates_at_what_played(server, key, speed):
    """The user speaks again while the reply plays: what has not played is dropped, and the item is
    truncated at the ms that played, never past what was delivered (the double would reject it)."""
    srv = server(reply_delay_s=0.5, reply_s=3.0, speed=speed, max_replies=1)
    user = talk(("silence", 0.3), ("speech", 1.0), ("silence", 1.0), ("speech", 0.4), ("silence", 0.5))
    runner = OpenAIRealtimeRunner(url=srv.url, grace_s=0.3)
    log = EventLog()
    out, session = render(runner, user, SR, log)
    assert len(out) == len(user)
    barge = 2.3   # the user starts again at 2.3 s, the reply (due 1.8 s, 3 s long) plays
    reply_at = events_of(log, "recv_audio")[0]["placed_at"]
    assert 1.8 <= reply_at <= 1.8 + SLACK
    (cut,) = [e for e in events_of(log, "interrupt")]
    assert cut["reason"] == "speech_started" and barge <= cut["t"] <= barge + SLACK
    assert out[int((reply_at + 0.01) * SR):int(barge * SR)].std() > 0.1          # the reply played until then
    assert np.abs(out[int((cut["t"] + 0.002) * SR):int(3.2 * SR)]).max() < LEVEL  # then nothing of it

    (tr,) = [e for e in events_of(log, "truncate") if "item_id" in e]
    played_ms = (cut["t"] - reply_at) * 1000   # less any gaps between 1x chunks
    assert tr["audio_end_ms"] <= tr["delivered_ms"]
    assert played_ms - (15 if speed else 1) <= tr["audio_end_ms"] <= played_ms + 1
    if speed == 0:   # all 3 s delivered at once, queued back to back; 3 s - played dropped
        recv = events_of(log, "recv_audio")
        assert [e["placed_at"] for e in recv[1:]] == pytest.approx(
            [e["placed_at"] + e["n_samples"] / SR for e in recv[:-1]], abs=1e-6)
        assert recv[1]["t"] < recv[1]["placed_at"] - 0.05
        assert cut["discarded_s"] == pytest.approx(3.0 - played_ms / 1000, abs=0.002)
        assert tr["delivered_ms"] == 3000
    else:            # at 1x the response is cut short by the server: cancelled, nothing more placed
        assert tr["delivered_ms"] <= played_ms + 100 + SLACK * 1000
        assert log.stats["responses_cancelled"] == 1
    assert not server_errors(log), server_errors(log)
    (ses,) = srv.rows("session")
    (srv_tr,) = ses["truncates"]
    assert srv_tr["accepted"] and srv_tr["audio_end_ms"] == tr["audio_end_ms"] and ses["errors"] == []
    assert srv_tr["audio_end_ms"] <= srv_tr["delivered_ms"]
    if speed == 1.0:
        assert ses["responses"][0]["status"] == "cancelled"


def test_the_double_rejects_a_truncate_past_the_delivered_audio(server, key, monkeypatch):
    """What the barge-in test guards against: a client that reports more than was delivered gets the
    server's error, and the runner logs it."""
    from duplexeval_runner_openai_realtime import runner as mod
    real = mod.RealtimeConnection.truncate

    async def overreport(self, item, ms, t):
        await real(self, item, item.delivered_ms() + 500, t)
    monkeypatch.setattr(mod.RealtimeConnection, "truncate", overreport)
    srv = server(reply_delay_s=0.2, reply_s=1.0, speed=0.0, max_replies=1)
    user = talk(("speech", 0.4), ("silence", 0.7), ("speech", 0.3), ("silence", 0.2))
    log = EventLog()
    render(OpenAIRealtimeRunner(url=srv.url, grace_s=0.0, finish_timeout_s=0.5,
                                turn_detection={"type": "server_vad", "silence_duration_ms": 200}), user, SR, log)
    (err,) = server_errors(log)
    assert "Audio content of 1000 ms is already shorter than 1500 ms" in err["reason"]
    assert srv.rows("truncate")[0]["accepted"] is False


# --- failures: one line each, the key never in them ---

def test_no_api_key_is_a_one_line_error(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(DuplexEvalError) as e:
        OpenAIRealtimeRunner(url="ws://127.0.0.1:9/v1")
    assert "OPENAI_API_KEY" in str(e.value) and "\n" not in str(e.value)
    monkeypatch.setenv("OPENAI_API_KEY", "  ")
    with pytest.raises(DuplexEvalError, match="OPENAI_API_KEY"):
        OpenAIRealtimeRunner()


@pytest.mark.parametrize("args, msg", [
    ({"turn_detection": None}, "turn_detection must be an object"),
    ({"turn_detection": {"type": "semantic_vad", "threshold": 0.5}}, "does not take threshold"),
    ({"turn_detection": {"type": "server_vad", "threshold": 2}}, "threshold must be"),
    ({"frame_ms": 0.01}, "frame_ms"),
    ({"output_modalities": ["audio", "text"]}, "output_modalities"),
    ({"url": "ftp://host/v1"}, "url must look like"),
    ({"url": f"wss://user:{KEY}@host/v1"}, "must not carry credentials"),
    ({"bogus": 1}, "unknown runner_args bogus"),
    ({"profile": "nope"}, "unknown profile"),
    ({"ca_file": "/no/such.pem"}, "is not a file"),
])
def test_bad_settings_are_one_line_errors(key, args, msg):
    with pytest.raises(DuplexEvalError, match=msg) as e:
        OpenAIRealtimeRunner(**args)
    assert "\n" not in str(e.value) and KEY not in str(e.value)


def test_endpoint_from_model_url_and_semantic_vad(key, monkeypatch):
    monkeypatch.setenv("MODEL_URL", "https://proxy.example:8443/openai/v1")
    r = OpenAIRealtimeRunner(turn_detection={"type": "semantic_vad", "eagerness": "low"}, voice="marin",
                             instructions="Be brief.")
    assert r.url == "wss://proxy.example:8443/openai/v1"
    s = r.settings()["session"]
    assert s["audio"]["input"]["turn_detection"] == {"type": "semantic_vad", "eagerness": "low"}
    assert s["audio"]["output"]["voice"] == "marin" and s["instructions"] == "Be brief."
    assert s["audio"]["input"]["format"] == {"type": "audio/pcm", "rate": 24000}
    assert OpenAIRealtimeRunner(url=None).url == "wss://proxy.example:8443/openai/v1"
    monkeypatch.delenv("MODEL_URL")
    assert OpenAIRealtimeRunner().url == "wss://api.openai.com/v1"


def test_wrong_key_fails_the_sample_without_the_key(server, monkeypatch):
    srv = server()
    wrong = "wrong-oa-key-0123456789abcdefXYZ"
    monkeypatch.setenv("OPENAI_API_KEY", wrong)
    with pytest.raises(SessionFailed) as e:
        render(OpenAIRealtimeRunner(url=srv.url), talk(("speech", 0.2)), SR, EventLog())
    msg = str(e.value)
    assert "HTTP 401" in msg and "OPENAI_API_KEY" in msg and wrong not in msg and "\n" not in msg
    assert srv.rows("connect")[0]["auth_ok"] is False


@pytest.mark.parametrize("script, expect", [
    ({"reject_session_update": "Invalid value: 'nonesuch'. Supported values are: 'alloy'."},
     "the server refused the session: Invalid value: 'nonesuch'"),
    ({"mute_session_update": True}, "no session.updated within 0.5 s"),
])
def test_a_session_refused_or_stuck_before_the_clock_fails_with_the_reason(server, key, script, expect):
    srv = server(**script)
    with pytest.raises(SessionFailed) as e:
        render(OpenAIRealtimeRunner(url=srv.url, open_timeout_s=0.5), talk(("speech", 0.2)), SR, EventLog())
    assert expect in str(e.value) and "\n" not in str(e.value)


def test_a_message_over_max_message_bytes_fails_the_sample_in_one_line(server, key):
    """Audio deltas of 500 ms (32 kB of JSON) over a 16,384-byte limit: the sample fails with one line
    naming the limit (the SDK's own default has no limit at all)."""
    srv = server(chunk_ms=500)
    with pytest.raises(SessionFailed) as e:
        render(OpenAIRealtimeRunner(url=srv.url, max_message_bytes=16384, grace_s=0.5),
               talk(("speech", 0.5), ("silence", 2.5)), SR, EventLog())
    msg = str(e.value)
    assert "a server message was larger than max_message_bytes (16384 bytes)" in msg and "\n" not in msg, msg
    assert KEY not in msg


def test_an_error_then_close_fails_the_sample_with_the_servers_message(server, key):
    srv = server(die_at_s=0.4, die_how="error")
    with pytest.raises(SessionFailed) as e:
        render(OpenAIRealtimeRunner(url=srv.url, grace_s=0.0), talk(("speech", 0.3), ("silence", 0.7)), SR,
               EventLog())
    msg = str(e.value)
    assert "The server had an error while processing your request" in msg and "1011" in msg, msg
    assert "before the input ended" in msg


def test_a_server_dying_mid_sample_fails_that_sample_only_and_a_rerun_completes_it(tmp_path, server, key):
    """Two samples at once (concurrency=2, one event loop): the session the server drops fails its
    sample with the reason, the other completes; a rerun runs only the failed one."""
    srv = server(reply_delay_s=0.5, reply_s=0.5, speed=0.0, die_in_session=1, die_at_s=1.0)
    user = talk(("silence", 0.2), ("speech", 0.6), ("silence", 1.2))
    args = {"url": srv.url, "grace_s": 0.3, "concurrency": 2}
    code, stage, out = stage_run(tmp_path, {"a": user, "b": user.copy()}, args)
    assert code == 1
    states = {k: v["status"] for k, v in stage["samples"].items()}
    assert sorted(states.values()) == ["failed", "ok"], states
    (lost,) = [k for k, v in states.items() if v == "failed"]
    reason = stage["samples"][lost]["reason"]
    assert "the connection was lost (no close frame)" in reason and "before the input ended" in reason, reason
    assert "\n" not in reason and KEY not in reason
    assert not (out / "samples" / lost).exists()
    sessions = srv.rows("session", n=2)
    assert sorted(s["died"] for s in sessions) == [False, True]
    assert max(s["wall"][0] for s in sessions) < min(s["wall"][1] for s in sessions)  # side by side

    code, stage, _ = stage_run(tmp_path, {}, args)
    assert code == 0 and all(v["status"] == "ok" for v in stage["samples"].values())
    assert len(srv.rows("session", n=3)) == 3        # one new session: only the lost sample ran again
    rec = read_json(out / "samples" / lost / "runner.json")
    assert rec["stats"]["responses"] == 1
