"""The `freeze-omni` runner against a protocol test double of the Freeze-Omni server.

The double (freeze_omni_server.py, not the model) runs in its own process over HTTPS with a
self-signed certificate made here with the openssl CLI. Its reply is a tone that becomes due
`reply_delay_s` after the user's last loud sample E, so where the runner must place it is known:
at E + reply_delay_s, plus at most one frame (a frame is sent when it is complete) and the
loopback round trip. The runner is realtime: each session takes its input's length plus grace_s.
The runner is driven through the core: `duplexeval_runner.harness.render` and the stage.
"""

from __future__ import annotations

import functools
import base64
import json
import socket
import subprocess
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
from duplexeval_runner.registry import RUNNERS
from duplexeval_runner.stage import make_stage

from ..conftest import command
from . import servers
from .conftest import first_audible, make_dataset, zeros
from .servers import Doubles, cert  # noqa: F401  (cert: a fixture)

pytest.importorskip("socketio")
pytest.importorskip("aiohttp")

from duplexeval_runner_freeze_omni import runner as freeze_omni  # noqa: E402
from duplexeval_runner_freeze_omni.runner import FreezeOmniRunner  # noqa: E402

# run alone, after the parallel tests (make test): real-time sessions: frame drift is asserted
pytestmark = pytest.mark.serial

SERVER = Path(__file__).with_name("freeze_omni_server.py")
SR = 16000
SUBSET = "synthetic_turn_taking"
LEVEL = 0.01     # the reply tone is 0.3; resampling ringing stays far below this
SLACK = 0.060    # one 30 ms frame + loopback round trip + pacing drift
FRAME = 0.030
talk = functools.partial(servers.talk, sr=SR)  # a tone for speech, zeros for silence


@pytest.fixture
def server(cert, tmp_path):
    """server(**script) starts a double in its own process; all are stopped after the test."""
    with Doubles(tmp_path) as doubles:
        yield lambda **script: doubles.start(SERVER, "--cert", cert[0], "--key", cert[1], "--script",
                                             json.dumps(script), url="https://127.0.0.1:{port}")


def stage_run(tmp_path, samples: dict, runner_args: dict, name: str = "out", root: Path | None = None):
    if root is None:
        root = make_dataset(tmp_path / f"{name}-in", {(SUBSET, sid): (x, SR) for sid, x in samples.items()})
    out = tmp_path / name
    config = {"runner": "freeze-omni", "runner_args": runner_args, "seed": 0}
    code = make_stage(config).run([root], out, config)
    return code, read_json(out / "stage.json"), out


def last_loud(x: np.ndarray, level: float = 1e-3) -> float:
    return (np.flatnonzero(np.abs(x) > level)[-1] + 1) / SR


def run(runner: FreezeOmniRunner, user: np.ndarray):
    """One session through the core's harness: (output at SR, session, event log)."""
    runner.setup()
    log = EventLog()
    out, session = render(runner, user, SR, log)
    return out, session, log


# --- end to end, through the stage ---

