"""The per-user cache folder shared by every run, and namespaces for what is cached in it.

A cache entry must depend only on what it was computed from, so that any run, whatever its
output folder, can reuse it: the key of an entry is the content hash of its input, and the
folder it lives in (its namespace) names every version and model hash that changes the
content. A new library version or model file then starts a new, empty namespace instead of
mixing old entries with new ones.

    user_cache_dir()            $DUPLEXEVAL_CACHE, else $XDG_CACHE_HOME/duplexeval,
                                else ~/.cache/duplexeval (not created here)
    model_cache_dir()           converted models (SmolLM2 dequantized, openai-whisper from
                                CTranslate2): $DUPLEXEVAL_MODEL_CACHE, else user_cache_dir()/models
    cache_namespace("vad-onnx", ort="1.32.0", model=sha256)
                                "vad-onnx-ort1.32.0-<first 16 hex digits of sha256>"
    private_dir(path)           creates path (and missing parents) with mode 0o700
    usable_cache_dir(path)      path (default user_cache_dir()) made and writable, else None
    cache_for_run()             the cache to give a run's stages: the user's when usable, else a
                                fresh scratch folder removed at exit (and a note saying so)

A cache never decides a result: a cache folder that cannot be made or written (a read-only
$DUPLEXEVAL_CACHE, a full disk) is no cache, and whatever would have been cached is computed.
Callers ask `usable_cache_dir` and, given None, compute without caching.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import tempfile
from pathlib import Path

ENV = "DUPLEXEVAL_CACHE"
MODEL_ENV = "DUPLEXEVAL_MODEL_CACHE"

_HEX_DIGEST = re.compile(r"^[0-9a-f]{32,}$")
_UNSAFE = re.compile(r"[^A-Za-z0-9._+]")
_KIND = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def user_cache_dir() -> Path:
    """The per-user cache root: $DUPLEXEVAL_CACHE if set (the orchestrator sets it), else
    $XDG_CACHE_HOME/duplexeval, else ~/.cache/duplexeval.

    Nothing is created here; a cache creates its folder with private_dir when it first
    writes an entry.
    """
    env = os.environ.get(ENV)
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg):  # the XDG spec ignores a relative value
        return Path(xdg) / "duplexeval"
    return Path.home() / ".cache" / "duplexeval"


def model_cache_dir() -> Path:
    """Where converted models are kept: $DUPLEXEVAL_MODEL_CACHE if set, else user_cache_dir()/models.

    A converted model depends only on the files and library versions its namespace names, never
    on a run, so one folder can serve every run and every user (a shared disk, the nodes of a
    cluster) while each run keeps its own cache of results ($DUPLEXEVAL_CACHE). Not created here.
    """
    env = os.environ.get(MODEL_ENV)
    if env:
        return Path(env).expanduser()
    return user_cache_dir() / "models"


def cache_namespace(kind: str, **versions: object) -> str:
    """A folder name from a kind and everything that changes the cached content.

    The parts follow in the order given, joined by "-": the kind, then for each keyword its
    name followed by its value (`ort="1.32.0"` gives "ort1.32.0"), except that a hex digest
    (32 or more lowercase hex digits, e.g. a model file's sha256) is written as its first 16
    digits alone. Characters other than letters, digits, ".", "_" and "+" in a value become "_".

    >>> cache_namespace("vad-onnx", ort="1.32.0", model="ab" * 32)
    'vad-onnx-ort1.32.0-abababababababab'
    """
    if not _KIND.match(kind):
        raise ValueError(f"cache kind {kind!r} is not a plain name")
    parts = [kind]
    for key, value in versions.items():
        if value is None or value == "":
            raise ValueError(f"cache namespace {kind}: {key} has no value")
        text = str(value)
        if _HEX_DIGEST.match(text):
            parts.append(text[:16])
        else:
            parts.append(key + _UNSAFE.sub("_", text))
    return "-".join(parts)


def private_dir(path: Path) -> Path:
    """Create `path` and its missing parents with mode 0o700 (existing folders are left as
    they are); return it."""
    path = Path(path)
    missing = []
    p = path
    while not p.exists():
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    for p in reversed(missing):
        try:
            p.mkdir(mode=0o700)
        except FileExistsError:  # another process made it first
            pass
    return path


def usable_cache_dir(path: Path | None = None) -> Path | None:
    """`path` (default user_cache_dir()) when a cache can live there: made if missing (private_dir)
    and a file can be created and removed in it; else None (read-only, full, not a folder). A
    caller given None computes instead of caching: a cache must never decide a result."""
    path = Path(path) if path is not None else user_cache_dir()
    try:
        private_dir(path)
        fd, probe = tempfile.mkstemp(prefix=".probe-", dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError:
        return None
    return path


def cache_for_run(path: Path | None = None) -> tuple[Path | None, str | None]:
    """(the cache root to give a run's stages, a note or None). The user's cache when usable;
    else a fresh private scratch folder in the system's temporary folder, removed when this
    process exits (the stages compute everything, and still have somewhere to write), with a
    note naming the unusable cache; (None, note) when even that cannot be made."""
    path = Path(path) if path is not None else user_cache_dir()
    if usable_cache_dir(path) is not None:
        return path, None
    why = f"note: the cache {path} cannot be written: this run caches nothing and computes everything"
    try:
        scratch = Path(tempfile.mkdtemp(prefix="duplexeval-cache-"))
    except OSError:
        return None, why
    atexit.register(shutil.rmtree, scratch, True)
    return scratch, why + f" (scratch cache {scratch}, removed at exit)"
