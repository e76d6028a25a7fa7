"""Run one runner over one user signal: rates in, exact length out.

Rates are converted once each way: the input to the runner's `in_sr`, the output from its
`out_sr` straight back to the input's rate, and only then fitted to exactly `len(user)`
samples: each resample can round the length by a sample, so the length is fixed once, last.
Which clock feeds the runner is the runner's kind (protocol.py, clocks.py). A round sample
(rounds.py) is driven the same way, except that a teacher-forced StepRunner gets the frames of the
GT history through `force`; its output before the round's start is the GT history.
"""

from __future__ import annotations

import numpy as np

from duplexeval_common.wavio import fit_length, resample

from .clocks import RunnerFailed, drive_offline, drive_step, drive_stream, n_out
from .events import EventLog
from .protocol import CLOCKS, SampleInfo, Session, history_mode, kind_of
from .rounds import Round, model_audio_before

__all__ = ["RunnerFailed", "render"]
DRIVERS = {"step": drive_step, "stream": drive_stream, "offline": drive_offline}


def render(runner, user: np.ndarray, sr: int, log: EventLog, *, key: str = "sample/sample",
           round_: Round | None = None, task: str | None = None) -> tuple[np.ndarray, Session]:
    """The runner's reply to `user` (at `sr`), at `sr`, exactly len(user) samples, and its session.

    round_: a round sample (rounds.py): the runner meets the GT history its way (`history`), and
    the output before the round's start_s is the GT history (round_.history, at `sr`)."""
    if runner.clock not in CLOCKS:
        raise RunnerFailed(f"runner {runner.name!r} declares an unknown clock {runner.clock!r}")
    kind = kind_of(runner)
    driver = DRIVERS[kind]
    user = np.asarray(user, dtype=np.float32).reshape(-1)
    in_sr = runner.in_sr or sr
    x = resample(user, sr, in_sr).astype(np.float32, copy=False)
    out_sr = runner.out_sr or in_sr
    subset, _, sid = key.partition("/")
    mode = None
    if round_ is not None:
        mode = history_mode(runner)
        if len(round_.history) != len(user):
            raise RunnerFailed(f"{key}: the history is {len(round_.history)} samples, the input {len(user)}")
    info = SampleInfo(key=key, subset=subset, id=sid, duration_s=len(user) / sr, sr=in_sr, n_samples=len(x),
                      task=task, round=None if round_ is None else round_.data)
    log.emit("session_start", 0.0, sr=sr, runner_in_sr=in_sr, runner_out_sr=out_sr, n_samples=len(user),
             clock=runner.clock)
    if mode == "teacher-forced":
        # The GT model audio at in_sr, resampled and fitted exactly like the input.
        gt = fit_length(resample(round_.history, sr, in_sr), len(x))
        session = drive_step(runner, x, info, out_sr, log, forced=(gt, round_.start_index(in_sr)))
    else:
        session = driver(runner, x, info, out_sr, log)
    # Length in output-rate samples first, so one resample gives the exact count.
    y = session.buf.audio(n_out(len(user), sr, out_sr))
    out = fit_length(resample(y, out_sr, sr), len(user))
    session.stats["placed_after_input_s"] = round(max(session.buf.write_pos - len(y), 0) / out_sr, 6)
    if round_ is not None:
        cut = min(round_.start_index(sr), len(out))
        out[:cut] = round_.history[:cut]  # the GT history replaces the model's output before start_s
        replaced = model_audio_before(session.buf.segments, round_.start_index(out_sr), out_sr)
        session.round_record = round_.record(mode, replaced)
        log.emit("history_end", round_.start_s, history=mode, model_history_s=replaced,
                 **({"forced_steps": session.stats["forced_steps"]} if mode == "teacher-forced" else {}))
    log.emit("end", len(user) / sr, n_samples=len(out))
    return out, session
