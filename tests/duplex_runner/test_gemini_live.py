"""The `gemini-live` runner, with the real google-genai SDK as its client, against a protocol test
double of the Gemini Live API (gemini_live_server.py: not the model, no model inside).

The double runs in its own process over TLS (a self-signed certificate made here with the openssl
CLI; the SDK always dials wss://). Its reply is a tone that becomes due once the input it received
reaches the user's last loud sample E + `reply_delay_s`, so where the runner must place it is known:
at E + reply_delay_s, plus at most one 64 ms frame (a frame is sent when it is complete) and the
loopback round trip. The runner is realtime: each session takes its input's length plus grace_s.
"""

from __future__ import annotations

import functools
import json
import os
import socket
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.jsonio import read_json, read_jsonl
from duplexeval_runner.events import EventLog
from duplexeval_runner.harness import render
from duplexeval_runner.protocol import SessionFailed
from duplexeval_runner.stage import make_stage

from . import servers
from .conftest import first_audible, make_dataset
from .servers import Double, Doubles, cert  # noqa: F401  (cert: a fixture)

pytest.importorskip("google.genai")
pytest.importorskip("websockets")
from duplexeval_runner_gemini_live import runner as gl  # noqa: E402
from duplexeval_runner_gemini_live.runner import GeminiLiveRunner  # noqa: E402

# run alone, after the parallel tests (make test): real-time sessions: reply placement is asserted to milliseconds
pytestmark = pytest.mark.serial

SERVER = Path(__file__).with_name("gemini_live_server.py")
SR = 16000
SUBSET = "synthetic_turn_taking"
FRAME = 1024 / 16000   # the runner's 64 ms frame
LEVEL = 0.01           # the reply tone is 0.3; resampling ringing stays far below this
SLACK = FRAME + 0.06   # one frame + loopback round trip + pacing jitter on a busy machine
KEY = "planted-gemini-key-7Q2xW9vK3mZ8"   # the double requires it; no file may ever contain it
PATH = "/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent"
talk = functools.partial(servers.talk, sr=SR)  # a tone for speech, zeros for silence


@pytest.fixture(autouse=True)
def env(monkeypatch):
    """The planted key in GEMINI_API_KEY; no endpoint settings from the outer environment."""
    for var in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "MODEL_URL", "MODEL_CA", "MODEL_INSECURE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    return monkeypatch


@pytest.fixture
def server(cert, tmp_path):
    """server(tls=True, **script) starts a double in its own process; all are stopped after the test."""
    with Doubles(tmp_path) as doubles:
        def start(tls: bool = True, **script) -> Double:
            tls_args = ["--cert", cert[0], "--key", cert[1]] if tls else []
            return doubles.start(SERVER, "--script", json.dumps(script), *tls_args,
                                 url=f"{'https' if tls else 'http'}://127.0.0.1:{{port}}",
                                 env={**os.environ, "GEMINI_LIVE_DOUBLE_KEY": KEY})
        yield start


def stage_run(tmp_path, samples: dict, runner_args: dict, out: Path | None = None):
    root = tmp_path / "in"
    if not root.exists():
        make_dataset(root, {(SUBSET, sid): (x, SR) for sid, x in samples.items()})
    out = out or tmp_path / "out"
    config = {"runner": "gemini-live", "runner_args": runner_args, "seed": 0}
    code = make_stage(config).run([root], out, config)
    return code, read_json(out / "stage.json"), out


def tls_args(srv: Double, cert, **extra) -> dict:
    return {"url": srv.url, "ca_file": str(cert[0]), **extra}


def audible_from(x: np.ndarray, t: float) -> float:
    """The first audible time at or after t."""
    i = first_audible(x[int(round(t * SR)):], LEVEL)
    return -1.0 if i < 0 else t + i / SR


def no_file_holds(root: Path, secret: str) -> None:
    found = [str(p) for p in root.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]
    assert found == []


# --- through the stage ------------------------------------------------------------------------

