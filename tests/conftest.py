"""Shared fixtures: small synthetic audio with exact, known boundaries."""

from __future__ import annotations

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
