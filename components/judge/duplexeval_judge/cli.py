"""`judge` command: the standard `run` stage plus `list` and `check`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from duplexeval_common.cli import build, check_kwargs, component_group
from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.samples import Inputs
from duplexeval_common.stage import Stage

from . import __version__
from .judges import JUDGES
from .llm_judge import LLMJudge
from .mtr_stage import DEFAULT_JUDGE as MTR_DEFAULT_JUDGE
from .mtr_stage import MTRJudging
from .rate import Judging, check_prompt, interruption_samples, judge_sample, prefetch, write_summary

DEFAULTS = {"judge": "embedding-relevance", "judge_args": {}}
BENCHMARKS = ("fdb-v1", "mtr")


@dataclass
class JudgeStage(Stage):
    """The stage, remembering what `run` was asked (output folder, shard) so that setup can judge
    this run's samples concurrently before the per-sample loop."""

    plan: dict = field(default_factory=dict)

    def run(self, input_dirs, output, config, allow_failures=False, shard=(0, 1)):
        self.plan.update(output=Path(output), shard=tuple(shard))
        return super().run(input_dirs, output, config, allow_failures, shard)


def make_stage(config: dict) -> Stage:
    benchmark = config.get("benchmark", "fdb-v1")
    if benchmark not in BENCHMARKS:
        raise DuplexEvalError(f"judge config: benchmark must be one of {', '.join(BENCHMARKS)}, got {benchmark!r}")
    if benchmark == "mtr":
        return make_mtr_stage(config)
    cfg = {**DEFAULTS, **config}
    state = Judging()
    what = f"judge {cfg['judge']!r}: judge_args"
    seen: dict = {}

    def check(_cfg: dict) -> None:
        cls = JUDGES.load(cfg["judge"])
        check_kwargs(what, cls, cfg["judge_args"])
        if hasattr(cls, "check"):  # LLM judges: arguments and the prompt, without network or model
            check_prompt(cls.check(**cfg["judge_args"]))

    def select(inputs: Inputs, c: dict):
        samples = interruption_samples(inputs, c)
        seen.update(inputs=inputs, samples=samples)
        return samples

    def setup(c: dict) -> None:
        cls = JUDGES.load(cfg["judge"])
        if hasattr(cls, "check"):
            check_kwargs(what, cls, cfg["judge_args"])
            check_prompt(cls.check(**cfg["judge_args"]))
        state.judge = build(what, cls, cfg["judge_args"])
        if isinstance(state.judge, LLMJudge) and "samples" in seen and stage.plan:
            i, n = stage.plan["shard"]
            mine = [s for k, s in enumerate(seen["samples"]) if k % n == i]
            prefetch(state, seen["inputs"], mine, stage.plan["output"], c)

    def finalize(sctx) -> None:
        write_summary(sctx, state)

    stage = JudgeStage("judge", __version__, lambda ctx: judge_sample(ctx, state),
                       finalize=finalize, select=select, setup=setup, check=check)
    return stage


def make_mtr_stage(config: dict) -> Stage:
    """The MTR-DuplexBench mode (duplexeval_judge.mtr_stage): one judgement per judged round."""
    state = MTRJudging(config.get("judge", MTR_DEFAULT_JUDGE), dict(config.get("judge_args") or {}))
    seen: dict = {}

    def select(inputs: Inputs, c: dict):
        state.check()  # a judge or argument the mode cannot use stops the stage before anything
        samples = state.select(inputs)
        seen.update(inputs=inputs, samples=samples)
        return samples

    def setup(c: dict) -> None:
        state.setup()
        if "samples" in seen and stage.plan:
            i, n = stage.plan["shard"]
            mine = [s for k, s in enumerate(seen["samples"]) if k % n == i]
            state.prefetch(seen["inputs"], mine, stage.plan["output"], c)

    stage = JudgeStage("judge", __version__, state.process, finalize=state.finalize, select=select,
                       setup=setup, check=lambda c: state.check())
    return stage


main = component_group("judge", "Rate the reply after each user interruption (0-5, the official scale).",
                       __version__, make_stage, JUDGES)
