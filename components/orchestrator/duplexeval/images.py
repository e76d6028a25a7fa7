"""`python -m duplexeval.images BENCHMARK DATASET MODEL`: the components whose images a docker
run needs (the benchmark's, then the model's runner), one line, for make's eval-images. Empty
arguments take the defaults of `duplexeval eval`."""

from __future__ import annotations

import sys

from duplexeval_common.cli import one_line_errors


@one_line_errors
def main(argv: list[str]) -> None:
    from . import catalog
    from .benchmarks import resolve
    benchmark, dataset, model = (list(argv) + ["", "", ""])[:3]
    bench, _ = resolve(benchmark or None, dataset or None)
    runner = catalog.model(model or "cascade").component
    print(" ".join(dict.fromkeys([*bench.components, runner])))


if __name__ == "__main__":
    main(sys.argv[1:])
