"""Scoring an MTR-DuplexBench tree made elsewhere: `aggregator score --benchmark mtr --tree T
--out O` (`make score BENCHMARK=mtr`): metrics.json, rounds.jsonl and report.md (the benchmark's
doc page, "Scoring tree"). Exit codes: 0 scored; 1 some dialogues were invalid (each listed on
stderr, the rest scored); 2 bad input with `strict` (nothing written)."""

from __future__ import annotations

import sys
from pathlib import Path

from duplexeval_common.benchmarks import Option
from duplexeval_common.errors import DuplexEvalError, InputError

OPTIONS = (
    Option("strict", bool, False, "stop at the first invalid dialogue (exit 2, nothing written); default: list "
           "each invalid dialogue on stderr, score the rest, record them and exit 1"),
)


def score_tree(tree: Path, out: Path, tasks: dict[str, str], options: dict) -> int:
    from duplexeval_common.jsonio import atomic_write_many as write_all

    from .score import score_outputs
    if tasks:
        raise DuplexEvalError("--task does not apply to an MTR scoring tree (encoding.json names each "
                              "dialogue's task)")
    try:
        metrics, files = score_outputs(tree, strict=options["strict"])
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for bad in metrics["invalid"]:
        print(f"invalid: {bad['dialogue']}: {bad['problem']}", file=sys.stderr)
    write_all({out / name: text for name, text in files.items()})
    return 1 if metrics["invalid"] else 0
