"""The text scripts of a dataset: one JSON file per subset (see datasets/fdb-mini/README.md).

File-level problems (unreadable JSON, unknown subset, bad timing) stop the
stage with one line; a bad sample entry fails only that sample, when
`parse_entry` is called for it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.hashing import sha256_file
from duplexeval_common.jsonio import read_json_object
from duplexeval_common.samples import task_of

FORMAT = "fdb-mini-script/1"

# Silences in seconds, per task. A script's "timing" overrides these, and the
# stage config's "timing": {subset: {...}} overrides the script.
TIMING_DEFAULTS: dict[str, dict[str, float]] = {
    "pause_handling": {"lead_s": 0.5, "trailing_s": 2.0},
    "smooth_turn_taking": {"lead_s": 0.5, "trailing_s": 5.0, "turn_end_margin_s": 0.4},
    # Official: gap 7 s, trailing 15 s. Shorter defaults keep a half-duplex cascade that answers
    # 1-3 s after the context still speaking when the interruption arrives (see the README).
    "user_interruption": {"lead_s": 0.5, "gap_s": 4.0, "trailing_s": 8.0},
}
MAX_SILENCE_S = 60.0
ENTRY_KEYS = {
    "pause_handling": {"speech"},
    "smooth_turn_taking": {"text"},
    "user_interruption": {"context", "interrupt"},
}
OPTIONAL_KEYS = {"note"}


@dataclass(frozen=True)
class Script:
    subset: str
    task: str
    path: Path
    sha256: str
    timing: dict
    entries: list


def load_scripts(folder: Path, timing_overrides: dict | None = None) -> dict[str, Script]:
    """Every `<subset>.json` script in folder, by subset."""
    folder = Path(folder)
    files = sorted(folder.glob("*.json"))
    if not files:
        raise DuplexEvalError(f"no script files (<subset>.json) in {folder}")
    overrides = dict(timing_overrides or {})
    scripts = {}
    for path in files:
        script = _load(path, overrides.pop(path.stem, {}))
        scripts[script.subset] = script
    if overrides:
        raise DuplexEvalError(f"timing given for unknown subset(s): {', '.join(sorted(overrides))}; "
                              f"known: {', '.join(sorted(scripts))}")
    return scripts


def _load(path: Path, override: dict) -> Script:
    where = f"script {path.name}"
    doc = read_json_object(path, where)
    if doc.get("format") != FORMAT:
        raise DuplexEvalError(f"{where}: format must be {FORMAT!r}, got {doc.get('format')!r}")
    subset = path.stem
    if doc.get("subset", subset) != subset:
        raise DuplexEvalError(f"{where}: subset {doc.get('subset')!r} differs from the file name")
    task = task_of(subset)
    if task not in TIMING_DEFAULTS:
        raise DuplexEvalError(f"{where}: tts-synth cannot build {task} samples "
                              f"(supported: {', '.join(TIMING_DEFAULTS)})")
    if not isinstance(doc.get("samples"), list) or not doc["samples"]:
        raise DuplexEvalError(f"{where}: 'samples' must be a non-empty list")
    timing = dict(TIMING_DEFAULTS[task])
    for source, values in ((f"{where} timing", doc.get("timing", {})),
                           (f"config timing.{subset}", override)):
        timing.update(check_timing(source, task, values))
    return Script(subset, task, path, sha256_file(path), timing, doc["samples"])


def check_timing(where: str, task: str, values: Any) -> dict:
    if not isinstance(values, dict):
        raise DuplexEvalError(f"{where}: expected an object")
    unknown = set(values) - set(TIMING_DEFAULTS[task])
    if unknown:
        raise DuplexEvalError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}; "
                              f"known: {', '.join(TIMING_DEFAULTS[task])}")
    for k, v in values.items():
        if not _number(v) or not 0 <= v <= MAX_SILENCE_S:
            raise DuplexEvalError(f"{where}: {k} must be a number of seconds in [0, {MAX_SILENCE_S:g}]")
    return {k: float(v) for k, v in values.items()}


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _text(entry: dict, key: str) -> str:
    v = entry.get(key)
    if not isinstance(v, str) or not v.strip():
        raise ValueError(f"'{key}' must be a non-empty string")
    return v.strip()


def parse_entry(task: str, entry: Any) -> dict:
    """A validated copy of one sample entry; ValueError with a one-line reason."""
    if not isinstance(entry, dict):
        raise ValueError(f"expected an object, got {type(entry).__name__}")
    unknown = set(entry) - ENTRY_KEYS[task] - OPTIONAL_KEYS
    missing = ENTRY_KEYS[task] - set(entry)
    if missing or unknown:
        what = [f"missing {', '.join(sorted(missing))}"] if missing else []
        what += [f"unknown key(s) {', '.join(sorted(unknown))}"] if unknown else []
        raise ValueError(f"{'; '.join(what)} (a {task} entry has {', '.join(sorted(ENTRY_KEYS[task]))})")
    if task == "smooth_turn_taking":
        return {"text": _text(entry, "text")}
    if task == "user_interruption":
        return {"context": _text(entry, "context"), "interrupt": _text(entry, "interrupt")}
    return {"speech": _speech(entry["speech"])}


def _speech(items: Any) -> list:
    """["text", seconds, "text", ...]: text and pauses alternate, text at both ends."""
    if not isinstance(items, list) or len(items) < 3:
        raise ValueError("'speech' must be a list [text, pause seconds, text, ...] with at least one pause")
    out: list = []
    for i, item in enumerate(items):
        if i % 2 == 0:
            if not isinstance(item, str) or not item.strip():
                raise ValueError(f"speech[{i}] must be non-empty text (text and pauses alternate, "
                                 "starting and ending with text)")
            out.append(item.strip())
        else:
            if not _number(item) or not 0 < item <= MAX_SILENCE_S:
                raise ValueError(f"speech[{i}] must be a pause in seconds in (0, {MAX_SILENCE_S:g}], "
                                 f"got {item!r}")
            out.append(float(item))
    if len(out) % 2 == 0:
        raise ValueError("speech must end with text, not a pause")
    return out
