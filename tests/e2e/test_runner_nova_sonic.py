"""End to end: `duplexeval eval --model nova-sonic --dataset fdb-mini --subset synthetic_turn_taking
--limit 1`, with real stages, against the Bedrock bidirectional-stream protocol double of
tests/duplex_runner/nova_sonic_server.py (HTTP/2 over TLS on 127.0.0.1; a test double, not the model
and not the service), reached through MODEL_URL + MODEL_CA with planted AWS credentials in
AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, with which the double verifies the
SigV4 signature of the request and of every event.

The runner stage runs from its own environment, .venvs/runner-nova-sonic (Python 3.12: the SDK needs
it); the test skips, saying so, without it. The double answers each end of user speech E with a
Piper speech (its first sample audible) once its input reaches E + 0.5 s, so the official turn-taking latency is 0.5 s plus at most one
32 ms frame and the loopback, up to the ASR's word timing. One sample, realtime: the cost is that
sample's length plus the pipeline's other stages.
"""

import os
import subprocess

import pytest
import soundfile as sf

from duplexeval_common.jsonio import read_json

from duplexeval_common.wavio import write_wav

from ..conftest import command, exact_speech
from ..duplex_runner.test_nova_sonic import KEY_ID, SECRET, TOKEN, server  # noqa: F401  (fixture)
from ..duplex_runner.servers import cert  # noqa: F401  (fixture)

pytestmark = [pytest.mark.serial, pytest.mark.own_env("runner-nova-sonic", note="it needs python3.12")]

ASR_TOLERANCE_S = 0.15
FRAME_S = 512 / 16000
TT = "synthetic_turn_taking"


def test_nova_sonic_through_the_pipeline(tmp_path, server, cert):  # noqa: F811
    reply = tmp_path / "reply.wav"
    write_wav(reply, exact_speech("Sure, here is a short answer for you.", 24000), 24000)
    srv = server(reply_delay_s=0.5, reply_wav=str(reply), speed=4.0)
    home = tmp_path / "home"
    base = {k: v for k, v in os.environ.items()
            if not k.startswith("AWS_") and k not in ("MODEL_URL", "MODEL_CA", "MODEL_INSECURE")}
    env = {**base, "DUPLEXEVAL_CACHE": str(home / "cache"), "MODEL_URL": srv.url, "MODEL_CA": str(cert[0]),
           "AWS_ACCESS_KEY_ID": KEY_ID, "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_SESSION_TOKEN": TOKEN,
           "AWS_REGION": "us-east-1"}
    proc = subprocess.run([command("duplexeval"), "--home", str(home), "eval", "--model", "nova-sonic",
                           "--dataset", "fdb-mini", "--subset", TT, "--limit", "1", "--judge", "none",
                           "--runner-arg", "grace_s=0.5", "--runner-arg", "drift_limit_ms=100"],
                          capture_output=True, text=True, env=env, timeout=1200)
    run = read_json(home / "runs" / "latest" / "run.json")
    missing = {k: v for k, v in run["missing"].items() if "ineligible:drift" not in v}
    assert missing == {}, proc.stdout[-3000:] + proc.stderr[-3000:]

    stages = {s["name"]: s for s in run["stages"]}
    store = home / "store"
    runner_dir = store / stages["runner"]["key"]
    assert stages["runner"]["component"] == "runner-nova-sonic"
    assert stages["runner"]["provenance"]["environment"].endswith(os.path.join(".venvs", "runner-nova-sonic"))
    (out,) = sorted(runner_dir.glob("samples/*/*/output.wav"))
    rel = out.parent.relative_to(runner_dir)
    a, b = sf.info(str(out)), sf.info(str(store / stages["dataset"]["key"] / rel / "input.wav"))
    assert (a.frames, a.samplerate) == (b.frames, b.samplerate)
    rec = read_json(out.parent / "runner.json")
    assert rec["settings"]["url"] == srv.url and rec["stats"]["recv_audio_s"] > 0

    (ses,) = srv.rows()
    assert ses["signature_ok"] is True and ses["events_signed_ok"] is True and ses["errors"] == []

    if run["status"] == "ok":  # the sample was not left out for drift on a busy machine
        tt = read_json(store / stages["aggregate"]["key"] / "metrics.json")["subsets"][TT]["official"]
        assert tt["tor"] == 1, tt
        assert -ASR_TOLERANCE_S <= tt["latency"] - 0.5 <= FRAME_S + 0.03 + ASR_TOLERANCE_S, tt

    for f in home.rglob("*"):
        if f.is_file():
            data = f.read_bytes()
            assert SECRET.encode() not in data and TOKEN.encode() not in data, f
    assert SECRET not in proc.stdout + proc.stderr and TOKEN not in proc.stdout + proc.stderr
