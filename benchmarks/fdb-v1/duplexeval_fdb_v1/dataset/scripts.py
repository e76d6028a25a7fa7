"""The text scripts of a dataset: one JSON file per subset (see benchmarks/fdb-v1/datasets/fdb-mini/README.md).

Two formats: "fdb-mini-script/1" (one voice, the original three tasks) and
"fdb-script/2", a superset adding per-script voice mixes (`voices`, `seed`),
a second speaker's turns before the user's (`prelude`), pauses inside a
turn-taking turn, and the backchannel task (`monologue` with marked TRPs).

File-level problems (unreadable JSON, unknown subset, bad timing) stop the
stage with one line; a bad sample entry fails only that sample, when
`parse_entry` is called for it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from duplexeval_common import dataset_scripts as ds
from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.hashing import sha256_file
from duplexeval_common.jsonio import read_json_object

from ..tasks import task_of

FORMAT = "fdb-mini-script/1"
FORMAT_V2 = "fdb-script/2"
FORMATS = (FORMAT, FORMAT_V2)
V1_TOP = {"format", "subset", "task", "timing", "samples", "note"}
V2_TOP = V1_TOP | {"voices", "seed"}

# Silences in seconds, per task. A script's "timing" overrides these, and the
# stage config's "timing": {subset: {...}} overrides the script.
TIMING_DEFAULTS: dict[str, dict[str, float]] = {
    "pause_handling": {"lead_s": 0.5, "trailing_s": 2.0},
    "smooth_turn_taking": {"lead_s": 0.5, "trailing_s": 5.0, "turn_end_margin_s": 0.4},
    # Official: gap 7 s, trailing 15 s. Shorter defaults keep a half-duplex cascade that answers
    # 1-3 s after the context still speaking when the interruption arrives (see the README).
    "user_interruption": {"lead_s": 0.5, "gap_s": 4.0, "trailing_s": 8.0},
    "backchannel": {"lead_s": 0.5, "trailing_s": 2.0},
}
MAX_PRELUDE_GAP_S = 5.0     # silence after a second speaker's piece
MAX_TURN_PAUSE_S = 2.0      # a hesitation inside a turn-taking turn
MAX_SILENCE_S = 60.0
ENTRY_KEYS = {
    "pause_handling": {"speech"},
    "smooth_turn_taking": {"text"},
    "user_interruption": {"context", "interrupt"},
    "backchannel": {"monologue"},
}
OPTIONAL_KEYS = {"note"}
# fdb-script/2 only: a second speaker before the user's part; a turn given as ["text", pause, ...].
V2_OPTIONAL = {"pause_handling": {"prelude"}, "smooth_turn_taking": {"prelude", "speech"},
               "user_interruption": set(), "backchannel": set()}
SPEAKER_PATTERN = re.compile(r"^other[2-9]?$")  # schemas/sample.schema.json: segments[].speaker


@dataclass(frozen=True)
class Script:
    subset: str
    task: str
    path: Path
    sha256: str
    timing: dict
    entries: list
    format: str = FORMAT
    voices: list | None = None      # voice specs of this script (fdb-script/2), None: the config's
    seed: int | None = None         # seed of the per-sample voice choice

    @property
    def v2(self) -> bool:
        return self.format == FORMAT_V2


def load_scripts(folder: Path, timing_overrides: dict | None = None,
                 parse_specs: Callable | None = None) -> dict[str, Script]:
    """Every `<subset>.json` script in folder, by subset; parse_specs checks a script's voice
    specs (tts-synth's, which knows the engines)."""
    return ds.load_folder(folder, timing_overrides, lambda path, override: _load(path, override, parse_specs))


def _load(path: Path, override: dict, parse_specs: Callable | None) -> Script:
    where = f"script {path.name}"
    doc = read_json_object(path, where)
    fmt = doc.get("format")
    if fmt not in FORMATS:
        raise DuplexEvalError(f"{where}: format must be one of {', '.join(map(repr, FORMATS))}, got {fmt!r}")
    unknown = set(doc) - (V2_TOP if fmt == FORMAT_V2 else V1_TOP)
    if unknown and fmt == FORMAT:
        v2_only = unknown & V2_TOP
        if v2_only:
            raise DuplexEvalError(f"{where}: {', '.join(sorted(v2_only))} needs format {FORMAT_V2!r}")
    elif unknown:
        ds.check_keys(where, doc, V2_TOP)
    subset = ds.subset_of(where, doc, path)
    task = doc.get("task") or task_of(subset)   # the script's own, else its official name's
    if task == "backchannel" and fmt != FORMAT_V2:
        raise DuplexEvalError(f"{where}: backchannel scripts need format {FORMAT_V2!r}")
    if task not in TIMING_DEFAULTS:
        raise DuplexEvalError(f"{where}: tts-synth cannot build {task} samples "
                              f"(supported: {', '.join(TIMING_DEFAULTS)})")
    if not isinstance(doc.get("samples"), list) or not doc["samples"]:
        raise DuplexEvalError(f"{where}: 'samples' must be a non-empty list")
    timing = dict(TIMING_DEFAULTS[task])
    for source, values in ((f"{where} timing", doc.get("timing", {})),
                           (f"config timing.{subset}", override)):
        timing.update(check_timing(source, task, values))
    voices = seed = None
    if fmt == FORMAT_V2:
        if "voices" in doc:
            voices = parse_specs(f"{where} voices", doc["voices"])
        seed = ds.seed_of(where, doc)
    return Script(subset, task, path, sha256_file(path), timing, doc["samples"], fmt, voices, seed)


def check_timing(where: str, task: str, values: Any) -> dict:
    return ds.check_timing(where, values, TIMING_DEFAULTS[task], MAX_SILENCE_S, known=TIMING_DEFAULTS[task])


def _text(entry: dict, key: str) -> str:
    v = entry.get(key)
    if not isinstance(v, str) or not v.strip():
        raise ValueError(f"'{key}' must be a non-empty string")
    return v.strip()


def parse_entry(task: str, entry: Any, v2: bool = False) -> dict:
    """A validated copy of one sample entry; ValueError with a one-line reason.

    v2: the entry comes from an "fdb-script/2" file, which allows the keys of V2_OPTIONAL."""
    if not isinstance(entry, dict):
        raise ValueError(f"expected an object, got {type(entry).__name__}")
    optional = OPTIONAL_KEYS | (V2_OPTIONAL[task] if v2 else set())
    required = set(ENTRY_KEYS[task])
    if v2 and task == "smooth_turn_taking" and "speech" in entry:
        required = {"speech"}
        if "text" in entry:
            raise ValueError("a smooth_turn_taking entry has 'text' or 'speech', not both")
    problems = ds.key_problems(required, optional, entry)
    if problems:
        raise ValueError(f"{problems} (a {task} entry has {', '.join(sorted(ENTRY_KEYS[task]))})")
    if task == "user_interruption":
        return {"context": _text(entry, "context"), "interrupt": _text(entry, "interrupt")}
    if task == "backchannel":
        return {"monologue": _monologue(entry["monologue"])}
    if task == "smooth_turn_taking":
        out = ({"speech": _speech(entry["speech"], min_pauses=0, max_pause=MAX_TURN_PAUSE_S)}
               if "speech" in entry else {"text": _text(entry, "text")})
    else:
        out = {"speech": _speech(entry["speech"])}
    if "prelude" in entry:
        out["prelude"] = _prelude(entry["prelude"])
    return out


def _prelude(items: Any) -> list:
    """[{"speaker": "other", "text": "...", "gap_s": 0.6}, ...]: turns before the user's."""
    if not isinstance(items, list) or not items:
        raise ValueError("'prelude' must be a non-empty list of {speaker, text, gap_s}")
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, dict) or set(item) - {"speaker", "text", "gap_s"} or \
                not {"speaker", "text", "gap_s"} <= set(item):
            raise ValueError(f"prelude[{i}] must be an object with exactly speaker, text, gap_s")
        speaker = item["speaker"]
        if not isinstance(speaker, str) or not SPEAKER_PATTERN.match(speaker):
            raise ValueError(f"prelude[{i}].speaker must be 'other' or other2..other9, got {speaker!r}")
        gap = item["gap_s"]
        if not ds.is_number(gap) or not 0 < gap <= MAX_PRELUDE_GAP_S:
            raise ValueError(f"prelude[{i}].gap_s must be seconds in (0, {MAX_PRELUDE_GAP_S:g}], got {gap!r}")
        out.append({"speaker": speaker, "text": _text(item, "text"), "gap_s": float(gap)})
    return out


