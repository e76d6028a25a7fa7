"""What the text-script formats of the built-in datasets share: a folder of `<subset>.json`
files, one per subset, each a JSON object with a `format`, an optional `subset` (the file name's),
a `seed`, a `timing` of silences, and entries checked one at a time.

A benchmark's script module keeps its own format (keys, ranges, messages that name it) and calls
these for the checks that read the same in every format. File-level problems raise
DuplexEvalError with one line naming the file; an entry's problems are ValueError text.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable, Iterable

from .errors import DuplexEvalError


def load_folder(folder: Path, timing_overrides: dict | None, load_one: Callable[[Path, dict], Any]) -> dict:
    """{subset: script} of every `<subset>.json` in folder, each from load_one(path, its config
    timing override); an override naming no file is an error."""
    folder = Path(folder)
    files = sorted(folder.glob("*.json"))
    if not files:
        raise DuplexEvalError(f"no script files (<subset>.json) in {folder}")
    overrides = dict(timing_overrides or {})
    scripts = {}
    for path in files:
        script = load_one(path, overrides.pop(path.stem, {}))
        scripts[script.subset] = script
    if overrides:
        raise DuplexEvalError(f"timing given for unknown subset(s): {', '.join(sorted(overrides))}; "
                              f"known: {', '.join(sorted(scripts))}")
    return scripts


def check_format(where: str, doc: dict, fmt: str) -> None:
    if doc.get("format") != fmt:
        raise DuplexEvalError(f"{where}: format must be {fmt!r}, got {doc.get('format')!r}")


def check_keys(where: str, values: dict, allowed: Iterable[str], known: Iterable[str] | None = None) -> None:
    """No key of values outside allowed; the error lists `known` (default: allowed, sorted)."""
    unknown = set(values) - set(allowed)
    if unknown:
        listed = sorted(allowed) if known is None else list(known)
        raise DuplexEvalError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}; "
                              f"known: {', '.join(listed)}")


def subset_of(where: str, doc: dict, path: Path) -> str:
    """The subset of a script file: its file name, which a `subset` key must repeat."""
    subset = Path(path).stem
    if doc.get("subset", subset) != subset:
        raise DuplexEvalError(f"{where}: subset {doc.get('subset')!r} differs from the file name")
    return subset


def seed_of(where: str, doc: dict) -> int:
    """The script's `seed` (0 when absent): a whole number >= 0."""
    seed = doc.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise DuplexEvalError(f"{where}: seed must be a whole number >= 0")
    return seed


def check_timing(where: str, values: Any, allowed: Iterable[str], max_s: float,
                 low_of: Callable[[str], float] = lambda _k: 0.0,
                 known: Iterable[str] | None = None) -> dict:
    """{key: seconds} of a timing object: keys from allowed (the error lists `known`, default
    allowed sorted), each a number of seconds in [low_of(key), max_s]."""
    if not isinstance(values, dict):
        raise DuplexEvalError(f"{where}: expected an object")
    check_keys(where, values, allowed, known)
    for k, v in values.items():
        low = low_of(k)
        if not is_number(v) or not low <= v <= max_s:
            raise DuplexEvalError(f"{where}: {k} must be a number of seconds in [{low:g}, {max_s:g}]")
    return {k: float(v) for k, v in values.items()}


def is_number(v: Any) -> bool:
    """A finite int or float (not a bool)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def in_range(v: Any, low: float, high: float, low_open: bool = False) -> bool:
    """v is a number in [low, high], or (low, high] when low_open."""
    return is_number(v) and (low < v if low_open else low <= v) and v <= high


def range_text(low: float, high: float, low_open: bool = False) -> str:
    """"[low, high]" or "(low, high]", as the messages write a range."""
    return f"{'(' if low_open else '['}{low:g}, {high:g}]"


def key_problems(required: set, optional: set, entry: dict) -> str:
    """"missing a, b; unknown key(s) c" of an entry's keys, or "" when they are right."""
    missing = required - set(entry)
    unknown = set(entry) - required - optional
    what = [f"missing {', '.join(sorted(missing))}"] if missing else []
    what += [f"unknown key(s) {', '.join(sorted(unknown))}"] if unknown else []
    return "; ".join(what)
