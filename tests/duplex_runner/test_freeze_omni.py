"""The `freeze-omni` runner against a protocol test double of the Freeze-Omni server.

The double (freeze_omni_server.py, not the model) runs in its own process over HTTPS with a
self-signed certificate made here with the openssl CLI. Its reply is a tone that becomes due
`reply_delay_s` after the user's last loud sample E, so where the runner must place it is known:
at E + reply_delay_s, plus at most one frame (a frame is sent when it is complete) and the
loopback round trip. The runner is realtime: each session takes its input's length plus grace_s.
"""

from __future__ import annotations

import contextlib
import json
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.jsonio import read_json, read_jsonl
from duplexeval_runner.events import EventLog
from duplexeval_runner.harness import render
from duplexeval_runner.runners import freeze_omni
from duplexeval_runner.runners.freeze_omni import FreezeOmniRunner
from duplexeval_runner.stage import make_stage

from .conftest import first_audible, make_dataset, zeros

pytest.importorskip("socketio")

SERVER = Path(__file__).with_name("freeze_omni_server.py")
SR = 16000
SUBSET = "synthetic_turn_taking"
LEVEL = 0.01     # the reply tone is 0.3; resampling ringing stays far below this
SLACK = 0.060    # one 30 ms frame + loopback round trip + pacing drift


@pytest.fixture(scope="module")
def cert(tmp_path_factory):
    if shutil.which("openssl") is None:
        pytest.skip("the openssl CLI makes the test certificate")
    d = tmp_path_factory.mktemp("tls")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-keyout", str(d / "key.pem"), "-out", str(d / "cert.pem"), "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                   check=True, capture_output=True)
    return d / "cert.pem", d / "key.pem"


class Double:
    def __init__(self, port: int, record: Path, proc: subprocess.Popen):
        self.port, self.record, self.proc = port, record, proc
        self.url = f"https://127.0.0.1:{port}"

    def rows(self, event: str, n: int = 1, timeout: float = 5.0) -> list[dict]:
        """The record's `event` lines, waiting until there are n (the server writes them last)."""
        end = time.monotonic() + timeout
        while True:
            rows = [r for r in read_jsonl(self.record) if r["event"] == event] if self.record.exists() else []
            if len(rows) >= n or time.monotonic() > end:
                return rows
            time.sleep(0.05)


@pytest.fixture
def server(cert, tmp_path):
    """server(**script) starts a double in its own process; all are stopped after the test."""
    procs = []

    def start(**script) -> Double:
        record = tmp_path / f"server-{len(procs)}.jsonl"
        err = open(tmp_path / f"server-{len(procs)}.err", "w")
        proc = subprocess.Popen([sys.executable, str(SERVER), "--cert", str(cert[0]), "--key", str(cert[1]),
                                 "--record", str(record), "--script", json.dumps(script)],
                                stdout=subprocess.PIPE, stderr=err, text=True)
        procs.append(proc)
        ready, _, _ = select.select([proc.stdout], [], [], 30)
        line = proc.stdout.readline() if ready else ""
        assert line.startswith("PORT "), f"test server did not start: {(tmp_path / err.name).read_text()}"
        return Double(int(line.split()[1]), record, proc)

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(5)


def voice(seconds: float, sr: int = SR) -> np.ndarray:
    """A stand-in for speech: the double only measures loudness (exact zeros are silence)."""
    t = np.arange(int(round(seconds * sr))) / sr
    return (0.3 * np.sin(2 * np.pi * 300 * t + 0.5)).astype(np.float32)


def talk(*parts: tuple[str, float], sr: int = SR) -> np.ndarray:
    return np.concatenate([voice(s, sr) if kind == "speech" else zeros(s, sr) for kind, s in parts])


def stage_run(tmp_path, samples: dict, runner_args: dict, name: str = "out"):
    root = make_dataset(tmp_path / f"{name}-in", {(SUBSET, sid): (x, SR) for sid, x in samples.items()})
    out = tmp_path / name
    config = {"runner": "freeze-omni", "runner_args": runner_args, "seed": 0}
    code = make_stage(config).run([root], out, config)
    return code, read_json(out / "stage.json"), out


def last_loud(x: np.ndarray, level: float = 1e-3) -> float:
    return (np.flatnonzero(np.abs(x) > level)[-1] + 1) / SR


# --- end to end, through the stage ---