def test_reply_lands_at_speech_end_plus_delay_and_frames_never_leave_early(tmp_path, server, cert):
    """Output exactly the input's length, the reply at E + 0.5 s; frame k reaches the server no
    earlier than t0 + (k+1) * 30 ms (the clock starts after the server's reset acknowledgements)."""
    srv = server(reply_delay_s=0.5)
    user = talk(("silence", 0.5), ("speech", 1.0), ("silence", 2.0))
    end = last_loud(user)
    code, stage, out = stage_run(tmp_path, {"1": user}, {"url": srv.url, "ca_file": str(cert[0]),
                                                         "grace_s": 0.5})
    assert code == 0, stage["samples"]
    d = out / "samples" / SUBSET / "1"
    audio = servers.output(d, len(user), SR)
    first = first_audible(audio, LEVEL) / SR
    assert abs(first - (end + 0.5)) <= SLACK, (first, end + 0.5)
    assert audio[int((end + 0.5 + SLACK) * SR):int((end + 1.4) * SR)].std() > 0.1   # the 1 s tone plays on

    rec = read_json(d / "runner.json")
    assert rec["runner"] == "freeze-omni" and rec["clock"] == "realtime" and rec["kind"] == "stream"
    # (a loaded machine can delay one frame past 20 ms: the core then marks the sample ineligible)
    assert rec["status"] == ("ineligible" if rec["stats"]["drift_max_ms"] > 20 else "ok"), rec.get("ineligible")
    assert rec["settings"]["runner_in_sr"] == 16000 and rec["settings"]["runner_out_sr"] == 24000
    assert rec["settings"]["system_prompt"] is None and rec["settings"]["frame_samples"] == 480
    assert rec["profile"]["name"] == "freeze-omni" and rec["profile"]["defaults"]["frame_ms"] == 30
    assert "d7336bd" in rec["profile"]["source"] and "3e17af4" in rec["profile"]["source"]
    stats = rec["stats"]
    n_frames = int(np.ceil((len(user) / SR + 0.5) / FRAME - 1e-9))
    assert stats["frames_sent"] == n_frames and stats["drift_p99_ms"] < 20.0
    assert stats["recv_chunks"] == 7 and stats["recv_audio_s"] == 1.0     # 1.0 s in 160 ms chunks
    assert stats["start_acks"] == 2

    events = read_jsonl(d / "events.jsonl")
    sends = [e for e in events if e["type"] == "send"]
    assert len(sends) == n_frames and [e["t"] for e in sends[:3]] == [0.03, 0.06, 0.09]
    recv = [e for e in events if e["type"] == "recv_audio"]
    assert recv[0]["placed_at"] == pytest.approx(recv[0]["t"], abs=1e-4)
    assert recv[1]["placed_at"] == pytest.approx(recv[0]["placed_at"] + 0.16, abs=1e-4)  # queued after it

    sessions = srv.rows("session", n=stats["tries"])   # a try that drifted past the limit was run again
    assert len(sessions) == stats["tries"]
    ses = sessions[-1]                                   # the kept try's
    assert ses["errors"] == [] and ses["frame_bytes"] == [960]          # 480 int16 samples per frame
    assert ses["order"] == ["recording-started", "audio", "recording-stopped"]  # no prompt_text (FDB's way)
    assert ses["frames"] == n_frames == len(ses["arrivals"])
    assert ses["speech_ends"] == [round(end * SR)]                      # the double heard the exact end
    # Pacing: both clocks are CLOCK_MONOTONIC. t0 comes after the server's second stop_tts, and
    # `clock_start` is logged right after t0, so neither bound can be met by a frame sent early.
    arrivals = np.asarray(ses["arrivals"])
    due = (np.arange(n_frames) + 1) * FRAME
    assert np.all(arrivals - ses["started_at"] >= due), np.min(arrivals - ses["started_at"] - due)
    (clock,) = [e for e in events if e["type"] == "clock_start"]
    assert np.all(arrivals - clock["wall"] >= due - 0.001)
    assert np.median(arrivals - clock["wall"] - due) < 0.010            # and not late either


def test_concurrent_sessions_against_one_server(tmp_path, server, cert):
    """concurrency 3 over 3 samples: three sessions at once, each its own, each reply in its place."""
    srv = server(reply_delay_s=0.5, tone_s=0.5)
    samples = {str(i): talk(("silence", 0.3 + 0.2 * i), ("speech", 0.5), ("silence", 1.3 - 0.2 * i))
               for i in range(3)}
    code, stage, out = stage_run(tmp_path, samples, {"url": srv.url, "ca_file": str(cert[0]), "grace_s": 0.2,
                                                     "concurrency": 3})
    assert code == 0, stage["samples"]
    # a session a loaded machine made drift past the limit was run again (drift_retries): one more session
    tries = sum(read_json(out / "samples" / SUBSET / sid / "runner.json")["stats"]["tries"] for sid in samples)
    sessions = srv.rows("session", n=tries)
    assert len({s["sid"] for s in sessions}) == tries and all(s["errors"] == [] for s in sessions)
    spans = [(s["arrivals"][0], s["arrivals"][-1]) for s in sorted(sessions, key=lambda s: s["arrivals"][0])[:3]]
    assert max(a for a, _ in spans) < min(b for _, b in spans)          # they ran at the same time
    # Each session's reply is due 0.2 s after the previous one's: three sessions on one shared loop of
    # a loaded 2-core machine may add scheduling delay to the single-session SLACK, so each reply must
    # land nearest its own due time and within half the spacing (0.1 s), never at another's.
    due = {sid: last_loud(user) + 0.5 for sid, user in samples.items()}
    for sid, user in samples.items():
        d = out / "samples" / SUBSET / sid
        audio = servers.output(d, len(user), SR)
        first = first_audible(audio, LEVEL) / SR
        assert min(due, key=lambda k: abs(first - due[k])) == sid and abs(first - due[sid]) < 0.1, (sid, first)
        rec = read_json(d / "runner.json")
        assert rec["stats"]["recv_chunks"] == 4 and rec["stats"]["drift_p99_ms"] < 20.0