def _monologue(items: Any) -> list:
    """["text", 0.3, "text", {"trp": 0.6}, "text", ...]: text, plain pauses (numbers) and pauses
    at transition-relevance places ({"trp": seconds}, 0 allowed); text at both ends, >= 1 TRP."""
    if not isinstance(items, list) or len(items) < 3:
        raise ValueError("'monologue' must be a list [text, pause or {trp: seconds}, text, ...]")
    out: list = []
    for i, item in enumerate(items):
        if i % 2 == 0:
            if not isinstance(item, str) or not item.strip():
                raise ValueError(f"monologue[{i}] must be non-empty text (text and pauses alternate, "
                                 "starting and ending with text)")
            out.append(item.strip())
        elif isinstance(item, dict):
            v = item.get("trp")
            if set(item) != {"trp"} or not ds.is_number(v) or not 0 <= v <= MAX_SILENCE_S:
                raise ValueError(f"monologue[{i}] must be {{\"trp\": seconds in [0, {MAX_SILENCE_S:g}]}}")
            out.append({"trp": float(v)})
        elif ds.is_number(item) and 0 < item <= MAX_SILENCE_S:
            out.append(float(item))
        else:
            raise ValueError(f"monologue[{i}] must be a pause in seconds in (0, {MAX_SILENCE_S:g}] "
                             f"or {{\"trp\": seconds}}, got {item!r}")
    if len(out) % 2 == 0:
        raise ValueError("monologue must end with text, not a pause")
    if not any(isinstance(x, dict) for x in out):
        raise ValueError("monologue needs at least one {\"trp\": seconds} (a transition-relevance place)")
    return out


def _speech(items: Any, min_pauses: int = 1, max_pause: float = MAX_SILENCE_S) -> list:
    """["text", seconds, "text", ...]: text and pauses alternate, text at both ends."""
    if not isinstance(items, list) or len(items) < 1 + 2 * min_pauses:
        raise ValueError("'speech' must be a list [text, pause seconds, text, ...]"
                         + (" with at least one pause" if min_pauses else ""))
    out: list = []
    for i, item in enumerate(items):
        if i % 2 == 0:
            if not isinstance(item, str) or not item.strip():
                raise ValueError(f"speech[{i}] must be non-empty text (text and pauses alternate, "
                                 "starting and ending with text)")
            out.append(item.strip())
        else:
            if not ds.is_number(item) or not 0 < item <= max_pause:
                raise ValueError(f"speech[{i}] must be a pause in seconds in (0, {max_pause:g}], "
                                 f"got {item!r}")
            out.append(float(item))
    if len(out) % 2 == 0:
        raise ValueError("speech must end with text, not a pause")
    return out
