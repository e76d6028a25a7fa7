"""The `nova-sonic` runner, with the real aws-sdk-bedrock-runtime (and its CRT HTTP/2 transport) as its
client, against a protocol test double of Bedrock's bidirectional stream (nova_sonic_server.py: not
the model, not the service, no model inside).

The SDK needs Python >= 3.12, so the runner and the double run in .venvs/runner-nova-sonic (made by
scripts/setup-runner-venv.sh nova-sonic; `make setup` calls it): the stage is that environment's
`duplex-runner run`, the double that environment's python, each in a subprocess; those tests skip,
saying so, when it does not exist. The double speaks HTTP/2 over TLS with a self-signed certificate
made here (the CRT client negotiates HTTP/2 only over TLS), and recomputes the SigV4 signature of
the request and of every event with the planted credentials, so a run that reaches it signed with
them. Its reply is a tone that becomes due once the input it received reaches the user's last loud
sample E + reply_delay_s, so where the runner must place it is known: at E + reply_delay_s, plus at
most one 32 ms frame and the loopback. Sessions are realtime: each takes its input plus grace_s.

The settings checks (credentials, region, endpoint) need no SDK and run in the shared environment.
"""

from __future__ import annotations

import functools
import json
import os
import select
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.jsonio import read_json, read_jsonl

from . import servers
from .conftest import first_audible, make_dataset
from .servers import Double, cert  # noqa: F401  (cert: a fixture)

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "components" / "runners" / "nova-sonic"))  # its modules import no SDK
from duplexeval_runner_nova_sonic import runner as ns  # noqa: E402

VENV = ROOT / ".venvs" / "runner-nova-sonic"
PY = VENV / "bin" / "python"
CLI = VENV / "bin" / "duplex-runner"
SERVER = Path(__file__).with_name("nova_sonic_server.py")
SR = 16000
SUBSET = "synthetic_turn_taking"
FRAME = 512 / 16000    # the runner's 32 ms frame
LEVEL = 0.01           # the reply tone is 0.3
SLACK = FRAME + 0.08   # one frame + loopback round trip + pacing jitter on a busy machine
# planted, unique; the double verifies the signatures with them; no file or log may ever contain them
KEY_ID = "AKIDNOVASONICTEST01"
SECRET = "planted-aws-secret-9Xq3Lm7Vb2Nw5Kc8"
TOKEN = "planted-aws-session-token-4Hd6Pz1Rt8Ys"
# pacing is not what these tests are about (tests/duplex_runner/test_clocks.py): a loaded 2-core
# machine may delay one send past 20 ms, and a retry would double a test's time
PACE = {"drift_limit_ms": 1000, "drift_retries": 0}
talk = functools.partial(servers.talk, sr=SR)

needs_venv = pytest.mark.own_env("runner-nova-sonic", note="it needs python3.12")


