"""The benchmarks `duplexeval eval --benchmark` runs, each one declarative unit.

A benchmark module (one per benchmark, in this package) defines `BENCHMARK`, a `Benchmark`: its
datasets, its default dataset and judge, the judges it accepts, the plan of stages (`plan`), how
the aggregate stage's metrics become run.json's summary (`summary`) and which samples its metrics
leave out (`missing`), and the command that scores a tree made elsewhere (`score_command`, what
`make score BENCHMARK=<name>` runs). Adding a benchmark is a module here and one line in
`MODULES`; the orchestrator's commands (eval, show, report, archive, rescore) read everything
else from the unit. Modules are imported when a benchmark is first asked for.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from duplexeval_common.errors import DuplexEvalError

# name -> module of this package defining BENCHMARK
MODULES = {"fdb-v1": "fdb_v1", "mtr": "mtr"}
DEFAULT = "fdb-v1"


@dataclass(frozen=True)
class Dataset:
    name: str
    component: str   # the stage that produces the samples
    path: Path       # its source folder (scripts)
    summary: str


@dataclass(frozen=True)
class Benchmark:
    name: str
    title: str
    datasets: tuple[Dataset, ...]
    default_dataset: str
    default_judge: str
    judges: tuple[str, ...]                     # the judges its judge stage accepts
    plan: Callable[..., list]                   # plan(**Options) -> [StageSpec]
    summary: Callable[[dict], dict]             # metrics.json -> run.json summary
    missing: Callable[[Path], dict]             # aggregate stage folder -> {sample: why}
    score_command: tuple[str, ...]              # `aggregator ...` scoring a tree: + --tree T --out O
    components: tuple[str, ...] = field(default=())  # the images it needs besides the runner's
    judge_notes: dict = field(default_factory=dict)  # judge -> a line printed with its numbers

    def dataset(self, name: str) -> Dataset | None:
        return next((d for d in self.datasets if d.name == name), None)


_loaded: dict[str, Benchmark] = {}


def names() -> list[str]:
    return sorted(MODULES)


def get(name: str) -> Benchmark:
    if name not in MODULES:
        raise DuplexEvalError(f"unknown benchmark {name!r}; known: {', '.join(names())}")
    if name not in _loaded:
        b = importlib.import_module(f"{__name__}.{MODULES[name]}").BENCHMARK
        if b.name != name:
            raise DuplexEvalError(f"benchmark module {MODULES[name]} defines {b.name!r}, not {name!r}")
        _loaded[name] = b
    return _loaded[name]


def all_benchmarks() -> list[Benchmark]:
    return [get(n) for n in names()]


def builtin_datasets() -> dict[str, tuple[str, Benchmark]]:
    """{dataset name: (benchmark name, Benchmark)}; a dataset declared by two benchmarks is an error."""
    out: dict[str, tuple[str, Benchmark]] = {}
    for b in all_benchmarks():
        for d in b.datasets:
            if d.name in out:
                raise DuplexEvalError(f"dataset {d.name!r} is declared by benchmarks {out[d.name][0]!r} "
                                      f"and {b.name!r}")
            out[d.name] = (b.name, b)
    return out


def of_dataset(name: str, root=None) -> str | None:
    """The benchmark a dataset belongs to: a built-in one's, or an imported one's (its manifest)."""
    known = builtin_datasets()
    if name in known:
        return known[name][0]
    from ..catalog import imported_benchmark
    return imported_benchmark(name, root)


def resolve(benchmark: str | None, dataset: str | None, root=None) -> tuple[Benchmark, str]:
    """The benchmark and dataset of `eval`: each given one, else inferred from the other, else the
    defaults (fdb-v1 on fdb-mini). A dataset of another benchmark is a one-line error."""
    if benchmark is None:
        benchmark = (of_dataset(dataset, root) if dataset else None) or DEFAULT
    b = get(benchmark)
    if dataset is None:
        return b, b.default_dataset
    owner = of_dataset(dataset, root)
    if owner is not None and owner != b.name:
        raise DuplexEvalError(f"dataset {dataset!r} belongs to benchmark {owner!r}, not {b.name!r} "
                              f"(use --benchmark {owner}, or one of: "
                              f"{', '.join(d.name for d in b.datasets)})")
    return b, dataset
