"""Optional packages and model files: presence checks, install hints, identities.

The runners' install hints (HINTS) over duplexeval_common.optional. A runner
checks its packages when it is built (before any sample runs) and imports
them only through `require`/`import_module` here, so a missing one stops the
stage with one line that says what to install. Model files are recorded in
runner.json by package version and sha256, hashed once per process.

A hint names versions only through `pip_hint`, which reads them from the runner
package's own requirements.txt (its pins live there and nowhere else). That file
is in the source tree (components/runners/<name>/requirements.txt, next to the
package folder, where the editable install of `make setup` runs from); a runner
image installs the package into site-packages without it, and there the hint
names the packages unpinned and says where the pins are (an image has them
installed anyway: its requirements were installed from that file).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
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


def _norm(dist: str) -> str:
    return re.sub(r"[-_.]+", "-", dist).lower()


@functools.lru_cache(maxsize=None)
def _pins(req: str) -> dict[str, str]:
    """{normalised name: version} of the `name==version` lines of a requirements file."""
    out = {}
    for line in Path(req).read_text().splitlines():
        m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([^\s;#]+)", line)
        if m:
            out[_norm(m.group(1))] = m.group(2)
    return out


def requirements_file(anchor: str) -> Path | None:
    """The requirements.txt of the runner package a module file (`__file__`) belongs to, in the
    source tree (the folder above the package holds it and pyproject.toml); None elsewhere (an image)."""
    root = Path(anchor).resolve().parent.parent
    req = root / "requirements.txt"
    return req if req.is_file() and (root / "pyproject.toml").is_file() else None


def pip_hint(anchor: str, dists: list[str], no_deps: bool = False) -> str:
    """`pip install -c constraints.txt a==1.0 b==2.0`: the distributions with the versions their
    runner package's requirements.txt pins (found from `anchor`, a module's __file__); without that
    file (an installed image) the names unpinned, with where the pins are. `no_deps`: a package
    installed with --no-deps (its declared dependencies are not used)."""
    req = requirements_file(anchor)
    pins = _pins(str(req)) if req is not None else {}
    named = [f"{d}=={pins[_norm(d)]}" if _norm(d) in pins else d for d in dists]
    head = "pip install --no-deps" if no_deps else "pip install -c constraints.txt"
    where = "" if req is not None else " (the versions pinned in the runner package's requirements.txt)"
    return f"{head} {' '.join(named)}{where}"


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
