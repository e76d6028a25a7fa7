"""Fixtures of the asr-aligner tests: Piper phrases at exactly known times.

Each phrase is synthesized with Piper alone (deterministic settings), quantized as a WAV
file will be and trimmed so its first and last samples are audible (|x| > 1e-3), then placed
after an exact-zero silence: where every phrase starts is known to the sample, so the onset
of each phrase's first word is the truth a backend's word times are checked against (word
onsets inside a phrase are not known by construction and are not checked).
"""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

from ..conftest import exact_speech

SR = 16000
LEVEL = 1e-3
LEAD_S = 0.5
GAP_S = 1.0
# Plain words, no digits (tiny.en writes "nine" as "9"), phrases that begin with a clear onset.
PHRASES = ["Please tell me about the weather.", "Tomorrow it will rain in London.",
           "Bring a coat to work.", "Maybe we can visit the museum.", "Thank you very much."]

# Backends checked on speech: (label, backend, backend_args). A backend whose model or package
# is not available here is skipped with the reason (never silently); parakeet needs NeMo and a
# local .nemo file named by $DUPLEXEVAL_PARAKEET_MODEL.
BACKEND_CASES = [
    ("faster-whisper", "faster-whisper", {}),
    ("whisper-timestamped", "whisper-timestamped", {}),
    ("stable-ts-openai", "stable-ts", {}),
    ("stable-ts-faster-whisper", "stable-ts", {"engine": "faster-whisper"}),
    ("parakeet", "parakeet", {"model": os.environ.get("DUPLEXEVAL_PARAKEET_MODEL")}),
]


def phrase_audio(text: str) -> np.ndarray:
    return exact_speech(text, SR, LEVEL)


def zeros(seconds: float) -> np.ndarray:
    return np.zeros(int(round(seconds * SR)), dtype=np.float32)


def norm_words(text: str) -> list[str]:
    return [w for w in (re.sub(r"[^a-z']", "", t.lower()) for t in text.split()) if w]


def wer(ref: list[str], hyp: list[str]) -> float:
    d = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        prev, d[0] = d[0], i
        for j, h in enumerate(hyp, 1):
            prev, d[j] = d[j], min(d[j] + 1, d[j - 1] + 1, prev + (r != h))
    return d[len(hyp)] / max(1, len(ref))


@pytest.fixture(scope="session")
def phrases():
    """(audio, [(phrase, start_s, end_s)]): the phrases after LEAD_S, GAP_S apart."""
    parts, truth, t = [zeros(LEAD_S)], [], LEAD_S
    for p in PHRASES:
        a = phrase_audio(p)
        truth.append((p, t, t + len(a) / SR))
        parts += [a, zeros(GAP_S)]
        t += len(a) / SR + GAP_S
    return np.concatenate(parts), truth


@pytest.fixture(scope="session")
def asr_cache(tmp_path_factory):
    """A private DUPLEXEVAL_CACHE for the converted checkpoint (converted once per session)."""
    root = tmp_path_factory.mktemp("cache")
    old = os.environ.get("DUPLEXEVAL_CACHE")
    os.environ["DUPLEXEVAL_CACHE"] = str(root)
    yield root
    if old is None:
        os.environ.pop("DUPLEXEVAL_CACHE", None)
    else:
        os.environ["DUPLEXEVAL_CACHE"] = old


_BUILT: dict = {}


def build_backend(name: str, args: dict):
    """The backend, built once per session; pytest.skip with the reason when unavailable."""
    from duplexeval_common.cli import build
    from duplexeval_common.errors import MissingDependency
    from duplexeval_asr.backends import BACKENDS
    key = (name, tuple(sorted((k, str(v)) for k, v in args.items())))
    if key not in _BUILT:
        try:
            _BUILT[key] = build(name, BACKENDS.load(name), args)
        except MissingDependency as exc:
            _BUILT[key] = exc
    got = _BUILT[key]
    if isinstance(got, Exception):
        pytest.skip(f"ASR backend {name} unavailable offline: {got}")
    return got