def test_reply_lands_at_speech_end_plus_delay_and_pacing_holds(tmp_path, server, cert):
    """A 5 s sample: output exactly the input's length, the reply at E + 0.5 s, drift p99 < 20 ms."""
    srv = server(reply_delay_s=0.5)
    user = talk(("silence", 0.5), ("speech", 1.2), ("silence", 3.3))
    end = last_loud(user)
    code, stage, out = stage_run(tmp_path, {"1": user}, {"url": srv.url, "ca_file": str(cert[0]),
                                                         "grace_s": 0.5})
    assert code == 0, stage["samples"]
    d = out / "samples" / SUBSET / "1"
    info = sf.info(str(d / "output.wav"))
    assert (info.frames, info.samplerate) == (len(user), SR)
    audio, _ = sf.read(str(d / "output.wav"), dtype="float32")
    first = first_audible(audio, LEVEL) / SR
    assert abs(first - (end + 0.5)) <= SLACK, (first, end + 0.5)
    assert audio[int((end + 0.5 + SLACK) * SR):int((end + 1.4) * SR)].std() > 0.1   # the 1 s tone plays on

    rec = read_json(d / "runner.json")
    assert rec["runner"] == "freeze-omni" and rec["clock"] == "realtime"
    assert rec["settings"]["runner_in_sr"] == 16000 and rec["settings"]["runner_out_sr"] == 24000
    stats = rec["stats"]
    assert stats["drift_p99_ms"] < 20.0 and stats["drift_exceeded_20ms"] is (stats["drift_max_ms"] > 20.0)
    assert stats["frames_sent"] == int(np.ceil((len(user) / SR + 0.5) / 0.03))
    assert stats["recv_chunks"] == 7 and stats["recv_audio_s"] == 1.0     # 1.0 s in 160 ms chunks

    events = read_jsonl(d / "events.jsonl")
    sends = [e for e in events if e["type"] == "send"]
    assert len(sends) == stats["frames_sent"] and all("drift_ms" in e for e in sends)
    assert [e["t"] for e in sends[:3]] == [0.03, 0.06, 0.09]             # frame k goes out at its end
    recv = [e for e in events if e["type"] == "recv_audio"]
    assert recv[0]["placed_at"] == pytest.approx(recv[0]["t"], abs=1e-4)

    (ses,) = srv.rows("session")
    assert ses["errors"] == [] and ses["frame_bytes"] == [960]          # 480 int16 samples per frame
    assert ses["order"] == ["prompt_text", "recording-started", "audio", "recording-stopped"]
    assert ses["prompt"] == freeze_omni.DEFAULT_SYSTEM_PROMPT
    assert ses["frames"] == stats["frames_sent"]
    assert ses["speech_ends"] == [round(end * SR)]                      # the double heard the exact end


def test_stop_tts_drops_the_unplayed_reply_and_output_after_the_input_is_cut(tmp_path, server, cert):
    srv = server(reply_delay_s=0.5)
    user = talk(("silence", 0.2), ("speech", 0.8), ("silence", 0.9), ("speech", 0.5), ("silence", 0.4))
    runner = FreezeOmniRunner(url=srv.url, ca_file=str(cert[0]), grace_s=0.6)
    runner.setup()
    log = EventLog()
    out = render(runner, user, SR, log)
    assert len(out) == len(user)

    barge = 1.9  # the user speaks again at 1.9 s, while the reply (due 1.5 s, 1 s long) plays
    (cut,) = [e for e in log.rows if e["type"] == "interrupt" and e["discarded_s"] > 0]
    assert barge <= cut["t"] <= barge + SLACK
    assert cut["discarded_s"] == pytest.approx(2.5 - cut["t"], abs=0.01)   # all of the tone after the cut
    assert out[int(1.55 * SR):int(barge * SR)].std() > 0.1              # the reply played until then
    assert not np.abs(out[int((cut["t"] + 0.002) * SR):]).max() > LEVEL   # silent from the cut on
    # The second reply is due at 2.4 + 0.5 = 2.9 s, after the input (2.8 s): sent in the grace window, cut.
    assert log.stats["placed_after_input_s"] > 0
    assert log.stats["stop_tts"] >= 1
    (ses,) = srv.rows("session")
    assert ses["interrupts"] == [round(barge * SR)] and ses["errors"] == []


def test_too_many_users_fails_the_sample_with_that_reason(tmp_path, server, cert):
    srv = server(too_many_users=True)
    code, stage, _ = stage_run(tmp_path, {"1": talk(("speech", 0.3))}, {"url": srv.url, "ca_file": str(cert[0])})
    s = stage["samples"][f"{SUBSET}/1"]
    assert code == 1 and s["status"] == "failed"
    assert "too_many_users" in s["reason"] and "\n" not in s["reason"]
    assert "before the audio stream started" in s["reason"]


@pytest.mark.parametrize("how, closed", [("exit", "transport error"), ("disconnect", "server disconnect")])
def test_a_server_that_dies_mid_sample_fails_it(tmp_path, server, cert, how, closed):
    srv = server(die_after=40, die_how=how)        # 40 frames of 30 ms: 1.2 s
    code, stage, out = stage_run(tmp_path, {"1": talk(("speech", 0.5), ("silence", 1.5))},
                                 {"url": srv.url, "ca_file": str(cert[0]), "grace_s": 0.2})
    s = stage["samples"][f"{SUBSET}/1"]
    assert code == 1 and s["status"] == "failed"
    assert "closed the connection at 1.2 s" in s["reason"] and closed in s["reason"], s["reason"]
    assert not (out / "samples" / SUBSET / "1").exists()


