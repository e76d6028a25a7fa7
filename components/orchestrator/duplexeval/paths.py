"""Where things live: the repository, the store and the runs."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
COMPONENTS = REPO / "components"
DATASETS = REPO / "datasets"


def home() -> Path:
    """The folder holding store/ and runs/ ($DUPLEXEVAL_HOME, default: the current folder)."""
    return Path(os.environ.get("DUPLEXEVAL_HOME", ".")).resolve()


def store_dir(root: Path | None = None) -> Path:
    return (root or home()) / "store"


def runs_dir(root: Path | None = None) -> Path:
    return (root or home()) / "runs"
