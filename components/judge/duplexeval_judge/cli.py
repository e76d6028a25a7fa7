"""`judge` command: the standard `run` stage plus `list` and `check`.

The stage judges what the benchmark its settings name says (its `judge` hook: a task that selects
the samples, builds its judges from this component's registry (judges.py), gives each sample's
prompt fields and writes its records). Settings (schemas/config-judge.schema.json): benchmark,
judge (a name of `judge list`; default: the task's), judge_args (that judge's arguments). An LLM
judge's items are judged concurrently in a pre-pass over this invocation's shard, before the
per-sample loop writes each sample through the stage contract.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from duplexeval_common import benchmarks
from duplexeval_common.cli import component_group
from duplexeval_common.samples import Inputs
from duplexeval_common.stage import Stage

from . import __version__
from .judges import JUDGES


@dataclass
class JudgeStage(Stage):
    """The stage, remembering what `run` was asked (output folder, shard) so that setup can judge
    this run's samples concurrently before the per-sample loop."""

    plan: dict = field(default_factory=dict)

    def run(self, input_dirs, output, config, allow_failures=False, shard=(0, 1)):
        self.plan.update(output=Path(output), shard=tuple(shard))
        return super().run(input_dirs, output, config, allow_failures, shard)


def make_stage(config: dict) -> Stage:
    task = benchmarks.of_config(config, "judge").hook("judge")(config, JUDGES)
    seen: dict = {}

    def select(inputs: Inputs, c: dict):
        task.check()  # a judge or argument the task cannot use stops the stage before anything
        samples = task.select(inputs)
        seen.update(inputs=inputs, samples=samples)
        return samples

    def setup(c: dict) -> None:
        task.setup()
        if "samples" in seen and stage.plan:
            i, n = stage.plan["shard"]
            mine = [s for k, s in enumerate(seen["samples"]) if k % n == i]
            task.prefetch(seen["inputs"], mine, stage.plan["output"], c)

    stage = JudgeStage("judge", __version__, task.process, finalize=task.finalize, select=select,
                       setup=setup, check=lambda c: task.check())
    return stage


main = component_group("judge", "Judge a stage's samples as their benchmark asks (an LLM, an embedding, or none).",
                       __version__, make_stage, JUDGES)
