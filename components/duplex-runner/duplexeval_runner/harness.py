"""Run one runner over one user signal: rates in, exact length out.

Rates are converted once each way: the input to the runner's `in_sr`, the output from its
`out_sr` straight back to the input's rate, and only then fitted to exactly `len(user)`
samples: each resample can round the length by a sample, so the length is fixed once, last.
Which clock feeds the runner is the runner's kind (protocol.py, clocks.py).
"""

from __future__ import annotations

import numpy as np

from duplexeval_common.wavio import fit_length, resample

from .clocks import RunnerFailed, drive_offline, drive_step, drive_stream, n_out
from .events import EventLog
from .protocol import CLOCKS, SampleInfo, Session, kind_of

__all__ = ["RunnerFailed", "render"]
DRIVERS = {"step": drive_step, "stream": drive_stream, "offline": drive_offline}


def render(runner, user: np.ndarray, sr: int, log: EventLog, *, key: str = "sample/sample") -> tuple[np.ndarray, Session]:
    """The runner's reply to `user` (at `sr`), at `sr`, exactly len(user) samples, and its session."""
    if runner.clock not in CLOCKS:
        raise RunnerFailed(f"runner {runner.name!r} declares an unknown clock {runner.clock!r}")
    driver = DRIVERS[kind_of(runner)]
    user = np.asarray(user, dtype=np.float32).reshape(-1)
    in_sr = runner.in_sr or sr
    x = resample(user, sr, in_sr).astype(np.float32, copy=False)
    out_sr = runner.out_sr or in_sr
    subset, _, sid = key.partition("/")
    info = SampleInfo(key=key, subset=subset, id=sid, duration_s=len(user) / sr, sr=in_sr, n_samples=len(x))
    log.emit("session_start", 0.0, sr=sr, runner_in_sr=in_sr, runner_out_sr=out_sr, n_samples=len(user),
             clock=runner.clock)
    session = driver(runner, x, info, out_sr, log)
    # Length in output-rate samples first, so one resample gives the exact count.
    y = session.buf.audio(n_out(len(user), sr, out_sr))
    out = fit_length(resample(y, out_sr, sr), len(user))
    session.stats["placed_after_input_s"] = round(max(session.buf.write_pos - len(y), 0) / out_sr, 6)
    log.emit("end", len(user) / sr, n_samples=len(out))
    return out, session
