"""An official release as importers find it: a folder holding one folder per subset (or holding
one folder that does), each subset folder holding one folder per sample.

svc is the orchestrator's import service (an importer's first argument): its `entries` lists a
folder the way every importer does (hidden entries left out) and its `Candidate` is one sample
found.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable

from .errors import DuplexEvalError


def release_root(svc, given: Path, subsets: Iterable[str], title: str, several_title: str | None = None) -> Path:
    """The folder holding the subset folders: `given` itself or one folder inside it. title names
    the release in the errors (several_title, when given, where several folders hold subsets)."""
    subsets = tuple(subsets)
    if not given.is_dir():
        raise DuplexEvalError(f"{given}: no such folder")
    if any((given / s).is_dir() for s in subsets):
        return given
    inner = [given / n for n in svc.entries(given)
             if (given / n).is_dir() and any((given / n / s).is_dir() for s in subsets)]
    if len(inner) == 1:
        return inner[0]
    if len(inner) > 1:
        raise DuplexEvalError(f"{given}: several folders hold {several_title or title} subsets "
                              f"({', '.join(p.name for p in inner)}); name one of them")
    raise DuplexEvalError(f"{given}: no {title} subset folder ({', '.join(subsets)}) "
                          "in it or in a folder inside it")


def release_candidates(svc, root: Path, subsets: Iterable[str], task_of: Callable[[str], str]) -> tuple[list, list[str]]:
    """(samples, subsets not found) of a release's folder: every folder in each subset folder, of
    the task task_of(subset)."""
    cands, absent = [], []
    for subset in subsets:
        sub = root / subset
        if not sub.is_dir():
            absent.append(subset)
            continue
        for n in svc.entries(sub):
            p = sub / n
            if p.is_dir():
                cands.append(svc.Candidate(subset, n, task_of(subset), p, svc.id_problem(n)))
    return cands, absent