def test_a_server_that_dies_mid_sample_fails_only_that_sample_and_a_rerun_completes_it(tmp_path, server, cert):
    srv = server(reply_delay_s=0.3, tone_s=0.3, die_after=20, die_how="disconnect", die_in_session=2)
    samples = {str(i): talk(("speech", 0.3), ("silence", 0.7)) for i in range(3)}
    args = {"url": srv.url, "ca_file": str(cert[0]), "grace_s": 0.1}
    code, stage, out = stage_run(tmp_path, samples, args)
    st = stage["samples"]
    assert code == 1 and [st[f"{SUBSET}/{i}"]["status"] for i in range(3)] == ["ok", "failed", "ok"]
    reason = st[f"{SUBSET}/1"]["reason"]
    assert "the server closed the connection" in reason and "before the input ended" in reason, reason
    assert "at 0.6 s" in reason and "\n" not in reason
    assert not (out / "samples" / SUBSET / "1").exists()

    code, stage, out = stage_run(tmp_path, None, args, root=tmp_path / "out-in")
    st = stage["samples"]
    assert code == 0 and all(s["status"] == "ok" for s in st.values())
    assert [st[f"{SUBSET}/{i}"].get("cached", False) for i in range(3)] == [True, False, True]
    assert sf.info(str(out / "samples" / SUBSET / "1" / "output.wav")).frames == len(samples["1"])
    # the one that died is written twice (when it died, when it closed); a try that drifted was run again
    tries = sum(read_json(out / "samples" / SUBSET / str(i) / "runner.json")["stats"]["tries"] for i in range(3))
    rows = srv.rows("session", n=tries + 2)
    assert len({r["sid"] for r in rows}) == tries + 1 and sum("died" in r for r in rows) == 1


# --- through the harness ---

def test_stop_tts_drops_the_unplayed_reply_and_output_after_the_input_is_cut(server, cert):
    srv = server(reply_delay_s=0.5)
    user = talk(("silence", 0.2), ("speech", 0.8), ("silence", 0.9), ("speech", 0.5), ("silence", 0.4))
    role = freeze_omni.SERVER_DEFAULT_ROLE
    out, session, log = run(FreezeOmniRunner(url=srv.url, ca_file=str(cert[0]), grace_s=0.6, system_prompt=role),
                            user)
    assert len(out) == len(user)

    barge = 1.9  # the user speaks again at 1.9 s, while the reply (due 1.5 s, 1 s long) plays
    (cut,) = [e for e in log.rows if e["type"] == "interrupt" and e["discarded_s"] > 0 and e["t"] < 2.8]
    assert cut["reason"] == "stop_tts" and barge <= cut["t"] <= barge + SLACK
    assert cut["discarded_s"] == pytest.approx(2.5 - cut["t"], abs=0.01)   # all of the tone after the cut
    assert out[int(1.55 * SR):int(barge * SR)].std() > 0.1              # the reply played until then
    assert not np.abs(out[int((cut["t"] + 0.002) * SR):]).max() > LEVEL   # silent from the cut on
    # The second reply is due at 2.4 + 0.5 = 2.9 s, after the input (2.8 s): sent in the grace window, cut.
    assert session.stats["placed_after_input_s"] > 0
    drops = [e["discarded_s"] for e in log.of_type("interrupt")]
    assert session.stats["stop_tts"] == len(drops) and session.stats["discarded_s"] == pytest.approx(sum(drops))
    (ses,) = srv.rows("session")
    assert ses["interrupts"] == [round(barge * SR)] and ses["errors"] == []
    assert ses["order"] == ["prompt_text", "recording-started", "audio", "recording-stopped"]
    assert ses["prompt"] == role


def test_audio_and_the_stop_tts_right_after_it_are_handled_in_that_order(server, cert):
    """The double sends 3 chunks (0.48 s) and a stop_tts back to back: the stop_tts drops them all.
    Handled out of order, the stop_tts would find nothing to drop and the chunks would play."""
    srv = server(burst_at=10, burst=3)
    out, session, log = run(FreezeOmniRunner(url=srv.url, ca_file=str(cert[0]), grace_s=0.0),
                            zeros(1.2, SR))
    recv = log.of_type("recv_audio")
    (cut,) = [e for e in log.of_type("interrupt") if e["t"] < 1.2]
    assert len(recv) == 3 and all(e["t"] <= cut["t"] for e in recv)
    assert cut["discarded_s"] > 0.47
    assert np.count_nonzero(np.abs(out) > LEVEL) < 0.005 * SR    # at most what played before the cut
    assert not np.abs(out[int((cut["t"] + 0.002) * SR):]).max() > LEVEL


