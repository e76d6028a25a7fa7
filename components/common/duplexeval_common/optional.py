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


# -- install hints derived from a component's pinned requirements ------------------------------

def _dist_key(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def requirements_file(module: str):
    """The requirements.txt of the component (or runner package) that holds `module`: the file
    beside its package in the source tree, or None (an installed image has none)."""
    from pathlib import Path
    top = module.split(".")[0]
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin and not spec.submodule_search_locations:
        return None
    pkg = Path(list(spec.submodule_search_locations or [])[0] if spec.submodule_search_locations
               else Path(spec.origin).parent)
    for candidate in (pkg / "requirements.txt", pkg.parent / "requirements.txt"):
        if candidate.is_file():
            return candidate
    return None


def pins(path) -> dict[str, str]:
    """{distribution (normalized): "name==version"} of a requirements file's pinned lines."""
    out: dict[str, str] = {}
    try:
        lines = open(path, encoding="utf-8").read().splitlines()
    except OSError:
        return out
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if "==" in line and not line.startswith("-"):
            name = line.split("==", 1)[0].split("[", 1)[0].strip()
            out[_dist_key(name)] = line.split(";", 1)[0].strip()
    return out


def pinned_hint(needs: Iterable[str], module: str, pins_module: str | None = None) -> str:
    """`pip install a==1 b==2` for the distributions (or modules) in `needs`, pinned as the
    requirements.txt of the component holding `module` (or `pins_module`) pins them; a name the
    file does not pin is named without a version; "" when `needs` is empty."""
    req = requirements_file(pins_module or module)
    pinned = pins(req) if req else {}
    out = []
    for n in needs:
        key = _dist_key(n)
        out.append(pinned.get(key) or pinned.get(_dist_key(n.split(".")[0])) or n.split(".")[0].replace("_", "-"))
    return ("pip install " + " ".join(dict.fromkeys(out))) if out else ""
