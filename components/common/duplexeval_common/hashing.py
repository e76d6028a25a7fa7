"""sha256 of files, bytes, JSON values and source trees."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Iterable

from .jsonio import canonical_bytes

_CHUNK = 1 << 20
_SKIP_DIRS = {"__pycache__", ".pytest_cache", ".git"}
_SKIP_SUFFIXES = {".pyc", ".pyo", ".tmp", ".md"}
# Files that never change what a component computes in the local runtime.
_SKIP_NAMES = {"Dockerfile", ".dockerignore"}


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def sha256_json(obj: Any) -> str:
    return sha256_bytes(canonical_bytes(obj))


def _tree_files(root: Path, exclude: frozenset[str] = frozenset()) -> Iterable[Path]:
    for p in sorted(root.rglob("*")):
        parts = p.relative_to(root).parts
        if p.is_file() and not (set(parts) & _SKIP_DIRS) and parts[0] not in exclude \
                and p.suffix not in _SKIP_SUFFIXES and p.name not in _SKIP_NAMES:
            yield p


def sha256_tree(*roots: Path, exclude: Iterable[str] = ()) -> str:
    """Hash of every file's relative path and content under the roots.

    Used as a component's identity in the local runtime: the source and the
    lock file decide what it computes. ``exclude`` names top-level folders of
    each root left out (a benchmark's ``tests``).
    """
    skip = frozenset(exclude)
    h = hashlib.sha256()
    for root in roots:
        root = Path(root)
        for p in _tree_files(root, skip):
            if any(part.endswith(".egg-info") for part in p.parts):
                continue
            h.update(f"{root.name}/{p.relative_to(root).as_posix()}\0".encode())
            h.update(sha256_file(p).encode())
    return h.hexdigest()