def test_a_vita_style_server_one_reset_ack_and_response_text(server, cert):
    """VITA-1.5's web_demo/server.py answers recording-started with one stop_tts and sends the
    reply's text as `response_text` {"text": ...}: no second wait of a full second, text logged."""
    srv = server(acks=1, reply_text="Hello there.", reply_delay_s=0.3, tone_s=0.3)
    t = time.monotonic()
    out, session, log = run(FreezeOmniRunner(url=srv.url, ca_file=str(cert[0]), grace_s=0.0),
                            talk(("speech", 0.4), ("silence", 0.9)))
    assert time.monotonic() - t < 1.3 + 0.3 + 1.0 + 1.0     # input + the short second wait + the end + setup
    assert session.stats["start_acks"] == 1 and not log.of_type("error")
    (text,) = log.of_type("text")
    assert text["event"] == "response_text" and text["text"] == "Hello there." and 0.7 < text["t"] < 0.8
    assert session.stats["recv_chunks"] == 2


def test_too_many_users_fails_the_sample_with_that_reason(tmp_path, server, cert):
    """Through the stage's command line, `duplex-runner run`."""
    srv = server(too_many_users=True)
    root = make_dataset(tmp_path / "in", {(SUBSET, "1"): (talk(("speech", 0.3)), SR)})
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"runner": "freeze-omni", "runner_args": {"url": srv.url, "ca_file": str(cert[0])}}))
    r = subprocess.run([command("duplex-runner"), "run", "--input", str(root), "--output", str(tmp_path / "out"),
                        "--config", str(config)], capture_output=True, text=True, timeout=120)
    s = read_json(tmp_path / "out" / "stage.json")["samples"][f"{SUBSET}/1"]
    assert r.returncode == 1 and s["status"] == "failed", r.stderr
    assert "too_many_users" in s["reason"] and "\n" not in s["reason"]
    assert "before the audio stream started" in s["reason"]


@pytest.mark.parametrize("how, closed", [("exit", "transport error"), ("disconnect", "server disconnect")])
def test_a_server_that_dies_mid_sample_fails_it(server, cert, how, closed):
    srv = server(die_after=40, die_how=how)        # 40 frames of 30 ms: 1.2 s
    with pytest.raises(SessionFailed) as exc:
        run(FreezeOmniRunner(url=srv.url, ca_file=str(cert[0]), grace_s=0.2), talk(("speech", 0.5), ("silence", 1.5)))
    msg = str(exc.value)
    assert "the server closed the connection" in msg and closed in msg, msg
    assert "(at 1.2 s, before the input ended)" in msg and "\n" not in msg


def test_a_server_that_closes_after_the_input_ended_keeps_the_sample(server, cert):
    srv = server(die_after=25, die_how="exit")     # 0.75 s: in the grace window after 0.5 s of input
    user = talk(("speech", 0.5))
    out, session, log = run(FreezeOmniRunner(url=srv.url, ca_file=str(cert[0]), grace_s=1.0), user)
    assert len(out) == len(user)
    closed = [e for e in log.of_type("error") if "closed the connection" in e["reason"]]
    assert len(closed) == 1 and "after the input ended; output kept" in closed[0]["reason"], log.of_type("error")
    assert 25 <= session.stats["frames_sent"] <= 27


def test_a_silent_server_is_bounded_with_a_clear_reason(server, cert):
    """A server that answers nothing: the prompt wait fails within connect_timeout_s; without a
    prompt the session streams on (the reset acknowledgements are awaited 1 s, then logged as
    missing) and ends on time with silence; a server that never answers the handshake fails
    within connect_timeout_s."""
    srv = server(mute=True)
    t = time.monotonic()
    with pytest.raises(SessionFailed, match=r"no prompt_success within 0.5 s of prompt_text \(the server is silent"):
        run(FreezeOmniRunner(url=srv.url, ca_file=str(cert[0]), connect_timeout_s=0.5, system_prompt="Hi."),
            talk(("speech", 0.2)))
    assert time.monotonic() - t < 2.0

    t = time.monotonic()
    user = talk(("speech", 0.5))
    out, session, log = run(FreezeOmniRunner(url=srv.url, ca_file=str(cert[0]), grace_s=0.0), user)
    assert time.monotonic() - t < 0.5 + 2 * 1.0 + 1.5          # input + the two 1 s waits + setup
    assert session.stats["start_acks"] == 0 and not np.abs(out).any()
    assert any("no stop_tts answered recording-started within 1 s" in e["reason"] for e in log.of_type("error"))

    stuck = server(stall=True)
    t = time.monotonic()
    with pytest.raises(SessionFailed, match=r"cannot connect to https://127.0.0.1:\d+: no answer within 0.5 s"):
        run(FreezeOmniRunner(url=stuck.url, ca_file=str(cert[0]), connect_timeout_s=0.5), talk(("speech", 0.2)))
    assert time.monotonic() - t < 2.0


