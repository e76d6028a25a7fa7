"""The asr-aligner's VAD (vad.json) equals silero-vad's own get_speech_timestamps, with torch,
on speech, noise and silence, at every setting the vad block has; and it never imports torch."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from duplexeval_asr.vad import ASR_RATE, SileroVad


def silero_segments(audio: np.ndarray, settings: dict) -> tuple[list[tuple[float, float]], list[float]]:
    """silero-vad's get_speech_timestamps (its ONNX model through its torch wrapper), in the
    asr-aligner's rounding, and the probabilities it computed (through its own model object)."""
    import torch
    import silero_vad
    model = silero_vad.load_silero_vad(onnx=True)
    ts = silero_vad.get_speech_timestamps(torch.from_numpy(audio), model, sampling_rate=ASR_RATE,
                                          return_seconds=False, **settings)
    model.reset_states()
    probs = []
    for i in range(0, len(audio), 512):
        chunk = torch.from_numpy(audio[i:i + 512])
        if len(chunk) < 512:
            chunk = torch.nn.functional.pad(chunk, (0, 512 - len(chunk)))
        probs.append(model(chunk, ASR_RATE).item())
    return [(round(t["start"] / ASR_RATE, 3), round(t["end"] / ASR_RATE, 3)) for t in ts], probs


@pytest.fixture(scope="module")
def signals(speak):
    rng = np.random.default_rng(5)
    words = speak("Well, I think that we should go now, before it rains.", ASR_RATE)
    gap = np.zeros(int(0.35 * ASR_RATE), np.float32)
    speech = np.concatenate([gap, words, gap[:1000], words * 0.4, gap, gap, words]).astype(np.float32)
    speech = speech[:len(speech) - 333]  # not a whole number of windows
    noisy = (speech + rng.standard_normal(len(speech)).astype(np.float32) * 0.01).astype(np.float32)
    noise = (rng.standard_normal(ASR_RATE * 3) * 0.2).astype(np.float32)
    return {"speech": speech, "noisy": noisy, "noise": noise}


@pytest.mark.parametrize("settings", [
    {}, {"threshold": 0.3}, {"threshold": 0.8, "speech_pad_ms": 0}, {"min_silence_duration_ms": 400},
    {"min_speech_duration_ms": 1000, "speech_pad_ms": 200}],
    ids=["defaults", "threshold-0.3", "threshold-0.8-no-pad", "silence-400", "speech-1000-pad-200"])
def test_segments_and_probs_equal_silero_get_speech_timestamps(signals, settings):
    vad = SileroVad(settings)
    full = {**vad.settings}
    found = {}
    for name, audio in signals.items():
        want, want_probs = silero_segments(audio, full)
        found[name] = want
        got, probs = vad.segments_and_probs(audio)
        assert got == want, (name, settings)
        assert vad.segments(audio) == want, (name, settings)
        assert probs.dtype == np.float32 and [float(p) for p in probs] == want_probs, name
    assert found["speech"] and found["noisy"]  # speech was found at all, so segments were compared


def test_silence_and_short_audio_give_no_segments():
    vad = SileroVad()
    assert vad.segments(np.zeros(ASR_RATE, np.float32)) == []
    assert vad.segments(np.full(300, 0.5, np.float32)) == []
    segs, probs = vad.segments_and_probs(np.zeros(1025, np.float32))
    assert segs == [] and len(probs) == 3


def test_the_vad_never_imports_torch(signals, tmp_path):
    audio = tmp_path / "a.npy"
    np.save(audio, signals["speech"])
    code = ("import sys, numpy as np\n"
            "from duplexeval_asr.vad import SileroVad\n"
            f"segs = SileroVad().segments(np.load({str(audio)!r}))\n"
            "assert segs, segs\n"
            "print('torch' in sys.modules)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False"


def test_loading_the_vad_leaves_the_environment_alone(signals, tmp_path):
    """The stage records its numeric variables (OMP_* among them): loading the VAD in the stage's
    own process must not add one."""
    audio = tmp_path / "a.npy"
    np.save(audio, signals["speech"])
    code = ("import os, numpy as np\n"
            "from duplexeval_asr.vad import SileroVad\n"
            f"assert SileroVad().segments(np.load({str(audio)!r}))\n"
            "print(os.environ.get('OMP_NUM_THREADS'))\n")
    import os
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "None"