def test_a_server_that_closes_after_the_input_ended_keeps_the_sample(server, cert):
    srv = server(die_after=25, die_how="exit")     # 0.75 s: in the grace window after 0.5 s of input
    log = EventLog()
    user = talk(("speech", 0.5))
    out = FreezeOmniRunner(url=srv.url, ca_file=str(cert[0]), grace_s=1.0).run(user, SR, log=log)
    assert len(out) == round(len(user) * 24000 / SR)
    (err,) = log.of_type("error")
    assert "closed the connection" in err["reason"] and "after the input ended" in err["reason"]
    assert log.stats["frames_sent"] == 25


def test_a_stuck_server_fails_the_sample_within_the_timeout(server, cert):
    srv = server(mute_prompt=True)
    t = time.monotonic()
    with pytest.raises(DuplexEvalError, match="no prompt_success within 0.5 s"):
        FreezeOmniRunner(url=srv.url, ca_file=str(cert[0]), connect_timeout_s=0.5).run(
            talk(("speech", 0.2)), SR, log=EventLog())
    assert time.monotonic() - t < 3.0


# --- TLS, credentials, settings ---

def test_the_self_signed_certificate_is_refused_unless_trusted(tmp_path, server, cert, monkeypatch):
    srv = server()
    user = talk(("speech", 0.2))
    monkeypatch.delenv("MODEL_INSECURE", raising=False)
    monkeypatch.delenv("MODEL_CA", raising=False)
    with pytest.raises(DuplexEvalError) as exc:
        FreezeOmniRunner(url=srv.url, grace_s=0).run(user, SR, log=EventLog())
    msg = str(exc.value)
    assert "TLS certificate verification failed" in msg and "self-signed" in msg and "ca_file" in msg
    assert "\n" not in msg
    for args in ({"ca_file": str(cert[0])}, {"insecure": True}):
        out = FreezeOmniRunner(url=srv.url, grace_s=0, **args).run(user, SR, log=EventLog())
        assert len(out) == round(len(user) * 24000 / SR)
    monkeypatch.setenv("MODEL_URL", srv.url)
    monkeypatch.setenv("MODEL_CA", str(cert[0]))
    r = FreezeOmniRunner(grace_s=0)
    assert r.settings()["url"] == srv.url and r.settings()["ca_file"] == str(cert[0])
    r.run(user, SR, log=EventLog())
    monkeypatch.delenv("MODEL_CA")
    monkeypatch.setenv("MODEL_INSECURE", "1")
    assert FreezeOmniRunner().insecure is True


def test_basic_auth_from_the_url_and_the_password_stays_out_of_the_records(tmp_path, server, cert, monkeypatch):
    password = "s3cr3t-Pa55"
    srv = server(basic_auth=f"alice:{password}")
    user = talk(("speech", 0.3), ("silence", 0.7))
    monkeypatch.setenv("MODEL_URL", f"https://alice:{password}@127.0.0.1:{srv.port}")
    code, stage, out = stage_run(tmp_path, {"1": user}, {"ca_file": str(cert[0]), "grace_s": 0.2})
    assert code == 0, stage["samples"]
    d = out / "samples" / SUBSET / "1"
    for name in ("events.jsonl", "runner.json"):
        text = (d / name).read_text()
        assert password not in text and "alice" not in text
    assert read_json(d / "runner.json")["settings"]["url"] == srv.url
    assert read_json(d / "runner.json")["settings"]["auth"] == "basic"
    assert password not in (out / "stage.json").read_text()

    monkeypatch.setenv("MODEL_URL", f"https://alice:wrong-{password}@127.0.0.1:{srv.port}")
    with pytest.raises(DuplexEvalError) as exc:
        FreezeOmniRunner(ca_file=str(cert[0]), grace_s=0).run(user, SR, log=EventLog())
    assert "HTTP 401" in str(exc.value) and password not in str(exc.value)
    assert len(srv.rows("auth_rejected")) == 1


def test_settings_errors_are_one_line(monkeypatch, tmp_path):
    monkeypatch.delenv("MODEL_URL", raising=False)
    with pytest.raises(DuplexEvalError, match="MODEL_URL"):
        FreezeOmniRunner()
    for args, msg in [({"url": "ftp://host:1"}, "https://host:port"), ({"url": "https://h:1", "frame_ms": 0.01},
                      "frame_ms"), ({"url": "https://h:1", "ca_file": str(tmp_path / "none.pem")}, "is not a file"),
                      ({"url": "https://h:1", "nope": 1}, "unknown runner_args nope")]:
        with pytest.raises(DuplexEvalError, match=msg):
            FreezeOmniRunner(**args)
    monkeypatch.setenv("MODEL_INSECURE", "maybe")
    with pytest.raises(DuplexEvalError, match="MODEL_INSECURE"):
        FreezeOmniRunner(url="https://h:1")


def test_endpoint_splits_credentials_from_the_url():
    e = freeze_omni.endpoint("https://bob:p%40ss@example.org:8081")
    assert e.url == "https://example.org:8081" and e.secret == "p@ss"
    import base64
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
