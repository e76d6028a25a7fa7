"""The text scripts of a Full-Duplex-Bench v1.5 dataset: one JSON file per subset, format
"fdb-v1.5-script/1" (benchmarks/fdb-v1.5/datasets/fdb-v1.5-mini/README.md describes it).

A file holds the subset's timing (`lead_s`), its voices (one mix for every speaker, or one mix per
speaker), the seed of the per-sample voice draw, and the samples: per sample the user's prior
turn (`context`), the overlap event (`event`, `kind`, `speaker`, `level_db`, `lowpass_hz`), when
it starts after the context ends (`delay_s`) and the silence after it (`trailing_s`).

File-level problems (unreadable JSON, an unknown key or task, bad timing or voices) stop the
stage with one line; a bad sample entry fails only that sample, when `parse_entry` is called for
it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from duplexeval_common import dataset_scripts as ds
from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.hashing import sha256_file
from duplexeval_common.jsonio import read_json_object

from ..tasks import KINDS, SPEAKERS, TASKS, task_of

FORMAT = "fdb-v1.5-script/1"
TOP_KEYS = {"format", "subset", "task", "timing", "voices", "seed", "samples", "note"}
REQUIRED_TOP = {"format", "samples"}
# Silences in seconds. A script's "timing" overrides these; the stage config's "timing": {subset:
# {...}} overrides the script (trailing_s there replaces every sample's own).
TIMING_DEFAULTS = {"lead_s": 0.5}
TIMING_KEYS = {"lead_s", "trailing_s"}
MAX_SILENCE_S = 60.0
ENTRY_KEYS = {"context", "event", "kind", "speaker", "delay_s", "level_db", "trailing_s"}
OPTIONAL_KEYS = {"lowpass_hz", "note"}
DELAY_RANGE = (0.0, 20.0)        # the event's start after the context's end: (low, high]
TRAILING_RANGE = (1.0, MAX_SILENCE_S)
LEVEL_RANGE = (-40.0, 0.0)       # dB relative to the user's speech (peak 0.8); 0 dB at most, so no clipping
LOWPASS_RANGE = (200.0, 20000.0)  # Hz; below the dataset's Nyquist rate too (checked when built)
SPEAKER_NAMES = ("user", "other")


@dataclass(frozen=True)
class Script:
    subset: str
    task: str
    path: Path
    sha256: str
    timing: dict
    entries: list
    voices: list | dict | None = None   # a mix for every speaker, {speaker: mix}, or None: the config's
    seed: int = 0

    @property
    def kind(self) -> str:
        return KINDS[self.task]


def load_scripts(folder: Path, timing_overrides: dict | None = None,
                 parse_specs: Callable | None = None) -> dict[str, Script]:
    """Every `<subset>.json` script in folder, by subset; parse_specs checks a script's voice
    specs (tts-synth's, which knows the engines)."""
    return ds.load_folder(folder, timing_overrides, lambda path, override: _load(path, override, parse_specs))


def _load(path: Path, override: dict, parse_specs: Callable | None) -> Script:
    where = f"script {path.name}"
    doc = read_json_object(path, where)
    ds.check_format(where, doc, FORMAT)
    ds.check_keys(where, doc, TOP_KEYS)
    subset = ds.subset_of(where, doc, path)
    task = doc.get("task") or task_of(subset)   # the script's own, else its official name's
    if task not in TASKS:
        raise DuplexEvalError(f"{where}: the task must be one of {', '.join(TASKS)} (given as 'task' or by "
                              f"the subset's name), got {task!r}")
    if not isinstance(doc.get("samples"), list) or not doc["samples"]:
        raise DuplexEvalError(f"{where}: 'samples' must be a non-empty list")
    timing = dict(TIMING_DEFAULTS)
    timing.update(check_timing(f"{where} timing", doc.get("timing", {}), {"lead_s"}))
    timing.update(check_timing(f"config timing.{subset}", override, TIMING_KEYS))
    voices = None
    if "voices" in doc:
        voices = parse_voices(f"{where} voices", doc["voices"], parse_specs)
    seed = ds.seed_of(where, doc)
    return Script(subset, task, path, sha256_file(path), timing, doc["samples"], voices, seed)


def parse_voices(where: str, value: Any, parse_specs: Callable | None) -> list | dict:
    """A list of voice specs (one mix for every speaker) or {"user": [...], "other": [...]}."""
    check = parse_specs or (lambda _w, v: v)
    if isinstance(value, dict):
        unknown = set(value) - set(SPEAKER_NAMES)
        if unknown or "user" not in value:
            raise DuplexEvalError(f"{where}: a mix per speaker is {{\"user\": [...], \"other\": [...]}} "
                                  f"(user required), got keys {', '.join(sorted(value)) or 'none'}")
        return {sp: check(f"{where}.{sp}", value[sp]) for sp in SPEAKER_NAMES if sp in value}
    return check(where, value)


def check_timing(where: str, values: Any, allowed: set) -> dict:
    return ds.check_timing(where, values, allowed, MAX_SILENCE_S,
                           low_of=lambda k: TRAILING_RANGE[0] if k == "trailing_s" else 0.0)


def _text(entry: dict, key: str) -> str:
    v = entry.get(key)
    if not isinstance(v, str) or not v.strip():
        raise ValueError(f"'{key}' must be a non-empty string")
    return " ".join(v.split())


def _in(entry: dict, key: str, low: float, high: float, low_open: bool = False) -> float:
    v = entry.get(key)
    if not ds.in_range(v, low, high, low_open):
        raise ValueError(f"'{key}' must be a number in {ds.range_text(low, high, low_open)}, got {v!r}")
    return float(v)


def parse_entry(task: str, entry: Any) -> dict:
    """A validated copy of one sample entry; ValueError with a one-line reason."""
    if not isinstance(entry, dict):
        raise ValueError(f"expected an object, got {type(entry).__name__}")
    problems = ds.key_problems(ENTRY_KEYS, OPTIONAL_KEYS, entry)
    if problems:
        raise ValueError(f"{problems} (an entry has {', '.join(sorted(ENTRY_KEYS))}"
                         f"[, {', '.join(sorted(OPTIONAL_KEYS))}])")
    if entry["kind"] != KINDS[task]:
        raise ValueError(f"kind must be {KINDS[task]!r} in a {task} script, got {entry['kind']!r}")
    if entry["speaker"] != SPEAKERS[task]:
        raise ValueError(f"speaker must be {SPEAKERS[task]!r} in a {task} script (the "
                         f"{'user themself' if SPEAKERS[task] == 'user' else 'someone else'}), "
                         f"got {entry['speaker']!r}")
    lowpass = entry.get("lowpass_hz")
    if lowpass is not None:
        lowpass = _in(entry, "lowpass_hz", *LOWPASS_RANGE)
    if "note" in entry and not isinstance(entry["note"], str):
        raise ValueError("'note' must be a string")
    return {"context": _text(entry, "context"), "event": _text(entry, "event"), "kind": entry["kind"],
            "speaker": entry["speaker"], "delay_s": _in(entry, "delay_s", *DELAY_RANGE, low_open=True),
            "level_db": _in(entry, "level_db", *LEVEL_RANGE),
            "trailing_s": _in(entry, "trailing_s", *TRAILING_RANGE), "lowpass_hz": lowpass}
