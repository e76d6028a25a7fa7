"""The pipeline as a list of stage specs.

A stage spec names its component, its settings and the stages (or source
folders) it reads. Keys are derived from these, so the plan alone decides
what can be reused from the store.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from . import catalog


@dataclass(frozen=True)
class Source:
    """A folder of the repository read by a stage (e.g. dataset scripts)."""
    name: str
    path: Path


@dataclass
class StageSpec:
    name: str
    component: str
    config: dict
    inputs: list = field(default_factory=list)  # names of earlier stages, or Source
    network: bool = False


def fdb_pipeline(model: str, dataset: str, asr: str, judge: str, limit: int | None,
                 runner_args: dict | None = None) -> list[StageSpec]:
    m = catalog.model(model)
    ds_component, ds_source, _ = catalog.dataset(dataset)
    return [
        StageSpec("dataset", ds_component, {"dataset": dataset, "limit": limit},
                  [Source(dataset, ds_source)]),
        StageSpec("runner", "duplex-runner",
                  {"runner": m.runner, "runner_args": {**m.runner_args, **(runner_args or {})}, "seed": 0},
                  ["dataset"], network=m.network),
        StageSpec("asr", "asr-aligner", {"backend": asr, "backend_args": {}}, ["dataset", "runner"]),
        StageSpec("judge", "judge", {"judge": judge, "judge_args": {}}, ["dataset", "asr"],
                  network=judge not in ("none", "embedding-relevance")),
        StageSpec("aggregate", "aggregator", {"benchmark": "fdb-v1"},
                  ["dataset", "runner", "asr", "judge"]),
    ]