def test_reply_is_placed_at_its_arrival_and_the_key_stays_out_of_every_file(tmp_path, server, cert):
    """A 3.5 s sample: the reply at E + 0.5 s within a frame; FDB's setup on the wire; no key in files."""
    srv = server(reply_delay_s=0.5)
    user = talk(("silence", 0.5), ("speech", 1.0), ("silence", 2.0))
    end = 1.5
    code, stage, out = stage_run(tmp_path, {"1": user}, tls_args(srv, cert, grace_s=0.5))
    assert code == 0, stage["samples"]
    d = out / "samples" / SUBSET / "1"
    audio = servers.output(d, len(user), SR)
    first = first_audible(audio, LEVEL) / SR
    assert end + 0.5 <= first + 0.002 and first - (end + 0.5) <= SLACK, (first, end + 0.5)
    assert audio[int((first + 0.01) * SR):int((end + 1.45) * SR)].std() > 0.1   # the 1 s tone plays on

    rec = read_json(d / "runner.json")
    assert rec["runner"] == "gemini-live" and rec["clock"] == "realtime" and rec["kind"] == "stream"
    s = rec["settings"]
    assert (s["runner_in_sr"], s["runner_out_sr"], s["frame_samples"], s["mime_type"]) == (
        16000, 24000, 1024, "audio/pcm;rate=16000")
    assert s["key_env"] == "GEMINI_API_KEY" and s["url"] == srv.url and s["client"]["google-genai"] == "3.6.1"
    assert s["websocket"] == f"wss://127.0.0.1:{srv.port}{PATH}"
    assert rec["profile"]["name"] == "gemini-live" and "Full-Duplex-Bench @ d7336bd" in rec["profile"]["source"]
    assert rec["models"]["gemini"]["model"] == "gemini-2.5-flash-native-audio-preview-12-2025"
    st = rec["stats"]
    assert st["recv_audio_s"] == 1.0 and st["recv_chunks"] == 25 and st["turns_complete"] == 1
    assert st["interrupted"] == 0 and st["total_token_count"] == 35
    assert st["drift_p99_ms"] < 20.0 and st["frames_sent"] == int(np.ceil((len(user) / SR + 0.5) / FRAME))
    events = read_jsonl(d / "events.jsonl")
    recv = [e for e in events if e["type"] == "recv_audio"]
    assert recv[0]["placed_at"] == pytest.approx(recv[0]["t"], abs=1e-4)       # placed at arrival
    assert recv[0]["t"] == pytest.approx(first, abs=0.002)
    assert {"turn_complete", "generation_complete", "setup_complete"} <= {e.get("event") for e in events}

    (ses,) = srv.rows()
    assert ses["path"] == PATH and ses["key_ok"] and ses["errors"] == []
    assert ses["order"] == ["setup", "audio", "audioStreamEnd"]
    assert ses["frame_bytes"] == [2048] and ses["mime_types"] == ["audio/pcm;rate=16000"]
    assert ses["frames"] == st["frames_sent"] and ses["speech_ends"] == [round(end * SR)]
    setup = ses["setup"]
    assert setup["model"] == "models/gemini-2.5-flash-native-audio-preview-12-2025"
    assert setup["generationConfig"] == {"responseModalities": ["AUDIO"]}
    assert setup["systemInstruction"]["parts"] == [{"text": "You are a helpful and friendly AI assistant."}]
    ric = setup["realtimeInputConfig"]
    assert ric["activity_handling"] == "START_OF_ACTIVITY_INTERRUPTS"
    assert ric["automatic_activity_detection"] == {
        "disabled": False, "start_of_speech_sensitivity": "START_SENSITIVITY_HIGH",
        "end_of_speech_sensitivity": "END_SENSITIVITY_HIGH", "prefix_padding_ms": 40, "silence_duration_ms": 300}
    no_file_holds(out, KEY)


