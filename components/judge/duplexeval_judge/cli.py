"""`judge` command: the standard `run` stage plus `list` and `check`."""

from __future__ import annotations

from duplexeval_common.cli import build, check_kwargs, component_group
from duplexeval_common.stage import Stage

from . import __version__
from .judges import JUDGES
from .rate import interruption_samples, judge_sample, write_summary

DEFAULTS = {"judge": "embedding-relevance", "judge_args": {}}


def make_stage(config: dict) -> Stage:
    cfg = {**DEFAULTS, **config}
    state: dict = {}
    what = f"judge {cfg['judge']!r}: judge_args"

    def check(_cfg: dict) -> None:
        check_kwargs(what, JUDGES.load(cfg["judge"]), cfg["judge_args"])

    def setup(_cfg: dict) -> None:
        state["judge"] = build(what, JUDGES.load(cfg["judge"]), cfg["judge_args"])

    def finalize(sctx) -> None:
        write_summary(sctx, state["judge"])

    return Stage("judge", __version__, lambda ctx: judge_sample(ctx, state["judge"]),
                 finalize=finalize, select=interruption_samples, setup=setup, check=check)


main = component_group("judge", "Rate the reply after each user interruption (0-5, the official scale).",
                       __version__, make_stage, JUDGES)
