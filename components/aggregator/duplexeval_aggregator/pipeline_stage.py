"""`aggregator run`: score the pipeline's stages through the same code as a tree.

The input stages are merged into a temporary tree in the official layout
(links, no copies), so a duplexeval run and an official tree are scored by
one function. Samples an upstream stage failed are passed on as ineligible.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from duplexeval_common.jsonio import atomic_write_text, read_json
from duplexeval_common.samples import Inputs
from duplexeval_common.stage import Stage, StageContext

from . import __version__

TREE_FILES = ("input.wav", "pause.json", "turn_taking.json", "interrupt.json", "output.wav",
              "output.json", "rating.json")
ROOT_FILES = ("manifest.json", "judge.json")


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


def score_stage(sctx: StageContext) -> None:
    from .report import render
    from .score import score_tree
    cache = os.environ.get("DUPLEXEVAL_CACHE")
    with tempfile.TemporaryDirectory(prefix="duplexeval-tree-") as tmp:
        tree = Path(tmp)
        failures = link_tree(sctx.inputs, tree)
        score_tree(tree, sctx.output, sctx.config.get("icc_gt"),
                   Path(cache) / "vad" if cache else tree / ".vad-cache", failures=failures)
    unified = read_json(sctx.output / "unified.json")
    atomic_write_text(sctx.output / "report.md", "# duplexeval report\n\n"
                      "Official-compatible and unified Full-Duplex-Bench v1.0 metrics "
                      "(docs/metrics.md explains each).\n\n```\n" + render(unified) + "```\n")


def make_stage(config: dict) -> Stage:
    return Stage("aggregator", __version__, lambda ctx: None, finalize=score_stage,
                 select=lambda inputs, cfg: [])