def test_one_session_carries_every_turn_of_a_sample_with_two_at_once(tmp_path, server, cert):
    """concurrency=2: two samples of two turns each run side by side, one connection per sample,
    and each reply lands at its turn's end + 0.5 s."""
    srv = server(reply_delay_s=0.5)
    a = talk(("speech", 0.6), ("silence", 1.9), ("speech", 0.5), ("silence", 1.2))   # ends 0.6, 3.0
    b = talk(("silence", 0.3), ("speech", 0.5), ("silence", 2.0), ("speech", 0.4), ("silence", 1.0))  # 0.8, 3.2
    t = time.monotonic()
    code, stage, out = stage_run(tmp_path, {"a": a, "b": b}, tls_args(srv, cert, grace_s=0.3, concurrency=2))
    took = time.monotonic() - t
    assert code == 0, stage["samples"]
    assert took < 4.2 + 0.3 + 2.5, took          # side by side, not one after the other (8.4 s)
    for sid, ends in (("a", (0.6, 3.0)), ("b", (0.8, 3.2))):
        d = out / "samples" / SUBSET / sid
        audio, _ = sf.read(str(d / "output.wav"), dtype="float32")
        for e in ends:
            got = audible_from(audio, e + 0.1)
            assert 0 <= got - (e + 0.5) <= SLACK, (sid, e, got)
        st = read_json(d / "runner.json")["stats"]
        assert st["turns_complete"] == 2 and st["drift_p99_ms"] < 20.0
    rows = srv.rows(n=2)
    assert len(rows) == 2 and all(len(r["replies"]) == 2 and r["errors"] == [] for r in rows)
    assert sorted(len(r["speech_ends"]) for r in rows) == [2, 2]


def test_a_server_that_dies_mid_sample_fails_that_sample_only_and_a_rerun_completes_it(tmp_path, server, cert):
    srv = server(die_after=15, die_how="close", die_in_session=1)   # 15 frames: 0.96 s into session 1
    samples = {"1": talk(("speech", 0.5), ("silence", 1.3)), "2": talk(("speech", 0.5), ("silence", 1.3))}
    code, stage, out = stage_run(tmp_path, samples, tls_args(srv, cert, grace_s=0.2))
    s1, s2 = stage["samples"][f"{SUBSET}/1"], stage["samples"][f"{SUBSET}/2"]
    assert code == 1 and s1["status"] == "failed" and s2["status"] == "ok"
    assert "code 1011: Internal error encountered." in s1["reason"] and "before the input ended" in s1["reason"]
    assert "\n" not in s1["reason"] and KEY not in s1["reason"]
    assert not (out / "samples" / SUBSET / "1").exists()

    code, stage, _ = stage_run(tmp_path, samples, tls_args(srv, cert, grace_s=0.2), out=out)
    assert code == 0, stage["samples"]
    assert stage["samples"][f"{SUBSET}/2"].get("cached") and not stage["samples"][f"{SUBSET}/1"].get("cached")
    assert len(srv.rows(n=3)) == 3                       # the rerun opened one new session only
    no_file_holds(out, KEY)


# --- the session, through render ------------------------------------------------------------

def test_interrupted_drops_the_unplayed_reply(server, cert):
    """The user talks again at 1.9 s while the reply (due 1.5 s, 1 s long, all delivered at 4x real
    time) plays: the double sends `interrupted` and the runner drops what had not played."""
    srv = server(reply_delay_s=0.5)
    user = talk(("silence", 0.2), ("speech", 0.8), ("silence", 0.9), ("speech", 0.5), ("silence", 1.0))
    runner = GeminiLiveRunner(**tls_args(srv, cert, grace_s=0.3))
    runner.setup()
    log = EventLog()
    out, session = render(runner, user, SR, log)
    assert len(out) == len(user)
    barge = 1.9
    (cut,) = [e for e in log.rows if e["type"] == "interrupt"]
    assert cut["reason"] == "interrupted" and barge <= cut["t"] <= barge + SLACK
    reply_end = audible_from(out, 1.45) + 1.0
    assert cut["discarded_s"] == pytest.approx(reply_end - cut["t"], abs=0.01)   # the rest of the tone
    assert out[int(1.6 * SR):int(barge * SR)].std() > 0.1                # it played until then
    assert np.abs(out[int((cut["t"] + 0.002) * SR):int(2.9 * SR)]).max() <= LEVEL   # silent after the cut
    assert 0 <= audible_from(out, cut["t"] + 0.01) - 2.9 <= SLACK          # the next turn's reply, same session
    assert session.stats["interrupted"] == 1 and session.stats["discarded_s"] == cut["discarded_s"]
    (ses,) = srv.rows()
    assert ses["interrupts"] == [round(barge * SR)] and len(ses["replies"]) == 2 and ses["errors"] == []


@pytest.mark.parametrize("how, reason", [("exit", "the connection was lost without a close frame (code 1006)"),
                                         ("go_away", "after goAway (time left 0s)")])