@pytest.fixture(autouse=True)
def env(monkeypatch):
    """The planted credentials and a region; no endpoint settings from the outer environment."""
    for var in ("MODEL_URL", "MODEL_CA", "MODEL_INSECURE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("AWS_SESSION_TOKEN", TOKEN)
    monkeypatch.setenv("AWS_REGION", "eu-north-1")
    return monkeypatch


@pytest.fixture
def server(cert, tmp_path):
    """server(**script) starts a double (the nova-sonic environment's python); all stopped after the test."""
    procs: list[subprocess.Popen] = []

    def start(**script) -> Double:
        i = len(procs)
        record, err = tmp_path / f"server-{i}.jsonl", tmp_path / f"server-{i}.err"
        env = {**os.environ, "NOVA_SONIC_DOUBLE_KEY_ID": KEY_ID, "NOVA_SONIC_DOUBLE_SECRET": SECRET,
               "NOVA_SONIC_DOUBLE_TOKEN": TOKEN}
        with open(err, "w") as stderr:
            proc = subprocess.Popen([str(PY), str(SERVER), "--record", str(record), "--cert", str(cert[0]),
                                     "--key", str(cert[1]), "--script", json.dumps(script)],
                                    stdout=subprocess.PIPE, stderr=stderr, text=True, env=env)
        procs.append(proc)
        ready, _, _ = select.select([proc.stdout], [], [], servers.START_TIMEOUT_S)
        line = proc.stdout.readline() if ready else ""
        assert line.startswith("PORT "), f"test server did not start: {err.read_text()}"
        port = int(line.split()[1])
        return Double(port, f"https://127.0.0.1:{port}", record, proc)

    yield start
    for proc in procs:
        proc.terminate()
        try:
            proc.wait(servers.STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
        proc.stdout.close()


def stage_run(tmp_path: Path, samples: dict, runner_args: dict, name: str = "out") -> tuple[int, dict, Path, str]:
    """The nova-sonic environment's `duplex-runner run` on these samples: (exit code, stage.json, output
    folder, stdout + stderr)."""
    root = tmp_path / f"{name}-in"
    make_dataset(root, {(SUBSET, sid): (x, SR) for sid, x in samples.items()})
    out = tmp_path / name
    config = tmp_path / f"{name}.json"
    config.write_text(json.dumps({"runner": "nova-sonic", "runner_args": {**PACE, **runner_args}, "seed": 0}))
    proc = subprocess.run([str(CLI), "run", "--config", str(config), "--input", str(root), "--output", str(out)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    return proc.returncode, read_json(out / "stage.json"), out, proc.stdout + proc.stderr


def tls(srv: Double, cert, **extra) -> dict:  # noqa: F811
    return {"url": srv.url, "ca_file": str(cert[0]), "grace_s": 0.3, **extra}


def audible_from(x: np.ndarray, t: float) -> float:
    i = first_audible(x[int(round(t * SR)):], LEVEL)
    return -1.0 if i < 0 else t + i / SR


# --- through the stage, against the double --------------------------------------------------------

@needs_venv
@pytest.mark.serial
def test_reply_at_arrival_barge_in_and_no_secret_in_any_file(tmp_path, server, cert):  # noqa: F811
    """Two samples at once: a reply placed at E + 0.5 s within a frame; a user cutting into the next
    reply drops its unplayed rest (and the next frame goes into a new audio content, FDB's way);
    FDB's prompt and settings on the wire; the request and every event signed with the planted
    credentials, which no file of the run folder and no log line holds."""
    srv = server(reply_delay_s=0.5, tone_s=1.0, min_silence_s=0.3, speed=4.0)
    reply = talk(("silence", 0.5), ("speech", 1.0), ("silence", 2.0))                       # E = 1.5
    barge = talk(("silence", 0.5), ("speech", 0.5), ("silence", 1.0), ("speech", 0.5), ("silence", 1.0))
    code, stage, out, log = stage_run(tmp_path, {"reply": reply, "barge": barge},
                                      tls(srv, cert, concurrency=2))
    assert code == 0, (stage["samples"], log[-2000:])

    d = out / "samples" / SUBSET / "reply"
    audio = servers.output(d, len(reply), SR)
    first = first_audible(audio, LEVEL) / SR
    assert 2.0 <= first + 0.002 and first - 2.0 <= SLACK, first
    assert audio[int((first + 0.01) * SR):int((first + 0.95) * SR)].std() > 0.1   # the 1 s tone plays on
    assert np.abs(audio[int((first + 1.05) * SR):]).max() < LEVEL                 # and ends
    rec = read_json(d / "runner.json")
    assert (rec["runner"], rec["clock"], rec["kind"]) == ("nova-sonic", "realtime", "stream")
    s = rec["settings"]
    assert (s["runner_in_sr"], s["runner_out_sr"], s["frame_samples"]) == (16000, 24000, 512)
    assert s["url"] == srv.url and s["region"] == "eu-north-1" and s["region_from"] == "AWS_REGION"
    assert s["client"]["aws-sdk-bedrock-runtime"] == "0.12.0" and s["client"]["awscrt"] == "0.32.2"
    assert s["credentials_env"] == ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"]
    assert rec["profile"]["name"] == "nova-sonic" and "Full-Duplex-Bench @ d7336bd" in rec["profile"]["source"]
    assert rec["models"]["nova-sonic"] == {"model_id": "amazon.nova-sonic-v1:0", "region": "eu-north-1",
                                           "endpoint": srv.url}
    st = rec["stats"]
    assert st["recv_audio_s"] == 1.0 and st["recv_chunks"] == 25 and st["interrupted"] == 0
    assert st["total_tokens"] == 35 and st["completions"] == 1
    recv = [e for e in read_jsonl(d / "events.jsonl") if e["type"] == "recv_audio"]
    assert recv[0]["placed_at"] == pytest.approx(recv[0]["t"], abs=1e-4)             # placed at arrival
    assert recv[1]["placed_at"] == pytest.approx(recv[0]["placed_at"] + 0.04, abs=1e-4)  # then after it
    assert recv[1]["t"] < recv[1]["placed_at"]                                    # arrived faster than played

    d = out / "samples" / SUBSET / "barge"
    audio = servers.output(d, len(barge), SR)
    first = first_audible(audio, LEVEL) / SR
    assert 1.5 <= first + 0.002 and first - 1.5 <= SLACK, first
    events = read_jsonl(d / "events.jsonl")
    (cut,) = [e for e in events if e["type"] == "interrupt" and e["reason"] == "interrupted"]
    assert 2.0 < cut["t"] <= 2.0 + SLACK and cut["discarded_s"] > 0.3, cut            # the user cut in at 2.0 s
    assert audio[int((first + 0.01) * SR):int((cut["t"] - 0.01) * SR)].std() > 0.1    # it played until then
    assert np.abs(audio[int((cut["t"] + 0.01) * SR):int(2.95 * SR)]).max() < LEVEL     # then not
    assert 3.0 <= audible_from(audio, cut["t"] + 0.01) + 0.002 <= 3.0 + SLACK          # the next reply (E = 2.5)
    rec = read_json(d / "runner.json")
    assert rec["stats"]["interrupted"] >= 1 and rec["stats"]["audio_contents"] == 2
    assert {"content_end", "completionEnd", "audio_content_restarted"} <= {e.get("event") for e in events}

    rows = srv.rows(n=2)
    assert sorted(r["interrupted"] for r in rows) == [0, 1]
    for ses in rows:
        assert ses["signature_ok"] is True and ses["events_signed_ok"] is True and ses["errors"] == []
        assert ses["credential"].startswith(f"{KEY_ID}/") and ses["credential"].endswith("/eu-north-1/bedrock/aws4_request")
        assert ses["model_id"] == "amazon.nova-sonic-v1:0" and ses["ended"] == "session_end"
        assert ses["order"][:6] == ["sessionStart", "promptStart", "contentStart", "textInput", "contentEnd",
                                    "contentStart"]
        assert ses["order"][-3:] == ["contentEnd", "promptEnd", "sessionEnd"]
        assert ses["inference"] == {"maxTokens": 1024, "topP": 0.9, "temperature": 0.7}
        assert ses["system_prompt"] == "You are a helpful assistant."
        assert ses["prompt"]["audioOutputConfiguration"]["voiceId"] == "matthew"
        assert ses["audio_config"]["sampleRateHertz"] == 16000 and ses["frame_bytes"] == [1024]
        assert ses["audio_contents"] == (["audio-0", "audio-1"] if ses["interrupted"] else ["audio-0"])

    for f in [*out.rglob("*"), *tmp_path.glob("*.json")]:
        if f.is_file():
            data = f.read_bytes()
            assert SECRET.encode() not in data and TOKEN.encode() not in data, f
    assert SECRET not in log and TOKEN not in log


@needs_venv
@pytest.mark.serial
def test_a_service_failing_mid_session_fails_that_sample_and_the_other_completes(tmp_path, server, cert):  # noqa: F811
    """The first session gets a modelStreamErrorException after 20 frames: that sample fails with the
    exception's name and message, before the input ended; the second completes."""
    srv = server(die_after=20, die_how="exception", die_in_session=1, reply_delay_s=0.3, tone_s=0.5)
    x = talk(("silence", 0.2), ("speech", 0.5), ("silence", 1.0))
    code, stage, out, log = stage_run(tmp_path, {"a": x, "b": x}, tls(srv, cert))
    assert code == 1
    a, b = stage["samples"][f"{SUBSET}/a"], stage["samples"][f"{SUBSET}/b"]
    assert a["status"] == "failed" and b["status"] == "ok", stage["samples"]
    assert a["reason"].startswith("runner 'nova-sonic': the stream failed: ModelStreamErrorException: "
                                  "The model stream failed (test double).") and "before the input ended" in a["reason"]
    assert "\n" not in a["reason"] and "Traceback" not in log
    assert first_audible(servers.output(out / "samples" / SUBSET / "b", len(x), SR), LEVEL) > 0


@needs_venv
@pytest.mark.serial
def test_a_reset_stream_a_huge_event_a_silent_server_and_bad_credentials_each_fail_in_one_line(
        tmp_path, server, cert, env):  # noqa: F811
    x = talk(("silence", 0.2), ("speech", 0.4), ("silence", 0.6))
    srv = server(die_after=10, die_how="reset")
    code, stage, _, _ = stage_run(tmp_path, {"r": x}, tls(srv, cert), name="reset")
    why = stage["samples"][f"{SUBSET}/r"]["reason"]
    assert code == 1 and why.startswith("runner 'nova-sonic': ") and "before the input ended" in why, why

    srv = server(big_after=3, big_bytes=200_000)
    code, stage, _, _ = stage_run(tmp_path, {"b": x}, tls(srv, cert, max_message_bytes=65536), name="big")
    why = stage["samples"][f"{SUBSET}/b"]["reason"]
    assert code == 1 and "larger than max_message_bytes (65536 bytes)" in why, why

    srv = server(mute=True)
    code, stage, _, _ = stage_run(tmp_path, {"m": x}, tls(srv, cert, open_timeout_s=1.0), name="mute")
    why = stage["samples"][f"{SUBSET}/m"]["reason"]
    assert code == 1 and "no progress opening the session within 1.0 s (the server is silent or stuck)" in why, why

    srv = server()
    env.setenv("AWS_SECRET_ACCESS_KEY", "another-secret-than-the-planted-one-1")
    code, stage, _, log = stage_run(tmp_path, {"k": x}, tls(srv, cert), name="key")
    why = stage["samples"][f"{SUBSET}/k"]["reason"]
    assert code == 1 and "AccessDeniedException" in why and "check AWS_ACCESS_KEY_ID" in why, why
    assert "another-secret" not in log and srv.rows()[0]["signature_ok"] is False


# --- settings: no SDK needed ----------------------------------------------------------------------

def test_credentials_and_region_come_from_the_environment_only(env):
    r = ns.NovaSonicRunner()
    assert (r.region, r.region_from) == ("eu-north-1", "AWS_REGION")
    assert r.url == "https://bedrock-runtime.eu-north-1.amazonaws.com" and not r.custom_url
    assert r.args["model_id"] == "amazon.nova-sonic-v1:0" and r.args["new_content_on_interrupt"] is True
    assert SECRET not in json.dumps(r.settings(), default=str) and TOKEN not in json.dumps(r.settings(), default=str)
    assert r.scrub(f"x {SECRET} y {TOKEN}") == "x <redacted> y <redacted>"
    env.delenv("AWS_REGION")
    env.setenv("AWS_DEFAULT_REGION", "ap-northeast-1")
    assert ns.region() == ("ap-northeast-1", "AWS_DEFAULT_REGION")
    env.delenv("AWS_DEFAULT_REGION")
    assert ns.region()[0] == "us-east-1"
    env.setenv("AWS_REGION", "us-east-1; rm")
    with pytest.raises(DuplexEvalError, match="AWS_REGION must be an AWS region name"):
        ns.region()
    env.delenv("AWS_SESSION_TOKEN")
    assert ns.credentials() == (KEY_ID, SECRET, None)
    env.delenv("AWS_SECRET_ACCESS_KEY")
    with pytest.raises(DuplexEvalError, match=r"^runner 'nova-sonic': no AWS credentials in the environment; set "
                                              r"AWS_SECRET_ACCESS_KEY \(and AWS_SESSION_TOKEN") as err:
        ns.credentials()
    # the hint survives the stage's secret scrubbing word for word (no `credentials: <redacted>`)
    from duplexeval_common.secrets import scrub
    assert scrub(str(err.value)) == str(err.value)


@pytest.mark.parametrize("url, error", [
    ("http://127.0.0.1:1", "HTTP/2, which its CRT client negotiates only over TLS"),
    ("https://user:pw@host", "no credentials, path, query or fragment"),
    ("https://host/model", "no credentials, path, query or fragment"),
    ("wss://host", "url must be https://host[:port]"),
])
def test_an_endpoint_the_sdk_cannot_stream_to_is_one_line(url, error):
    with pytest.raises(DuplexEvalError) as exc:
        ns.NovaSonicRunner(url=url)
    assert error in str(exc.value) and "\n" not in str(exc.value) and "pw" not in str(exc.value)


def test_interrupted_is_read_as_nova_sonic_sends_it():
    assert ns.is_interrupted('{ "interrupted" : true }') and ns.is_interrupted('{"interrupted":true}')
    assert not ns.is_interrupted('{ "interrupted" : false }') and not ns.is_interrupted('"interrupted" is a word')
    assert not ns.is_interrupted(None) and not ns.is_interrupted("Sure.")
    assert json.loads(ns.event("audioInput", {"content": "AA=="})) == {"event": {"audioInput": {"content": "AA=="}}}
