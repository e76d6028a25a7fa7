"""End to end: `duplexeval eval --model moshi-ws` against a protocol test double of Moshi's server.

The double (tests/duplex_runner/moshi_server.py) is NOT Moshi: it speaks the byte protocol of
kyutai-labs/moshi @ e6a55d2 moshi/server.py with a tiny random-weight model, run in the moshi
environment (.venvs/runner-moshi). Started with `--reply-after-silence 0.5 --reply-wav <speech>`
it answers with a fixed Piper phrase from the moment the user has been silent for 0.5 s and stops
the moment the user speaks again, on the input timeline (output step k covers input frame k); with
`--die-after-frames 30 --die-times 1` its first session drops the connection after 30 frames.

So, through the whole pipeline (dataset, runner in lockstep, ASR, aggregate): the first eval loses
the first sample with the reason and is partial; the second repairs only that sample; every
output is exactly its input's length; the turn-taking latency is 0.5 s up to one 80 ms frame, the
Opus round trip (13 ms) and ASR word timing; when the user barges in, the reply stops at once
(the runner places output by frame, nothing queued plays on).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from duplexeval_common.jsonio import read_json
from duplexeval_common.wavio import write_wav

from ..conftest import command, exact_speech
from ..conftest import SUBSET_ARGS

# run alone, after the parallel tests (make test): real-time sessions: a sample past the drift limit is ineligible
pytestmark = pytest.mark.serial

ROOT = Path(__file__).resolve().parents[2]
SERVER = ROOT / "tests" / "duplex_runner" / "moshi_server.py"
MOSHI_PY = ROOT / ".venvs" / "runner-moshi" / "bin" / "python"
SR = 24000
FRAME_S = 0.08
ASR_TOLERANCE_S = 0.15
REPLY = "Sure, that sounds like a good plan to me."


@pytest.fixture
def double(tmp_path):
    if not MOSHI_PY.exists():
        pytest.skip(f"the Moshi protocol double runs in the moshi environment, {MOSHI_PY.parent.parent} is "
                    "missing (make it with scripts/setup-runner-venv.sh moshi)")
    reply = tmp_path / "reply.wav"
    write_wav(reply, exact_speech(REPLY, SR), SR)
    err = open(tmp_path / "double.err", "w")
    proc = subprocess.Popen([str(MOSHI_PY), str(SERVER), "--print-port", "--reply-after-silence", "0.5",
                             "--reply-wav", str(reply), "--die-after-frames", "30", "--die-times", "1"],
                            stdout=subprocess.PIPE, stderr=err, text=True)
    line = proc.stdout.readline()
    if not line.strip().isdigit():
        proc.kill()
        pytest.fail(f"the double did not start: {(tmp_path / 'double.err').read_text()[-2000:]}")
    yield f"http://127.0.0.1:{int(line)}"
    proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(5)


def dx(home: Path, *args: str, env: dict) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("MODEL_URL", "MODEL_CA", "MODEL_INSECURE")}
    return subprocess.run([command("duplexeval"), "--home", str(home), *args], capture_output=True, text=True,
                          env={**base, "DUPLEXEVAL_CACHE": str(home / "cache"), **env}, timeout=1800)


def loud(x: np.ndarray, level: float = 0.01) -> np.ndarray:
    return np.flatnonzero(np.abs(x) > level)


def test_moshi_ws_through_the_pipeline(tmp_path, double):
    args = ["eval", "--model", "moshi-ws", *SUBSET_ARGS, "--judge", "none", "--limit", "1"]
    first = dx(tmp_path, *args, env={"MODEL_URL": double})
    assert first.returncode == 1, first.stdout[-3000:] + first.stderr[-3000:]
    run1 = read_json(tmp_path / "runs" / "latest" / "run.json")
    lost = "synthetic_pause_handling/0"  # the first session: samples run in subset order
    assert run1["status"] == "partial" and list(run1["missing"]) == [lost]
    assert "connection to the server was lost" in run1["missing"][lost]

    second = dx(tmp_path, *args, env={"MODEL_URL": double})
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    run = read_json(tmp_path / "runs" / "latest" / "run.json")
    assert run["status"] == "ok" and run["missing"] == {}
    stages = {s["name"]: s for s in run["stages"]}
    store = tmp_path / "store"
    runner_stage = read_json(store / stages["runner"]["key"] / "stage.json")
    assert {k: v.get("cached", False) for k, v in runner_stage["samples"].items()} == {
        lost: False, "synthetic_turn_taking/0": True, "synthetic_user_interruption/0": True}

    # every output exactly its input's length and rate
    for key in runner_stage["samples"]:
        subset, sid = key.split("/")
        x, sr = sf.read(str(store / stages["dataset"]["key"] / "samples" / subset / sid / "input.wav"),
                        dtype="float32")
        out = store / stages["runner"]["key"] / "samples" / subset / sid
        info = sf.info(str(out / "output.wav"))
        assert (info.frames, info.samplerate) == (len(x), sr), key
        rec = read_json(out / "runner.json")
        assert rec["runner"] == "moshi-ws" and rec["clock"] == "lockstep" and rec["profile"]["name"] == "moshi"
        assert rec["stats"]["missing_frames"] == 0

    # turn-taking latency: 0.5 s, up to a frame, the Opus round trip and ASR word timing
    metrics = read_json(store / stages["aggregate"]["key"] / "metrics.json")["subsets"]
    tt = metrics["synthetic_turn_taking"]
    assert tt["official"]["tor"] == 1
    assert abs(tt["official"]["latency"] - 0.5) < FRAME_S + ASR_TOLERANCE_S, tt["official"]
    assert all(m["coverage"] == 1 for m in metrics.values())

    # barge-in: the reply to the first question stops as soon as the user speaks again
    d_in = store / stages["dataset"]["key"] / "samples" / "synthetic_user_interruption" / "0"
    d_out = store / stages["runner"]["key"] / "samples" / "synthetic_user_interruption" / "0"
    x, sr = sf.read(str(d_in / "input.wav"), dtype="float32")
    y, _ = sf.read(str(d_out / "output.wav"), dtype="float32")
    speech = loud(x)
    gaps = np.flatnonzero(np.diff(speech) > sr)      # silences of more than 1 s between speech
    first_end, barge = speech[gaps[0]] / sr, speech[gaps[0] + 1] / sr
    reply = loud(y) / sr
    during_gap = reply[(reply > first_end) & (reply < barge)]
    assert len(during_gap) and abs(during_gap[0] - (first_end + 0.5)) < FRAME_S   # it answered
    after = reply[reply > barge + FRAME_S]
    second_end = speech[speech / sr > barge][-1] / sr
    assert not len(after) or after[0] > second_end, (barge, after[:3])   # silent while the user talks
