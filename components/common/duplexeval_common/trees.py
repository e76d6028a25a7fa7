"""A stage's inputs as one folder tree: `<tree>/<subset>/<id>/<file>` links to each sample's files.

A scorer written for the layout of a benchmark's official tree (upstream scripts read such
folders) scores a pipeline run through the same function when the stage's input stages are merged
into a temporary tree of links (no copies). The tree is made in a tmpfs when one is usable
(thousands of entries cost seconds on a busy disk and milliseconds in memory), else in the
temporary folder; where it lies changes no number (scorers walk it in a canonical order).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Iterable

from .samples import Inputs

TMPFS = Path("/dev/shm")


def _tmpfs() -> Path | None:
    try:
        if TMPFS.is_dir() and os.access(TMPFS, os.W_OK | os.X_OK):
            return TMPFS
    except OSError:
        pass
    return None


def link_tree(inputs: Inputs, tree: Path, files: Iterable[str], root_files: Iterable[str] = ()) -> dict[str, str]:
    """Link `files` of each sample (and `root_files` of the inputs' roots) into `tree`; return the
    samples an upstream stage failed or skipped, with the reason."""
    failures = {}
    for name in root_files:
        src = inputs.root_file(name)
        if src is not None:
            os.symlink(src.resolve(), tree / name)
    files = tuple(files)
    for s in inputs.samples():
        d = tree / s.subset / s.id
        d.mkdir(parents=True)
        for name in files:
            src = inputs.find(s, name)
            if src is not None:
                os.symlink(src.resolve(), d / name)
        reason = inputs.upstream_failure(s)
        if reason:
            failures[s.key] = reason
    return failures


def merged_tree(inputs: Inputs, stack: contextlib.ExitStack, files: Iterable[str],
                root_files: Iterable[str] = ()) -> tuple[Path, dict[str, str]]:
    """(the temporary merged tree, upstream failures); removed when `stack` closes."""
    files, root_files = tuple(files), tuple(root_files)
    for where in (_tmpfs(), None):
        try:
            tree = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="duplexeval-tree-", dir=where)))
            return tree, link_tree(inputs, tree, files, root_files)
        except OSError:
            if where is None:
                raise
    raise AssertionError("unreachable")
