"""The aggregate stage of Full-Duplex-Bench v1.0: the stage's samples scored as a tree.

The input stages are merged into a temporary tree in the official layout (links, no copies:
duplexeval_common.trees), so a duplexeval run and an official tree are scored by one function
(score.score_tree). Samples an upstream stage failed are passed on as ineligible.

The stage scores what it can: an eligible sample whose files fail a load-time check (a word
ending before it starts or more than 0.5 s past T, an annotation outside the window, unreadable
audio, a manifest hash mismatch, ...) does not stop the stage. Scoring runs with exclude_invalid,
so such a sample becomes ineligible with the reason "invalid:<code>" (its one-line problem in its
unified-samples.jsonl row and in unified.json's per-subset "invalid" list), counts in coverage,
and is left out of the official column too. The VAD cache is the user cache (the same default as
`aggregator score`), so a rescore of audio already seen is warm. Each subset's task is its
manifest rows' (the dataset's declaration), which the merged tree carries at its root.

Settings (the stage config beside "benchmark"): `icc_gt` (the ICC ground-truth file) and
`official_revision` (the upstream Full-Duplex-Bench revision the official column reproduces,
a name or alias of revisions.py; default revisions.DEFAULT). An unknown revision stops `check`
and `run` with one line (exit code 2). It writes metrics.json, unified.json,
unified-samples.jsonl and report.md.
"""

from __future__ import annotations

import contextlib
import sys

from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.jsonio import atomic_write_text, read_json
from duplexeval_common.stage import StageContext
from duplexeval_common.trees import merged_tree

from . import revisions

TREE_FILES = ("input.wav", "pause.json", "turn_taking.json", "interrupt.json", "output.wav",
              "output.json", "rating.json", "runner.json",
              "cf.json", "cf_output.wav", "cf_runner.json")  # a counterfactual twin's (counterfactual.py)
ROOT_FILES = ("manifest.json", "judge.json", "icc_gt_distribution.json")
SETTINGS = ("icc_gt", "official_revision")


def report_markdown(unified: dict) -> str:
    from .report import render
    return ("# duplexeval report\n\n"
            "Official-compatible and unified Full-Duplex-Bench v1.0 metrics side by side "
            "(benchmarks/fdb-v1/README.md defines each).\n\n```\n" + render(unified) + "```\n")


def official_revision(config: dict) -> revisions.Revision:
    """The stage's `official_revision` setting (default revisions.DEFAULT); UnknownRevision
    (one line) for a name revisions.py does not know."""
    name = config.get("official_revision")
    if name is not None and not isinstance(name, str):
        raise DuplexEvalError(f"aggregator: official_revision must be a revision's name, got {name!r}")
    return revisions.get(name or revisions.DEFAULT)


def check(config: dict) -> None:
    unknown = sorted(set(config) - {"benchmark", *SETTINGS})
    if unknown:
        raise DuplexEvalError(f"aggregator: fdb-v1 scoring has no setting {', '.join(unknown)} "
                              f"(known: {', '.join(SETTINGS)})")
    official_revision(config)


def score(sctx: StageContext) -> None:
    from .report import invalid_lines
    from .score import score_tree
    with contextlib.ExitStack() as stack:
        tree, failures = merged_tree(sctx.inputs, stack, TREE_FILES, ROOT_FILES)
        score_tree(tree, sctx.output, sctx.config.get("icc_gt"), None,  # None: the user cache
                   failures=failures, exclude_invalid=True,
                   link_roots=tuple(d.resolve() for d in sctx.inputs.dirs),
                   official_revision=official_revision(sctx.config), canonical_order=True)
    unified = read_json(sctx.output / "unified.json")
    for line in invalid_lines(unified):
        print(f"[aggregator] {line}", file=sys.stderr, flush=True)
    atomic_write_text(sctx.output / "report.md", report_markdown(unified))