def test_a_lost_connection_before_the_input_ends_fails_the_sample(server, cert, how, reason):
    srv = server(die_after=10, die_how=how)             # 0.64 s
    runner = GeminiLiveRunner(**tls_args(srv, cert, grace_s=0.2))
    with pytest.raises(SessionFailed) as exc:
        render(runner, talk(("speech", 0.4), ("silence", 0.8)), SR, EventLog())
    msg = str(exc.value)
    assert reason in msg and "before the input ended" in msg and "\n" not in msg, msg


def test_a_message_over_max_message_bytes_fails_the_sample_in_one_line(server, cert):
    """Reply chunks of 1 s (64 kB of base64) over a 16,384-byte limit: one line naming the limit."""
    srv = server(chunk_ms=1000)
    with pytest.raises(SessionFailed) as exc:
        render(GeminiLiveRunner(**tls_args(srv, cert, grace_s=0.2, max_message_bytes=16384)),
               talk(("speech", 0.4), ("silence", 2.0)), SR, EventLog())
    msg = str(exc.value)
    assert "a server message was larger than max_message_bytes (16384 bytes)" in msg and "\n" not in msg, msg
    assert KEY not in msg


def test_a_connection_closed_after_the_input_ended_keeps_the_output(server, cert):
    srv = server(die_after=12, die_how="close")         # 0.77 s: in the grace window after 0.5 s of input
    log = EventLog()
    user = talk(("speech", 0.5))
    out, _ = render(GeminiLiveRunner(**tls_args(srv, cert, grace_s=0.6)), user, SR, log)
    assert len(out) == len(user)
    (err,) = log.of_type("error")
    assert "code 1011" in err["reason"] and "after the input ended; output kept" in err["reason"]


def test_a_stuck_setup_fails_within_the_open_timeout(server, cert):
    srv = server(mute_setup=True)
    t = time.monotonic()
    with pytest.raises(SessionFailed, match="no progress opening the session within 0.5 s"):
        render(GeminiLiveRunner(**tls_args(srv, cert, open_timeout_s=0.5)), talk(("speech", 0.2)), SR, EventLog())
    assert time.monotonic() - t < 3.0


def test_a_wrong_key_is_refused_in_one_line_without_the_key(server, cert, env):
    srv = server()
    wrong = "planted-wrong-key-0123456789abc"
    env.setenv("GEMINI_API_KEY", wrong)
    with pytest.raises(SessionFailed) as exc:
        render(GeminiLiveRunner(**tls_args(srv, cert)), talk(("speech", 0.2)), SR, EventLog())
    msg = str(exc.value)
    assert "code 1007: API key not valid" in msg and "GEMINI_API_KEY / GOOGLE_API_KEY" in msg
    assert wrong not in msg and KEY not in msg and "\n" not in msg
    (ses,) = srv.rows()
    assert ses["key_ok"] is False and ses["headers"]["x-goog-api-key"] == "<present>"


def test_google_api_key_plain_http_and_transcriptions(server, env):
    """GOOGLE_API_KEY when GEMINI_API_KEY is unset; an http:// endpoint from MODEL_URL is plain ws://;
    with transcription on, the transcripts come back as text events; messages the SDK cannot read
    are logged and the session goes on."""
    srv = server(tls=False, junk_after=3)
    env.delenv("GEMINI_API_KEY")
    env.setenv("GOOGLE_API_KEY", KEY)
    env.setenv("MODEL_URL", srv.url + "/")
    runner = GeminiLiveRunner(grace_s=0.2, transcription=True, silence_duration_ms=500)
    assert runner.settings()["key_env"] == "GOOGLE_API_KEY" and runner.settings()["url"] == srv.url
    log = EventLog()
    out, _ = render(runner, talk(("speech", 0.4), ("silence", 1.2)), SR, log)
    assert 0 <= audible_from(out, 0.0) - 0.9 <= SLACK
    texts = {(e["source"], e["text"]) for e in log.of_type("text")}
    assert texts == {("input_transcription", "speech"), ("output_transcription", "tone")}
    assert len([e for e in log.of_type("error") if "could not read" in e["reason"]]) == 2
    (ses,) = srv.rows()
    assert ses["key_ok"] and "inputAudioTranscription" in ses["setup"] and "outputAudioTranscription" in ses["setup"]
    assert ses["setup"]["realtimeInputConfig"]["automatic_activity_detection"]["silence_duration_ms"] == 500


