"""`aggregator run`: the aggregate stage, scored by the benchmark its settings name.

Settings (schemas/config-aggregator.schema.json): `benchmark`, plus that benchmark's own scoring
settings, which its `score` hook checks (`check(config)`, before anything runs; one line for an
unknown or bad one) and then uses (`score(stage context)`: it reads the merged input stages and
writes the stage's files). The stage processes no sample of its own: everything happens in
finalize, after the (empty) per-sample loop.
"""

from __future__ import annotations

from duplexeval_common import benchmarks
from duplexeval_common.stage import Stage

from . import __version__


def _scorer(config: dict):
    return benchmarks.of_config(config, "aggregator").hook("score")


def make_stage(config: dict) -> Stage:
    scorer = _scorer(config)
    scorer.check(config)  # a bad setting stops `check` and `run` before any work
    return Stage("aggregator", __version__, lambda ctx: None, finalize=scorer.score,
                 select=lambda inputs, cfg: [], check=scorer.check)
