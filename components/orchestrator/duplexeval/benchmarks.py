"""The orchestrator's view of the benchmarks (duplexeval_common.benchmarks: packages found by
entry point): which benchmark and dataset an `eval` runs, and what a dataset belongs to.

A built-in dataset belongs to the benchmark that declares it; an imported one (under
<home>/datasets/<name>/) to the benchmark its manifest names (the importer writes it).
"""

from __future__ import annotations

from duplexeval_common.benchmarks import Benchmark, all_benchmarks, builtin_datasets, default, get, names
from duplexeval_common.errors import DuplexEvalError

__all__ = ["Benchmark", "all_benchmarks", "builtin_datasets", "default", "get", "names", "of_dataset",
           "resolve"]


def of_dataset(name: str, root=None) -> str | None:
    """The benchmark a dataset belongs to: a built-in one's, or an imported one's (its manifest)."""
    known = builtin_datasets()
    if name in known:
        return known[name][0]
    from .catalog import imported_benchmark
    return imported_benchmark(name, root)


def resolve(benchmark: str | None, dataset: str | None, root=None) -> tuple[Benchmark, str]:
    """The benchmark and dataset of `eval`: each given one, else inferred from the other, else the
    defaults (the default benchmark on its default dataset). A dataset of another benchmark is a
    one-line error."""
    if benchmark is None:
        owner = of_dataset(dataset, root) if dataset else None
        b = get(owner) if owner else default()
    else:
        b = get(benchmark)
    if dataset is None:
        return b, b.default_dataset
    owner = of_dataset(dataset, root)
    if owner is not None and owner != b.name:
        raise DuplexEvalError(f"dataset {dataset!r} belongs to benchmark {owner!r}, not {b.name!r} "
                              f"(use --benchmark {owner}, or one of: "
                              f"{', '.join(d.name for d in b.datasets)})")
    return b, dataset
