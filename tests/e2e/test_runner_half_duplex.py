"""End to end: `duplexeval eval --model half-duplex` against a chat-completions test double.

The server is tests/duplex_runner/audio_chat_server.py on 127.0.0.1: a protocol test double, not a
model. It answers every request 0.2 s after it arrives with a Piper sentence of about 5 s (base64 WAV,
so that the pipeline's ASR hears words) and a transcript
that echoes the request's Authorization header (a hostile server: the key must be written nowhere).
With `clock=fixed fixed_compute_s=0.3` each reply starts exactly 0.3 s after the VAD detected the end
of the user's turn, so the official turn-taking latency is the endpointer's delay (`min_silence_ms`
500 ms plus up to two 32 ms chunks) plus 0.3 s, up to the ASR's word timing; on the user-interruption
sample the reply to the context is still playing when the user interrupts, and it stops at the VAD's
detection of that speech.
"""

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from duplexeval_common.jsonio import read_json, read_jsonl

from duplexeval_common.wavio import write_wav

from ..conftest import SUBSET_ARGS, dx_model, exact_speech, stage_dir
from ..duplex_runner.servers import Doubles


dx = dx_model

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).resolve().parents[1] / "duplex_runner" / "audio_chat_server.py"
KEY = "planted-hd-e2e-key-0123456789ACE"   # a test value, not shaped like a real key
REPLY = ("Sure, here is a short answer. It has a few sentences, and it keeps going for a little while, "
         "so that you can hear it.")
FIXED, MIN_SILENCE, CHUNK = 0.3, 0.5, 0.032
ASR_TOLERANCE_S = 0.15
UI = "synthetic_user_interruption/0"





def test_half_duplex_through_the_pipeline_places_replies_yields_and_keeps_the_key_out(tmp_path):
    home = tmp_path / "home"
    (tmp_path / "double").mkdir()
    reply = exact_speech(REPLY, 24000)
    assert len(reply) / 24000 > 4.5          # longer than the gap before the user interrupts
    write_wav(tmp_path / "reply.wav", reply, 24000)
    with Doubles(tmp_path / "double") as doubles:
        srv = doubles.start(SCRIPT, "--script", json.dumps({"delay_s": 0.2, "echo_auth": True,
                                                            "reply_wav": str(tmp_path / "reply.wav")}),
                            url="http://127.0.0.1:{port}/v1")
        res = dx(home, "eval", "--model", "half-duplex", "--dataset", "fdb-mini", *SUBSET_ARGS, "--judge", "none",
                 "--limit", "1", "--runner-arg", "clock=fixed", "--runner-arg", f"fixed_compute_s={FIXED}",
                 env={"MODEL_URL": srv.url, "OPENAI_API_KEY": KEY})
        assert res.returncode == 0, res.stderr[-3000:]
        assert srv.rows("request", n=3)
    run = read_json(home / "runs" / "latest" / "run.json")
    assert run["status"] == "ok" and run["missing"] == {}
    runner, dataset = stage_dir(home, run, "runner"), stage_dir(home, run, "dataset")

    keys = sorted(str(p.parent.relative_to(runner / "samples")) for p in (runner / "samples").glob("*/*/runner.json"))
    assert len(keys) == 3 and UI in keys
    for key in keys:
        d = runner / "samples" / key
        i, o = sf.info(str(dataset / "samples" / key / "input.wav")), sf.info(str(d / "output.wav"))
        assert (o.frames, o.samplerate) == (i.frames, i.samplerate), key      # exactly the input's length
        speaks = [e for e in read_jsonl(d / "events.jsonl") if e["type"] == "speak"]
        for s in speaks:
            assert s["t"] == pytest.approx(s["endpoint_t"] + FIXED, abs=1e-4), key
        assert read_json(d / "runner.json")["settings"]["chat_audio"]["base_url"] == srv.url

    # the turn-taking latency: the endpointer's delay plus the fixed compute, up to the ASR's timing
    metrics = read_json(stage_dir(home, run, "aggregate") / "metrics.json")["subsets"]
    tt = metrics["synthetic_turn_taking"]
    assert tt["counts"]["eligible"] == 1 and tt["official"]["tor"] == 1
    lo, hi = MIN_SILENCE + FIXED - ASR_TOLERANCE_S, MIN_SILENCE + 2 * CHUNK + FIXED + ASR_TOLERANCE_S
    assert lo <= tt["official"]["latency"] <= hi, tt

    # barge-in: the reply playing when the user interrupts stops at the VAD's detection of that speech
    d = runner / "samples" / UI
    events = read_jsonl(d / "events.jsonl")
    (cut,) = [e for e in events if e["type"] == "interrupt"]
    starts = [e for e in events if e["type"] == "vad_start"]
    assert cut["reason"] == "user_speech" and cut["t"] in [s["detected_t"] for s in starts]
    speaks = [e for e in events if e["type"] == "speak"]
    before = [s for s in speaks if s["t"] < cut["t"]][-1]
    assert before["end_t"] > cut["t"]                                   # it was still speaking
    out, sr = sf.read(str(d / "output.wav"), dtype="float32")
    after = [s["t"] for s in speaks if s["t"] > cut["t"]]
    resume = after[0] if after else len(out) / sr
    assert np.abs(out[int((cut["t"] - 0.3) * sr):int(cut["t"] * sr)]).max() > 0.1
    assert np.abs(out[int((cut["t"] + 0.003) * sr):int((resume - 0.003) * sr)]).max() < 1e-3

    # the key (sent by the client, echoed back by the double) is in no file of the run
    leaked = [p for p in home.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
    assert not leaked, leaked
