"""asr-aligner on Piper speech placed at known times."""

import json
import subprocess
import sys

import pytest

from duplexeval_common import schemas
from duplexeval_common.jsonio import read_json

from ..conftest import command, silence, write_stage


def run_asr(inputs, out, config=None):
    """The stage with Full-Duplex-Bench v1.0's rule of what to transcribe (its `asr` hook: an
    interruption sample from its end R on) unless `config` says otherwise."""
    cfg = out.parent / f"{out.name}.config.json"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text(json.dumps({"benchmark": "fdb-v1"} if config is None else config))
    args = [command("asr-aligner"), "run", "--output", str(out), "--config", str(cfg)]
    for i in inputs:
        args += ["--input", str(i)]
    return subprocess.run(args, capture_output=True, text=True)


@pytest.fixture(scope="module")
def transcribed(tmp_path_factory, speak):
    import numpy as np
    root = tmp_path_factory.mktemp("asr")
    reply = speak("Paris is the capital of France.")
    late = np.concatenate([silence(1.5), reply, silence(1.0)])
    talk_over = np.concatenate([silence(0.5), speak("I was saying something long here."),
                                silence(0.3), reply, silence(1.0)])
    r_end = round(0.5 + len(speak("I was saying something long here.")) / 16000 + 0.15, 3)
    write_stage(root / "in", {
        "synthetic_turn_taking/0": {"output.wav": late},
        "synthetic_user_interruption/0": {
            "output.wav": talk_over,
            "interrupt.json": [{"context": "c", "interrupt": "i", "timestamp": [0.6, r_end]}]},
        "synthetic_turn_taking/1": {"output.wav": silence(2.0)},
    })
    r = run_asr([root / "in"], root / "out")
    assert r.returncode == 0, r.stderr
    return root / "out", r_end


def test_words_land_at_the_speech_time(transcribed):
    out, _ = transcribed
    o = read_json(out / "samples/synthetic_turn_taking/0/output.json")
    assert schemas.problem("output", o) is None
    assert "capital" in o["text"] and "France" in o["text"]
    assert abs(o["chunks"][0]["timestamp"][0] - 1.5) < 0.12  # tiny.en word timing
    t = read_json(out / "samples/synthetic_turn_taking/0/transcript.json")
    assert t["backend"] == "faster-whisper" and len(t["model_sha256"]) == 64


def test_interruption_is_cropped_at_R_like_the_official_asr(transcribed):
    out, r_end = transcribed
    o = read_json(out / "samples/synthetic_user_interruption/0/output.json")
    assert o["chunks"], o
    assert all(c["timestamp"][0] >= r_end for c in o["chunks"])
    assert "France" in o["text"] and "saying" not in o["text"]
    assert read_json(out / "samples/synthetic_user_interruption/0/transcript.json")["offset_s"] == r_end


def test_silence_gives_empty_official_output(transcribed):
    out, _ = transcribed
    assert read_json(out / "samples/synthetic_turn_taking/1/output.json") == {"text": "", "chunks": []}


def test_interruption_end_outside_audio_fails_that_sample(tmp_path):
    write_stage(tmp_path / "in", {
        "synthetic_user_interruption/0": {"output.wav": silence(1.0),
                                          "interrupt.json": [{"context": "c", "interrupt": "i", "timestamp": [0.2, 5.0]}]}})
    r = run_asr([tmp_path / "in"], tmp_path / "out")
    assert r.returncode == 1
    assert "synthetic_user_interruption/0: interruption end 5.0 s lies outside output.wav" in r.stderr