def test_a_message_over_max_message_bytes_fails_the_sample_in_one_line(server, cert):
    """The double's reply chunks are 160 ms of 24 kHz int16 (7,680 bytes): over a 4,096-byte limit the
    connection closes and the sample fails with one line naming the limit."""
    srv = server(reply_delay_s=0.2)
    with pytest.raises(SessionFailed) as exc:
        run(FreezeOmniRunner(url=srv.url, ca_file=str(cert[0]), grace_s=0.0, max_message_bytes=4096),
            talk(("speech", 0.3), ("silence", 1.5)))
    msg = str(exc.value)
    assert "a server message was larger than max_message_bytes (4096 bytes)" in msg and "\n" not in msg, msg
    assert msg.startswith("runner 'freeze-omni': ") and "before the input ended" in msg


# --- TLS, credentials, settings ---

def test_the_self_signed_certificate_is_refused_unless_trusted(server, cert, monkeypatch):
    srv = server()
    user = talk(("speech", 0.2))
    monkeypatch.delenv("MODEL_INSECURE", raising=False)
    monkeypatch.delenv("MODEL_CA", raising=False)
    with pytest.raises(SessionFailed) as exc:
        run(FreezeOmniRunner(url=srv.url, grace_s=0), user)
    msg = str(exc.value)
    assert "TLS certificate verification failed" in msg and "self-signed" in msg and "ca_file" in msg
    assert "MODEL_INSECURE=1" in msg and "\n" not in msg
    for args in ({"ca_file": str(cert[0])}, {"insecure": True}):
        out, _, _ = run(FreezeOmniRunner(url=srv.url, grace_s=0, **args), user)
        assert len(out) == len(user)
    monkeypatch.setenv("MODEL_URL", srv.url)
    monkeypatch.setenv("MODEL_CA", str(cert[0]))
    r = FreezeOmniRunner(grace_s=0)
    assert r.settings()["url"] == srv.url and r.settings()["ca_file"] == str(cert[0])
    run(r, user)
    monkeypatch.delenv("MODEL_CA")
    monkeypatch.setenv("MODEL_INSECURE", "1")
    assert FreezeOmniRunner().insecure is True


def test_a_refused_connection_says_so(cert):
    with socket.socket() as s:       # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(SessionFailed, match=r"connection refused \(is the server running on that port\?\)"):
        run(FreezeOmniRunner(url=f"https://127.0.0.1:{port}", ca_file=str(cert[0])), talk(("speech", 0.1)))


def test_basic_auth_from_the_url_and_the_password_stays_out_of_the_records(tmp_path, server, cert, monkeypatch):
    password = "s3cr3t-Pa55"
    srv = server(basic_auth=f"alice:{password}")
    user = talk(("speech", 0.3), ("silence", 0.4))
    monkeypatch.setenv("MODEL_URL", f"https://alice:{password}@127.0.0.1:{srv.port}")
    code, stage, out = stage_run(tmp_path, {"1": user}, {"ca_file": str(cert[0]), "grace_s": 0.1})
    assert code == 0, stage["samples"]
    d = out / "samples" / SUBSET / "1"
    for name in ("events.jsonl", "runner.json"):
        text = (d / name).read_text()
        assert password not in text and "alice" not in text
    assert read_json(d / "runner.json")["settings"]["url"] == srv.url
    assert read_json(d / "runner.json")["settings"]["auth_scheme"] == "basic"
    assert password not in (out / "stage.json").read_text()

    monkeypatch.setenv("MODEL_URL", f"https://alice:wrong-{password}@127.0.0.1:{srv.port}")
    with pytest.raises(SessionFailed) as exc:
        run(FreezeOmniRunner(ca_file=str(cert[0]), grace_s=0), user)
    msg = str(exc.value)
    assert "HTTP 401" in msg and "check the user:password in the URL" in msg and password not in msg
    assert len(srv.rows("auth_rejected")) == 1


