"""Scoring a Full-Duplex-Bench v1.0 tree made elsewhere: `aggregator score --benchmark fdb-v1`
(`make score TREE=... OUT=...`).

The tree is in the official layout, `<subset>/<id>/` with input.wav, output.wav, output.json and
the annotation (pause.json, turn_taking.json, interrupt.json; backchannel samples need only
input/output), as the upstream evaluation scripts read it; a subset's task is its manifest's, the
user's `--task SUBSET=TASK`, or its official name's (tasks.py). Where the tree holds the official
judge's rating.json files (the upstream example data does), the official rating column uses them.

Settings (`--option NAME=VALUE`): OPTIONS below. Exit codes: 0 scored; 2 bad input (one line
naming the sample and the problem; nothing written) or a bad setting.
"""

from __future__ import annotations

import sys
from pathlib import Path

from duplexeval_common.benchmarks import Option
from duplexeval_common.errors import DuplexEvalError, InputError

from . import revisions

OPTIONS = (
    Option("icc_gt", str, None, "ICC ground-truth distribution (the official icc_gt_distribution.json format)"),
    Option("cache_dir", str, None, "root of the VAD probability cache (default: the user cache, "
           "$DUPLEXEVAL_CACHE/vad, else $XDG_CACHE_HOME/duplexeval/vad, else ~/.cache/duplexeval/vad)"),
    Option("jobs", int, None, "VAD worker processes (default: all cores)", low=1),
    Option("vad_backend", str, "onnx", "Silero model file: onnx (silero_vad.onnx) or jit, the JIT "
           "model the official script loads", choices=("onnx", "jit")),
    Option("official_only", bool, False, "only the official column (no unified VAD)"),
    Option("exclude_invalid", bool, False, "score the rest when a sample fails a load-time check: list "
           "each such sample and its reason on stderr, make it ineligible (invalid:<code>) and record "
           "it in unified.json; default: the first problem stops with exit code 2"),
    Option("official_revision", str, revisions.DEFAULT, "upstream Full-Duplex-Bench revision whose "
           f"evaluator rules the official column reproduces: {revisions.known()}"),
    Option("quiet", bool, False, "no report and no progress"),
)


def score_tree(tree: Path, out: Path, tasks: dict[str, str], options: dict) -> int:
    """Score `tree` into `out` (metrics.json, unified.json, unified-samples.jsonl) and print the
    report; options are OPTIONS' checked values. Returns the exit code."""
    from duplexeval_common.jsonio import atomic_write_many as write_all, dumps, jsonl_text as jsonl

    from .report import invalid_lines, render
    from .score import build
    try:
        revision = revisions.get(options["official_revision"])
    except revisions.UnknownRevision as exc:
        raise DuplexEvalError(f"official_revision: {exc}") from None
    try:
        metrics, uni, rows = build(tree, options["icc_gt"] and Path(options["icc_gt"]),
                                   options["cache_dir"] and Path(options["cache_dir"]), out,
                                   options["vad_backend"], options["jobs"], None, options["quiet"],
                                   options["official_only"], exclude_invalid=options["exclude_invalid"],
                                   official_revision=revision, tasks=tasks)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for line in invalid_lines(uni):  # one line per excluded sample, even when quiet
        print(line, file=sys.stderr)
    write_all({out / "metrics.json": dumps(metrics), out / "unified.json": dumps(uni),
               out / "unified-samples.jsonl": jsonl(rows)})
    if not options["quiet"]:
        sys.stdout.write(render(uni))
    return 0
