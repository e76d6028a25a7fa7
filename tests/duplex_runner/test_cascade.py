"""The real cascade (Silero VAD, faster-whisper tiny.en, SmolLM2-135M, Piper) on synthesized speech.

Slow: loading SmolLM2 from its gguf takes 20 s to a few minutes on 2 busy cores.
"""

import json

import numpy as np
import pytest
import soundfile as sf
from click.testing import CliRunner

from duplexeval_common import schemas
from duplexeval_common.jsonio import read_json, read_jsonl
from duplexeval_runner.cli import main

from .conftest import make_dataset, zeros

SUBSET = "synthetic_user_interruption"
FIXED = 0.5


@pytest.mark.slow
def test_cascade_answers_places_replies_and_yields_to_barge_in(tmp_path, speech):
    sr = 16000
    u1, u2 = speech("Hello there. Can you tell me the capital of France?", sr), speech("What about Germany?", sr)
    user = np.concatenate([zeros(0.3, sr), u1, zeros(2.0, sr), u2, zeros(4.0, sr)])
    s2 = int(round(0.3 * sr)) + len(u1) + int(round(2.0 * sr))
    # The same conversation twice: with the fixed clock the two outputs must be identical.
    data = make_dataset(tmp_path / "data", {(SUBSET, "1"): (user, sr), (SUBSET, "2"): (user, sr)})
    cfg = tmp_path / "c.json"
    # One LLM thread: on a busy 2-core machine two OpenMP threads can be 5-10x slower;
    # the fixed clock makes the result independent of speed anyway.
    cfg.write_text(json.dumps({"runner": "cascade", "seed": 0,
                               "runner_args": {"clock": "fixed", "fixed_compute_s": FIXED,
                                               "llm_threads": 1}}))
    out = tmp_path / "out"
    res = CliRunner().invoke(main, ["run", "--input", str(data), "--output", str(out), "--config", str(cfg)],
                             catch_exceptions=False)
    assert res.exit_code == 0, res.output
    d = out / "samples" / SUBSET / "1"
    audio, osr = sf.read(str(d / "output.wav"), dtype="float32")
    assert osr == sr and len(audio) == len(user)
    assert (d / "output.wav").read_bytes() == (out / "samples" / SUBSET / "2" / "output.wav").read_bytes()

    rec = read_json(d / "runner.json")
    assert schemas.problem("runner-record", rec) is None
    assert rec["runner"] == "cascade" and rec["settings"]["clock"] == "fixed" and rec["kind"] == "step"
    assert rec["settings"]["runner_in_sr"] == 16000 and rec["settings"]["runner_out_sr"] == 22050
    assert set(rec["models"]) == {"silero-vad", "faster-whisper", "smollm2", "piper-voice"}

    events = read_jsonl(d / "events.jsonl")
    assert all(schemas.problem("runner-event", e) is None for e in events)
    asr = [e for e in events if e["type"] == "asr"]
    assert len(asr) == 2
    assert "capital" in asr[0]["text"].lower() and "france" in asr[0]["text"].lower()
    assert "germany" in asr[1]["text"].lower()
    # the fixed clock places replies by no wall time, so the log carries none: same input, same bytes
    assert rec["deterministic"] is True
    assert not any("wall" in e or "seconds" in e or "measured_s" in e for e in events)
    speaks = [e for e in events if e["type"] == "speak"]
    assert len(speaks) == 2 and all(s["text"] for s in speaks)

    # Each reply starts fixed_compute_s after its endpoint was detected.
    for s in speaks:
        assert s["t"] == pytest.approx(s["endpoint_t"] + FIXED, abs=1e-4)
    first = int(np.flatnonzero(np.abs(audio) > 1e-3)[0])
    assert abs(first / sr - speaks[0]["t"]) < 0.005

    # The user's second question cuts the first reply at the VAD's detection time.
    (cut,) = [e for e in events if e["type"] == "interrupt"]
    assert s2 / sr <= cut["t"] <= s2 / sr + 0.1
    assert np.abs(audio[int(round(speaks[0]["t"] * sr)):int(cut["t"] * sr)]).max() > 0.05
    assert np.abs(audio[int((cut["t"] + 0.003) * sr):int((speaks[1]["t"] - 0.003) * sr)]).max() < 1e-3
    assert {k: rec["stats"][k] for k in ("turns", "replies", "interrupts")} == {"turns": 2, "replies": 2,
                                                                                 "interrupts": 1}
