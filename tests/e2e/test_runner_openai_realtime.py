"""End to end: `duplexeval eval --model openai-realtime --dataset fdb-mini --limit 1`, with real stages,
against the OpenAI Realtime protocol double of tests/duplex_runner/openai_realtime_server.py (the GA
events over ws://127.0.0.1; a test double, not the model), reached through MODEL_URL with a planted
OPENAI_API_KEY that the double checks as the bearer.

The double answers every turn with the same Piper speech (6.5 s, its first sample audible) once
0.5 s have passed after the user's last loud sample, faster than real time; its VAD reports speech
200 ms after it starts. So the official
turn-taking latency is 0.5 s, up to one 20 ms frame, the loopback and the ASR's word timing; in the
interruption samples the user comes back 4 s after the context while that reply still plays, so
the runner must drop what has not played and truncate the item at what did (the double rejects a
truncate past what it delivered). The double drops one session's connection mid-sample: the run
is partial with that sample's reason, and `eval` again completes it.
"""


import numpy as np
import pytest
import soundfile as sf

from duplexeval_common.jsonio import read_json, read_jsonl
from duplexeval_common.wavio import write_wav

from ..conftest import dx_model, exact_speech
from ..conftest import SUBSET_ARGS
from ..duplex_runner.test_openai_realtime import server  # noqa: F401  (the double's fixture)


def dx(home, *args, env=None):
    return dx_model(home, *args, env=env, timeout=1800)

# run alone, after the parallel tests (make test): real-time sessions: a sample past the drift limit is ineligible
pytestmark = pytest.mark.serial

# These tests are about placement, barge-in and repair, not about pacing (the core's drift check has
# its own tests in tests/duplex_runner/test_clocks.py and is measured by perf/bench_runners.py):
# a loaded 2-core machine can delay one send by more than 20 ms, so they allow 100 ms.
DRIFT = ["--runner-arg", "drift_limit_ms=100"]

pytest.importorskip("openai")
pytest.importorskip("websockets")

KEY = "planted-oa-e2e-key-77aa55cc33ee11XY"   # a test value, not shaped like a real key
REPLY = ("Sure, I can help with that. Here is what I would suggest, one step at a time, starting with the "
         "basics and going from there.")
ASR_TOLERANCE_S = 0.15
FRAME_S = 0.02
TT, UI = "synthetic_turn_taking", "synthetic_user_interruption"




def test_openai_realtime_through_the_pipeline(tmp_path, server):  # noqa: F811
    home = tmp_path / "home"
    reply = tmp_path / "reply.wav"
    write_wav(reply, exact_speech(REPLY, 24000), 24000)
    srv = server(api_key=KEY, reply_wav=str(reply), reply_delay_s=0.5, speed=4.0, vad_level=0.002, detect_ms=200,
                 die_in_session=2, die_at_s=1.0)
    env = {"OPENAI_API_KEY": KEY, "MODEL_URL": srv.url}
    args = ["eval", "--model", "openai-realtime", "--dataset", "fdb-mini", *SUBSET_ARGS, "--judge", "none", "--limit", "1",
            "--runner-arg", "concurrency=3", *DRIFT]

    nokey = dx(home, *args, env={"MODEL_URL": srv.url})
    assert nokey.returncode != 0 and "OPENAI_API_KEY" in nokey.stderr and "Traceback" not in nokey.stderr
    assert srv.rows("connect", timeout=0) == []   # stopped before any session

    first = dx(home, *args, env=env)
    assert first.returncode == 1, first.stdout[-3000:] + first.stderr[-3000:]
    run1 = read_json(home / "runs" / "latest" / "run.json")
    assert run1["status"] == "partial" and len(run1["missing"]) == 1, run1["missing"]
    ((lost, why),) = run1["missing"].items()
    assert why.startswith("runner: failed:") and "the connection was lost" in why and "before the input ended" in why

    second = dx(home, *args, env=env)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    run2 = read_json(home / "runs" / "latest" / "run.json")
    assert run2["status"] == "ok" and run2["missing"] == {}
    stages = {s["name"]: s for s in run2["stages"]}
    assert stages["runner"]["key"] == {s["name"]: s for s in run1["stages"]}["runner"]["key"]
    store = home / "store"
    runner_dir = store / stages["runner"]["key"]
    done = read_json(runner_dir / "stage.json")["samples"]
    assert len(done) == 3 and [k for k, v in done.items() if not v.get("cached")] == [lost]

    # Every output is exactly its input's length and rate; the key reached the server, never a file.
    for out in sorted(runner_dir.glob("samples/*/*/output.wav")):
        rel = out.parent.relative_to(runner_dir)
        a, b = sf.info(str(out)), sf.info(str(store / stages["dataset"]["key"] / rel / "input.wav"))
        assert (a.frames, a.samplerate) == (b.frames, b.samplerate), rel
    assert all(r["auth_ok"] and r["model"] == "gpt-realtime" for r in srv.rows("connect", n=4))
    for f in home.rglob("*"):
        if f.is_file() and f.suffix != ".wav":
            assert KEY not in f.read_text(errors="replace"), f

    # Turn-taking: the reply starts 0.5 s after the user stops.
    metrics = read_json(store / stages["aggregate"]["key"] / "metrics.json")["subsets"]
    tt = metrics[TT]["official"]
    assert tt["tor"] == 1 and metrics[TT]["counts"]["eligible"] == 1, metrics[TT]
    assert -ASR_TOLERANCE_S <= tt["latency"] - 0.5 <= FRAME_S + 0.02 + ASR_TOLERANCE_S, tt

    # Barge-in: the reply playing when the user interrupts is cut once the server VAD reports the user
    # (200 ms into the interruption) and truncated at what played.
    ui = metrics[UI]["counts"]
    assert ui["exercised"] == 1 and ui["outcomes"]["response"] == 1, ui
    sessions = srv.rows("session", n=4)
    assert all(s["errors"] == [] for s in sessions if not s["died"]), [s["errors"] for s in sessions]
    accepted = [t for s in sessions for t in s["truncates"]]
    assert accepted and all(t["accepted"] and t["audio_end_ms"] <= t["delivered_ms"] for t in accepted)
    for d in sorted(runner_dir.glob(f"samples/{UI}/*")):
        events = read_jsonl(d / "events.jsonl")
        sample = read_json(store / stages["dataset"]["key"] / "samples" / UI / d.name / "sample.json")
        barge = sample["interrupt"]["start"]
        (cut,) = [e for e in events if e["type"] == "interrupt" and barge + 0.2 <= e["t"] <= barge + 0.3]
        assert cut["reason"] == "speech_started" and cut["discarded_s"] > 1.0, cut   # most of the 6.5 s reply
        sent = [e for e in events if e["type"] == "truncate" and "item_id" in e and e["t"] == cut["t"]]
        assert len(sent) == 1 and sent[0]["audio_end_ms"] <= sent[0]["delivered_ms"], sent
        audio, sr = sf.read(str(d / "output.wav"), dtype="float32")
        assert np.abs(audio[int((cut["t"] - 1.0) * sr):int((cut["t"] - 0.01) * sr)]).max() > 0.05   # it played
        assert np.abs(audio[int((cut["t"] + 0.01) * sr):int((cut["t"] + 1.0) * sr)]).max() < 1e-3   # then not
        rec = read_json(d / "runner.json")
        assert rec["stats"]["truncates"] >= 1 and rec["stats"]["server_errors"] == 0
