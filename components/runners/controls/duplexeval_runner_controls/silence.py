"""`silence`: a control that never speaks (all-zero output).

A StepRunner that ignores every frame. Its frames are one second long, a whole number of
samples at any integer rate, so any input rate works.

Multi-round samples (duplexeval_runner/rounds.py): `history` "teacher-forced"; `force` ignores the
frame like `step`, so a round's output is the GT history before start_s and zeros after.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from duplexeval_runner.protocol import Session

from .base import ControlRunner


class SilenceRunner(ControlRunner):
    name = "silence"
    frame_ms = 1000.0
    history = "teacher-forced"

    def __init__(self, seed: int | None = None, **args: Any):
        self.SETTINGS.resolve(self.name, args)  # it has none: any name is unknown
        self.seed = seed

    def step(self, frame: np.ndarray, session: Session) -> None:
        return None

    def force(self, user_frame: np.ndarray, assistant_frame: np.ndarray, session: Session) -> None:
        return None

    def close(self, session: Session) -> None:
        session.stats.update({"replies": 0, "interrupts": 0})
