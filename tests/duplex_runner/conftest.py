"""Fixtures of the duplex-runner tests: Piper speech with exact, known boundaries.

Speech is synthesized with Piper directly (deterministic settings), resampled
to the rate a test needs and trimmed so its first and last samples are
audible (|x| > 1e-3); silence is exact zeros. So where user speech starts and
ends is known by construction, to the sample.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from duplexeval_common.wavio import write_wav

from ..conftest import exact_speech

LEVEL = 1e-3


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: loads real models for tens of seconds (deselect with -m 'not slow')")


def _speech(text: str, sr: int) -> np.ndarray:
    return exact_speech(text, sr, LEVEL)


@pytest.fixture(scope="session")
def speech():
    """speech(text, sr) -> float32 Piper speech whose first and last samples are audible."""
    return _speech


def zeros(seconds: float, sr: int) -> np.ndarray:
    return np.zeros(int(round(seconds * sr)), dtype=np.float32)


def first_audible(x: np.ndarray, level: float = 0.0) -> int:
    idx = np.flatnonzero(np.abs(x) > level)
    return int(idx[0]) if len(idx) else -1


def make_dataset(root: Path, samples: dict[tuple[str, str], tuple[np.ndarray, int] | bytes]) -> Path:
    """An input stage folder: samples/<subset>/<id>/input.wav (audio, or raw bytes for a corrupt file)
    and manifest.json giving each sample the task its subset's name says (tests.conftest.task_of),
    as a dataset stage declares it (a runner's per-task profile reads it)."""
    import json

    from tests.conftest import task_of
    rows = []
    for (subset, sid), content in samples.items():
        d = root / "samples" / subset / sid
        d.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            (d / "input.wav").write_bytes(content)
        else:
            write_wav(d / "input.wav", content[0], content[1])
        rows.append({"subset": subset, "id": sid, "task": task_of(subset)})
    (root / "manifest.json").write_text(json.dumps({"dataset": "test", "samples": rows}))
    return root
