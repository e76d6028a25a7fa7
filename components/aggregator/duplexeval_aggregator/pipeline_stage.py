"""`aggregator run`: score the pipeline's stages through the same code as a tree.

The input stages are merged into a temporary tree in the official layout
(links, no copies), so a duplexeval run and an official tree are scored by
one function. Samples an upstream stage failed are passed on as ineligible.

The stage scores what it can: an eligible sample whose files fail a load-time check
(a word ending before it starts or more than 0.5 s past T, an annotation outside the
window, unreadable audio, a manifest hash mismatch, ...) does not stop the stage. Every
sample is linked into the temporary tree; scoring runs with exclude_invalid, so such a
sample becomes ineligible with the reason "invalid:<code>" (its one-line problem in its
unified-samples.jsonl row and in unified.json's per-subset "invalid" list), counts in
coverage, and is left out of the official column too: the official functions read a view
of the subset folder without it (score.py). The VAD cache is the user cache
(user_cache_dir()/vad, i.e. $DUPLEXEVAL_CACHE/vad when the orchestrator sets it), the same
default as `aggregator fdb-v1`, so a rescore of audio already seen is warm.

Settings (schemas/config-aggregator.schema.json): `benchmark` ("fdb-v1", the default, or "mtr"),
`icc_gt` (the ICC ground-truth file) and `official_revision` (the upstream Full-Duplex-Bench
revision the official column reproduces, a name or alias of revisions.py; default
revisions.DEFAULT). An unknown revision stops `aggregator check` and `aggregator run` with one
line (exit code 2).

With "benchmark": "mtr" the stage scores MTR-DuplexBench round samples instead
(duplexeval_aggregator.mtr.pipeline: the scoring tree under OUT/tree/, then metrics.json,
rounds.jsonl and report.md by the code of `aggregator mtr`); `icc_gt` and `official_revision`
do not apply to it (a revision given is still checked).
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from pathlib import Path

from duplexeval_common.jsonio import atomic_write_text, read_json
from duplexeval_common.samples import Inputs
from duplexeval_common.stage import Stage, StageContext

from . import __version__, revisions

TREE_FILES = ("input.wav", "pause.json", "turn_taking.json", "interrupt.json", "output.wav",
              "output.json", "rating.json", "runner.json")
ROOT_FILES = ("manifest.json", "judge.json", "icc_gt_distribution.json")


def link_tree(inputs: Inputs, tree: Path) -> dict[str, str]:
    """Link each sample's files into tree/<subset>/<id>/; return upstream failures."""
    failures = {}
    for name in ROOT_FILES:
        src = inputs.root_file(name)
        if src is not None:
            os.symlink(src.resolve(), tree / name)
    for s in inputs.samples():
        d = tree / s.subset / s.id
        d.mkdir(parents=True)
        for name in TREE_FILES:
            src = inputs.find(s, name)
            if src is not None:
                os.symlink(src.resolve(), d / name)
        reason = inputs.upstream_failure(s)
        if reason:
            failures[s.key] = reason
    return failures


# The merged tree is only folders and links: it is made in a tmpfs when one is usable (thousands of
# entries cost seconds on a busy disk and milliseconds in memory), else in the temporary folder.
# Where it lies does not change a number: the stage scores with canonical_order, so the official
# column walks its folders in the canonical order, not the file system's (official.listdir).
TMPFS = Path("/dev/shm")


def _tmpfs() -> Path | None:
    try:
        if TMPFS.is_dir() and os.access(TMPFS, os.W_OK | os.X_OK):
            return TMPFS
    except OSError:
        pass
    return None


def merged_tree(inputs: Inputs, stack: contextlib.ExitStack) -> tuple[Path, dict[str, str]]:
    """(the temporary merged tree, upstream failures); removed when `stack` closes."""
    for where in (_tmpfs(), None):
        try:
            tree = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="duplexeval-tree-", dir=where)))
            return tree, link_tree(inputs, tree)
        except OSError:
            if where is None:
                raise
    raise AssertionError("unreachable")


def report_markdown(unified: dict) -> str:
    from .report import render
    return ("# duplexeval report\n\n"
            "Official-compatible and unified Full-Duplex-Bench v1.0 metrics side by side "
            "(docs/metrics.md defines each).\n\n```\n" + render(unified) + "```\n")


def score_stage(sctx: StageContext) -> None:
    from .report import invalid_lines
    from .score import score_tree
    with contextlib.ExitStack() as stack:
        tree, failures = merged_tree(sctx.inputs, stack)
        score_tree(tree, sctx.output, sctx.config.get("icc_gt"), None,  # None: the user cache
                   failures=failures, exclude_invalid=True,
                   link_roots=tuple(d.resolve() for d in sctx.inputs.dirs),
                   official_revision=official_revision(sctx.config), canonical_order=True)
    unified = read_json(sctx.output / "unified.json")
    for line in invalid_lines(unified):
        print(f"[aggregator] {line}", file=sys.stderr, flush=True)
    atomic_write_text(sctx.output / "report.md", report_markdown(unified))


def official_revision(config: dict) -> revisions.Revision:
    """The stage's `official_revision` setting (default revisions.DEFAULT); UnknownRevision
    (one line) for a name revisions.py does not know."""
    return revisions.get(config.get("official_revision") or revisions.DEFAULT)


def make_stage(config: dict) -> Stage:
    official_revision(config)  # an unknown revision stops `check` and `run` before any work
    finalize = score_stage
    if config.get("benchmark") == "mtr":
        from .mtr.pipeline import score_stage as finalize
    return Stage("aggregator", __version__, lambda ctx: None, finalize=finalize,
                 select=lambda inputs, cfg: [], check=official_revision)
