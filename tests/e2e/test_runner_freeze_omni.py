"""End to end: `duplexeval eval --model freeze-omni` against a Freeze-Omni protocol test double.

The server is tests/duplex_runner/freeze_omni_server.py, started here on 127.0.0.1 over HTTPS: a
protocol test double, not the model. It answers each end of user speech E (its last loud sample,
then 0.3 s of silence) with a Piper sentence that becomes due at E + 0.5 s and goes out in 160 ms
chunks, one per incoming audio frame; user speech while that reply plays gets `stop_tts`. So the
official turn-taking latency is 0.5 s plus at most one 30 ms frame (and the loopback), up to ASR
word timing. One session dies: the first to reach 12.5 s of audio (only the user-interruption
sample is that long), so the first `eval` is partial with that sample's reason and the second
completes it, with its barge-in: the reply to the context is cut when the user interrupts, and what
had not played is dropped.
"""

import os
import subprocess

import numpy as np
import pytest
import soundfile as sf

from duplexeval_common.jsonio import read_json, read_jsonl
from duplexeval_common.wavio import write_wav

from ..conftest import command, exact_speech
from ..conftest import SUBSET_ARGS
from ..duplex_runner.test_freeze_omni import cert, server  # noqa: F401  (fixtures)

# run alone, after the parallel tests (make test): real-time sessions: a sample past the drift limit is ineligible
pytestmark = pytest.mark.serial

# These tests are about placement, barge-in and repair, not about pacing (the core's drift check has
# its own tests in tests/duplex_runner/test_clocks.py and is measured by perf/bench_runners.py):
# a loaded 2-core machine can delay one send by more than 20 ms, so they allow 100 ms.
DRIFT = ["--runner-arg", "drift_limit_ms=100"]

ASR_TOLERANCE_S = 0.15
FRAME_S = 0.030
LEVEL = 0.01
REPLY = ("Sure, here is a short answer. It has a few sentences, and it keeps going for a little while, "
         "so that you can hear it.")
TT, UI = "synthetic_turn_taking/0", "synthetic_user_interruption/0"


def dx(home, *args, env=None):
    base = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "MODEL_URL", "MODEL_CA",
                                                              "MODEL_INSECURE")}
    return subprocess.run([command("duplexeval"), "--home", str(home), *args], capture_output=True, text=True,
                          env={**base, "DUPLEXEVAL_CACHE": str(home / "cache"), **(env or {})}, timeout=1200)


def stage_dir(home, run: dict, name: str):
    (stage,) = [s for s in run["stages"] if s["name"] == name]
    return home / "store" / stage["key"]


def drift_notes(home, run: dict) -> dict:
    """Samples the core marked ineligible (their send drift passed 20 ms: a loaded machine), for
    assertion messages."""
    root = stage_dir(home, run, "runner") / "samples"
    return {str(p.parent.relative_to(root)): read_json(p).get("ineligible")
            for p in root.glob("*/*/runner.json") if read_json(p).get("ineligible")}


def test_latency_barge_in_and_a_repaired_sample_through_the_pipeline(tmp_path, server, cert):  # noqa: F811
    latency_barge_in_and_repair(tmp_path, server, cert, "local")


