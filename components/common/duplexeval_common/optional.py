"""Optional packages: presence checks, lazy imports with install hints, versions.

A backend imports its optional packages only through these helpers, and only
when it is built, so a missing package stops the stage with the one line
`error: <what> is not available: <install hint>` (MissingDependency, exit 2)
instead of a traceback, and a backend nobody picked needs nothing installed.

Hints name the pinned pip command of the component's requirements.txt.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
from collections.abc import Iterable, Mapping
from types import ModuleType

from .errors import MissingDependency


def fallback_hint(module: str) -> str:
    return f"install the package providing {module}"


def has_module(module: str) -> bool:
    """Whether `module` can be found, without importing it (a parent package may be imported)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def missing(modules: Iterable[str]) -> list[str]:
    """The modules of `modules` that cannot be found, in order."""
    return [m for m in modules if not has_module(m)]


def _hint(module: str, hints: Mapping[str, str] | None) -> str:
    hints = hints or {}
    top = module.split(".")[0]
    return hints.get(module) or hints.get(top) or fallback_hint(module)


def import_optional(what: str, module: str, hint: str) -> ModuleType:
    """Import `module`; an ImportError (of it or of anything it imports) becomes
    MissingDependency(`what (<name> missing)`, hint)."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependency(f"{what} ({exc.name or module} missing)", hint) from None


def require(what: str, modules: Iterable[str], hints: Mapping[str, str] | None = None) -> None:
    """Raise one MissingDependency naming every absent module and each one's hint (deduplicated)."""
    absent = missing(modules)
    if absent:
        hint = "; ".join(dict.fromkeys(_hint(m, hints) for m in absent))
        raise MissingDependency(f"{what} ({', '.join(absent)} missing)", hint)


def version(dist: str) -> str:
    """The installed version of distribution `dist` (a pip name), or "unknown"."""
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