def test_settings_errors_are_one_line(monkeypatch, tmp_path):
    monkeypatch.delenv("MODEL_URL", raising=False)
    with pytest.raises(DuplexEvalError, match="MODEL_URL"):
        FreezeOmniRunner()
    for args, msg in [({"url": "ftp://host:1"}, "https://host:port"),
                      ({"url": "https://h:1", "frame_ms": 0.01}, "frame_ms"),
                      ({"url": "https://h:1", "ca_file": str(tmp_path / "none.pem")}, "is not a file"),
                      ({"url": "https://h:1", "grace_s": -1}, "grace_s"),
                      ({"url": "https://h:1", "connect_timeout_s": 0}, "connect_timeout_s"),
                      ({"url": "https://h:1", "system_prompt": 3}, "system_prompt"),
                      ({"url": "https://h:1", "profile": "nope"}, r"unknown profile 'nope' \(known: freeze-omni\)"),
                      ({"url": "https://h:1", "deadline_s": 5}, "unknown runner_args deadline_s"),
                      ({"url": "https://h:1", "nope": 1}, "unknown runner_args nope")]:
        with pytest.raises(DuplexEvalError, match=msg) as exc:
            FreezeOmniRunner(**args)
        assert "\n" not in str(exc.value) and "freeze-omni" in str(exc.value)
    monkeypatch.setenv("MODEL_INSECURE", "maybe")
    with pytest.raises(DuplexEvalError, match="MODEL_INSECURE"):
        FreezeOmniRunner(url="https://h:1")


def test_stream_contract_settings_and_registration():
    r = FreezeOmniRunner(url="https://h:1", frame_ms=20, grace_s=1.5, connect_timeout_s=3, deadline_margin_s=4)
    assert RUNNERS.load("freeze-omni") is FreezeOmniRunner
    assert (r.clock, r.in_sr, r.out_sr, r.frame_ms, r.grace_s) == ("realtime", 16000, 24000, 20, 1.5)
    assert r.open_timeout_s == pytest.approx(3 + 1.3 + 1) and r.deadline(10.0) == pytest.approx(10 + 1.5 + 5.3 + 4)
    assert FreezeOmniRunner(url="https://h:1", system_prompt="x", connect_timeout_s=3).open_timeout_s == \
        pytest.approx(3 + 3 + 1.3 + 1)
    assert r.profile["name"] == "freeze-omni" and len(r.profile["sha256"]) == 64
    assert r.settings()["client"]["python-socketio"] == "5.18.1"


def test_endpoint_splits_credentials_from_the_url():
    e = freeze_omni.endpoint("https://bob:p%40ss@example.org:8081")
    assert e.url == "https://example.org:8081" and e.secret == "p@ss"
    assert e.authorization == "Basic " + base64.b64encode(b"bob:p@ss").decode()
    assert freeze_omni.endpoint("https://[::1]:8081/").url == "https://[::1]:8081/"
    assert freeze_omni.endpoint("https://[::1]:8081/").socketio_path == "socket.io"
    assert freeze_omni.endpoint("https://proxy/fo/").socketio_path == "fo/socket.io"  # a proxy's prefix
    assert freeze_omni.endpoint("http://h:1").authorization is None


def test_audio_payload_is_the_json_string_the_server_parses_and_clips():
    x = np.array([1.0, -1.0, 1.5, -1.5, 0.5, 0.0], dtype=np.float32)
    obj = json.loads(freeze_omni.audio_payload(x))
    assert set(obj) == {"audio", "sample_rate"} and obj["sample_rate"] == 16000
    pcm = np.frombuffer(bytes(obj["audio"]), dtype="<i2")
    assert pcm.tolist() == [32767, -32767, 32767, -32768, 16384, 0]   # clipped, never wrapped
    assert freeze_omni.from_pcm16(np.array([16384, -32768], "<i2").tobytes()).tolist() == [0.5, -1.0]
    # the very text json.dumps writes (the payload is built from a table, off json's slower path)
    y = np.random.default_rng(0).uniform(-1.2, 1.2, 480).astype(np.float32)
    assert freeze_omni.audio_payload(y) == json.dumps({"audio": list(freeze_omni.to_pcm16(y)), "sample_rate": 16000},
                                                      separators=(",", ":"))
