"""`silence`: a control that never speaks (all-zero output)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..events import EventLog
from ..protocol import BaseRunner, resolve_args


class SilenceRunner(BaseRunner):
    name = "silence"
    clock = "simulated"
    deterministic = True
    in_sr = None
    out_sr = None

    def __init__(self, seed: int | None = None, **args: Any):
        resolve_args(self.name, {}, args)
        self.seed = seed

    def run(self, user: np.ndarray, sr: int, *, log: EventLog) -> np.ndarray:
        log.stats.update({"replies": 0, "interrupts": 0})
        return np.zeros(len(user), dtype=np.float32)
