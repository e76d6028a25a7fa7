"""Optional packages and model files: presence checks, install hints, identities.

The runners' install hints (HINTS) over duplexeval_common.optional. A runner
checks its packages when it is built (before any sample runs) and imports
them only through `require`/`import_module` here, so a missing one stops the
stage with one line that says what to install. Model files are recorded in
runner.json by package version and sha256, hashed once per process.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from pathlib import Path
from typing import Any

from duplexeval_common import optional
from duplexeval_common.errors import MissingDependency
from duplexeval_common.hashing import sha256_file

# Install hints of the modules runners need: each runner package adds its own (registration.py,
# through registry.py), so a hint lives next to the requirements it describes.
HINTS: dict[str, str] = {}


def hint(module: str) -> str:
    """The install hint of a module (of its top-level package for a submodule)."""
    if module not in HINTS:
        from .registry import load_hints
        load_hints()
    return HINTS.get(module) or HINTS.get(module.split(".")[0]) or optional.fallback_hint(module)


has_module = optional.has_module
missing = optional.missing


def require(what: str, modules: list[str]) -> None:
    """Raise MissingDependency naming every absent module and how to install it."""
    if any(m not in HINTS for m in modules):
        from .registry import load_hints
        load_hints()
    optional.require(what, modules, HINTS)


def import_module(what: str, module: str) -> Any:
    """Import a module, turning an ImportError into MissingDependency with its hint."""
    return optional.import_optional(what, module, hint(module))


def package_dir(module: str) -> Path:
    """The folder of a package, found without importing it (some need extra deps to import)."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependency(module, hint(module))
    return Path(list(spec.submodule_search_locations)[0])


version = optional.version


@functools.lru_cache(maxsize=None)
def _sha(path: str, size: int, mtime_ns: int) -> str:
    return sha256_file(Path(path))


def file_sha256(path: Path) -> str:
    st = os.stat(path)
    return _sha(str(Path(path).resolve()), st.st_size, st.st_mtime_ns)


def model_record(dist: str, files: list[Path], **extra: Any) -> dict:
    """`{"package", "version", "files": {name: sha256}, ...}` for runner.json."""
    return {"package": dist, "version": version(dist),
            "files": {Path(f).name: file_sha256(Path(f)) for f in files}, **extra}
