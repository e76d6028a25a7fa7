"""Canonical JSON and atomic file writes.

Canonical JSON (sorted keys, fixed separators, trailing newline) makes the
same content give the same bytes, which the store's keys and byte-identical
reruns rely on.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def dumps(obj: Any) -> str:
    """Canonical, human-readable JSON text."""
    return json.dumps(obj, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def canonical_bytes(obj: Any) -> bytes:
    """Compact canonical JSON, for hashing."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode()


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write to a temporary file in the same folder, then rename over the target."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp makes 0600 files; outputs are read by other users (container uid 1000).
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode())


def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_text(path, dumps(obj))


def atomic_write_many(files: dict) -> None:
    """Write several files all or nothing: every temporary first, then the renames.

    A failure before the renames leaves no target touched and no temporary behind.
    """
    temps: list[tuple[str, Path]] = []
    try:
        for path, content in files.items():
            path = Path(path)
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
            temps.append((tmp, path))
            os.fchmod(fd, 0o666 & ~_umask())
            with os.fdopen(fd, "wb") as f:
                f.write(content.encode() if isinstance(content, str) else content)
                f.flush()
                os.fsync(f.fileno())
        for tmp, path in temps:
            os.replace(tmp, path)
        temps = []
    finally:
        for tmp, _ in temps:
            Path(tmp).unlink(missing_ok=True)


def read_json(path: Path) -> Any:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def duplicate_keys(pairs: list) -> list:
    """The keys given more than once among an object's (key, value) pairs, sorted; linear time."""
    seen: set = set()
    dup: set = set()
    for k, _ in pairs:
        if k in seen:
            dup.add(k)
        else:
            seen.add(k)
    return sorted(dup)


def _no_duplicates(pairs: list) -> dict:
    out = dict(pairs)
    if len(out) != len(pairs):  # only then look for which (the common case costs one dict)
        raise ValueError(f"duplicate key(s) {', '.join(repr(k) for k in duplicate_keys(pairs))}")
    return out


def strict_pairs(pairs: list) -> dict:
    """An `object_pairs_hook` refusing a key given twice (`key 'x' given twice`); linear time."""
    out = dict(pairs)
    if len(out) != len(pairs):
        raise ValueError(f"key {duplicate_keys(pairs)[0]!r} given twice")
    return out


def _no_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def load_strict(f) -> Any:
    """JSON from a text file object, strictly: NaN, Infinity and a key given twice are
    ValueErrors. Linear in the number of keys (the importers' checks; a 60,000-key file takes
    milliseconds)."""
    return json.load(f, parse_constant=_no_constant, object_pairs_hook=strict_pairs)


def read_json_object(path: Path, where: str) -> dict:
    """A JSON object from a file, or a one-line DuplexEvalError naming `where` (unreadable, not
    JSON, nested too deep, a key given twice, not an object)."""
    from .errors import DuplexEvalError
    try:
        with open(path, encoding="utf-8") as f:
            obj = json.load(f, object_pairs_hook=_no_duplicates)
    except RecursionError:
        raise DuplexEvalError(f"{where}: nested too deeply to be a settings file") from None
    except (OSError, ValueError) as exc:
        raise DuplexEvalError(f"{where}: not readable JSON ({exc})") from None
    if not isinstance(obj, dict):
        raise DuplexEvalError(f"{where}: expected a JSON object")
    return obj


def read_jsonl(path: Path) -> list:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def jsonl_text(rows: list) -> str:
    return "".join(json.dumps(r, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"
                   for r in rows)


def strict_loads(data: bytes | str) -> Any:
    """JSON parsed strictly: NaN, Infinity and a key given twice are errors (ValueError); linear
    in the text's length."""
    if isinstance(data, bytes):
        data = data.decode("utf-8")
    return json.loads(data, parse_constant=_no_constant, object_pairs_hook=strict_pairs)
