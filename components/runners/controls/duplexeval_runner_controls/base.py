"""What every control runner is: a StepRunner on the simulated clock, deterministic, at the input's
own rate both ways (`in_sr = out_sr = None`), so its output is known by construction."""

from __future__ import annotations

from duplexeval_runner.protocol import StepRunner


class ControlRunner(StepRunner):
    clock = "simulated"
    deterministic = True
    in_sr = None
    out_sr = None
