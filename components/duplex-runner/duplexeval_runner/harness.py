"""Run one runner over one user signal: rates in, exact length out.

Rates are converted once each way: the input to the runner's `in_sr`, the
output from its `out_sr` straight back to the input's rate, and only then
fitted to exactly `len(user)` samples (the contract in protocol.py): each
resample can round the length by a sample, so the length is fixed once, last.
"""

from __future__ import annotations

import numpy as np

from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.wavio import fit_length, resample

from .events import EventLog
from .protocol import CLOCKS, Runner


class RunnerFailed(DuplexEvalError):
    """The runner broke its contract (bad output); one line, the sample fails."""


def render(runner: Runner, user: np.ndarray, sr: int, log: EventLog) -> np.ndarray:
    """The runner's reply to `user` (at `sr`), at `sr`, exactly len(user) samples."""
    if runner.clock not in CLOCKS:
        raise RunnerFailed(f"runner {runner.name!r} declares an unknown clock {runner.clock!r}")
    user = np.asarray(user, dtype=np.float32).reshape(-1)
    in_sr = runner.in_sr or sr
    x = resample(user, sr, in_sr)
    log.emit("session_start", 0.0, sr=sr, runner_in_sr=in_sr, n_samples=len(user))
    y = runner.run(x, in_sr, log=log)
    out_sr = runner.out_sr or in_sr
    y = np.asarray(y, dtype=np.float32)
    if y.ndim != 1:
        raise RunnerFailed(f"runner {runner.name!r} returned audio of shape {y.shape}, expected mono")
    if not np.isfinite(y).all():
        raise RunnerFailed(f"runner {runner.name!r} returned non-finite audio")
    # Length in output-rate samples first, so one resample gives the exact count.
    y = fit_length(y, int(round(len(user) * out_sr / sr)))
    out = fit_length(resample(y, out_sr, sr), len(user))
    duration = len(user) / sr
    log.emit("end", duration, n_samples=len(out))
    return out