def test_a_wrong_api_version_path_is_a_404_naming_the_settings(server, cert):
    srv = server(api_version="v1alpha")
    with pytest.raises(SessionFailed, match="HTTP 404 to the WebSocket handshake; check url and api_version"):
        render(GeminiLiveRunner(**tls_args(srv, cert)), talk(("speech", 0.2)), SR, EventLog())
    (rej,) = srv.rows("rejected")
    assert rej["path"] == PATH


def test_an_unverified_certificate_or_a_closed_port_is_refused_with_the_way_out(server):
    srv = server()
    with pytest.raises(SessionFailed, match="TLS certificate verification failed.*ca_file.*insecure"):
        render(GeminiLiveRunner(url=srv.url), talk(("speech", 0.2)), SR, EventLog())
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(SessionFailed, match=f"cannot open a session at https://127.0.0.1:{port}: connection refused"):
        render(GeminiLiveRunner(url=f"https://127.0.0.1:{port}"), talk(("speech", 0.2)), SR, EventLog())


# --- settings -----------------------------------------------------------------------------------

def test_no_key_is_a_one_line_error_naming_both_variables(env):
    env.delenv("GEMINI_API_KEY")
    with pytest.raises(DuplexEvalError) as exc:
        GeminiLiveRunner()
    msg = str(exc.value)
    assert "GEMINI_API_KEY" in msg and "GOOGLE_API_KEY" in msg and "\n" not in msg
    assert msg.startswith("runner 'gemini-live':")


def test_settings_errors_are_one_line(tmp_path, env):
    for args, msg in [({"nope": 1}, "unknown runner_args nope"),
                      ({"frame_ms": 0.01}, "frame_ms"),
                      ({"start_of_speech_sensitivity": "HIGH"}, "START_SENSITIVITY_HIGH, START_SENSITIVITY_LOW"),
                      ({"activity_handling": "sometimes"}, "activity_handling"),
                      ({"prefix_padding_ms": -1}, "prefix_padding_ms"),
                      ({"url": "ftp://h:1"}, "base URL"),
                      ({"url": f"https://u:{KEY}@h:1"}, "no credentials"),
                      ({"url": "https://h:1/?key=abc"}, "no credentials"),
                      ({"ca_file": str(tmp_path / "none.pem")}, "is not a file"),
                      ({"profile": "nope"}, "unknown profile 'nope'"),
                      ({"model": ""}, "model must be")]:
        with pytest.raises(DuplexEvalError, match=msg) as exc:
            GeminiLiveRunner(**args)
        assert "\n" not in str(exc.value) and KEY not in str(exc.value)
    env.setenv("MODEL_INSECURE", "maybe")
    with pytest.raises(DuplexEvalError, match="MODEL_INSECURE"):
        GeminiLiveRunner()


def test_profile_defaults_the_sdk_url_and_overrides(env):
    r = GeminiLiveRunner()
    assert r.url == "https://generativelanguage.googleapis.com" and not r.custom_url
    assert r.profile["defaults"]["silence_duration_ms"] == 300 and r.args["frame_ms"] == 64 and r.frame == 1024
    assert r.grace_s == 3.0 and r.args["system_instruction"] == "You are a helpful and friendly AI assistant."
    r = GeminiLiveRunner(frame_ms=20, silence_duration_ms=800, voice="Puck", url="https://proxy.example/gl/")
    assert r.frame == 320 and r.args["silence_duration_ms"] == 800 and r.url == "https://proxy.example/gl"
    r.setup()
    cfg = r.live_config()
    assert cfg.speech_config.voice_config.prebuilt_voice_config.voice_name == "Puck"
    seeded = GeminiLiveRunner(send_seed=True, seed=7)
    seeded.setup()
    assert cfg.seed is None and seeded.live_config().seed == 7
    assert KEY not in json.dumps(r.settings()) and KEY not in json.dumps(r.profile) and KEY not in json.dumps(r.models())


def test_pcm_rates_are_parsed_from_the_mime_type():
    assert gl.pcm_rate("audio/pcm;rate=24000") == 24000 and gl.pcm_rate("audio/pcm; rate=16000") == 16000
    assert gl.pcm_rate("audio/pcm") == 24000 and gl.pcm_rate(None) == 24000 and gl.pcm_rate("image/png") is None