def latency_barge_in_and_repair(tmp_path, server, cert, runtime: str):  # noqa: F811
    """The whole check in one runtime (tests/docker runs it with `--runtime docker`: the runner in its
    image duplexeval/runner-freeze-omni, on the host's network to reach the double on 127.0.0.1)."""
    reply = exact_speech(REPLY, 24000)
    assert len(reply) / 24000 > 4.5          # longer than the 4 s gap before the user interrupts
    wav = tmp_path / "reply.wav"
    write_wav(wav, reply, 24000)
    srv = server(reply_delay_s=0.5, reply_wav=str(wav), die_after=int(12.5 / FRAME_S), die_how="disconnect",
                 die_times=1)
    env = {"MODEL_URL": srv.url, "MODEL_CA": str(cert[0]),
           **({"DUPLEXEVAL_DOCKER_NETWORK": "host"} if runtime == "docker" else {})}
    args = ["eval", "--model", "freeze-omni", "--dataset", "fdb-mini", *SUBSET_ARGS, "--judge", "none", "--limit", "1",
            "--runner-arg", "concurrency=3", "--runner-arg", "grace_s=0", "--runtime", runtime, *DRIFT]

    first = dx(tmp_path, *args, env=env)
    assert first.returncode == 1, first.stderr[-3000:]
    run1 = read_json(tmp_path / "runs" / "latest" / "run.json")
    assert run1["status"] == "partial" and list(run1["missing"]) == [UI], drift_notes(tmp_path, run1)
    why = run1["missing"][UI]
    assert why.startswith("runner: failed:") and "the server closed the connection" in why, why
    assert "at 12.5 s, before the input ended" in why
    assert f"{UI}: runner: failed" in first.stdout

    # the turn-taking sample: the reply 0.5 s after the user's turn, up to a frame and ASR timing
    metrics1 = read_json(stage_dir(tmp_path, run1, "aggregate") / "metrics.json")["subsets"]
    tt = metrics1["synthetic_turn_taking"]
    assert tt["counts"]["eligible"] == 1 and tt["official"]["tor"] == 1
    assert 0.5 - ASR_TOLERANCE_S <= tt["official"]["latency"] <= 0.5 + FRAME_S + 0.01 + ASR_TOLERANCE_S, tt
    assert metrics1["synthetic_user_interruption"]["counts"]["eligible"] == 0

    second = dx(tmp_path, *args, env=env)
    assert second.returncode == 0, second.stderr[-3000:]
    run2 = read_json(tmp_path / "runs" / "latest" / "run.json")
    assert run2["status"] == "ok" and run2["missing"] == {}, drift_notes(tmp_path, run2)
    runner = stage_dir(tmp_path, run2, "runner")
    assert runner == stage_dir(tmp_path, run1, "runner")               # repaired in place
    cached = {k: v.get("cached", False) for k, v in read_json(runner / "stage.json")["samples"].items()}
    assert cached == {"synthetic_pause_handling/0": True, TT: True, UI: False}
    metrics2 = read_json(stage_dir(tmp_path, run2, "aggregate") / "metrics.json")["subsets"]
    assert all(m["coverage"] == 1 for m in metrics2.values())
    ui = metrics2["synthetic_user_interruption"]
    assert ui["counts"]["eligible"] == 1 and ui["official"]["tor"] == 1
    # the answer to the interruption: due 0.5 s after it ended
    assert 0.5 - ASR_TOLERANCE_S <= ui["official"]["latency"] <= 0.5 + FRAME_S + 0.01 + ASR_TOLERANCE_S, ui

    # every output is exactly its input's length
    dataset = stage_dir(tmp_path, run2, "dataset")
    for key in cached:
        i = sf.info(str(dataset / "samples" / key / "input.wav"))
        o = sf.info(str(runner / "samples" / key / "output.wav"))
        assert (o.frames, o.samplerate) == (i.frames, i.samplerate), key

    # barge-in: the stop_tts at the user's interruption drops the rest of the reply
    d = runner / "samples" / UI
    events = read_jsonl(d / "events.jsonl")
    rec = read_json(d / "runner.json")
    cuts = [e for e in events if e["type"] == "interrupt" and e["reason"] == "stop_tts" and e["discarded_s"] > 0]
    assert cuts, [e for e in events if e["type"] == "interrupt"]
    cut = cuts[0]
    # the kept try's session (a try that drifted past the limit was run again: drift_retries)
    ses = [r for r in srv.rows("session", n=5) if r["frames"] == rec["stats"]["frames_sent"] and "died" not in r][-1]
    barge = ses["interrupts"][0] / 16000                               # where the double heard the user
    assert barge <= cut["t"] <= barge + 2 * FRAME_S, (barge, cut["t"])
    recv = [e for e in events if e["type"] == "recv_audio"]
    first_reply = min(e["placed_at"] for e in recv)
    assert cut["discarded_s"] == pytest.approx(first_reply + len(reply) / 24000 - cut["t"], abs=0.02)
    out, sr = sf.read(str(d / "output.wav"), dtype="float32")
    resumed = min(e["placed_at"] for e in recv if e["t"] > cut["t"])  # the answer to the interruption
    assert np.abs(out[int((cut["t"] - 0.5) * sr):int(cut["t"] * sr)]).max() > 0.05     # it was speaking
    assert np.abs(out[int((cut["t"] + 0.002) * sr):int(resumed * sr)]).max() < LEVEL  # then silent
    assert resumed > cut["t"] + 1.0
