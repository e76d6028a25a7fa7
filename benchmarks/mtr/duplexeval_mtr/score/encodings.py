"""Reading and validating an MTR scoring tree (benchmarks/mtr/README.md, "Scoring tree").

    TREE/<subset>/<dialogue_id>/encoding.json      duplexeval_mtr/schemas/encoding.schema.json
    TREE/<subset>/<dialogue_id>/transcript.json    duplexeval_mtr/schemas/transcript.schema.json (features)
    TREE/<subset>/<dialogue_id>/judgements.jsonl   duplexeval_mtr/schemas/judgement.schema.json, one per line
                                                   (instruction following, safety, dialogue quality)

Every problem is an `InputError` whose message is one line: "<subset>/<dialogue_id>: <problem>".
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from duplexeval_common.samples import id_sort_key, name_problem

from duplexeval_common.errors import InputError
from .rules import Seg, seg

TASKS = ("features", "instruction_following", "safety", "dialogue_quality")
JUDGED = {"instruction_following": "mtr-instruction-following", "safety": "mtr-safety",
          "dialogue_quality": "mtr-dialogue-quality"}
# The release's scenario names (Eval/eval_*.py test them as substrings) and their features.
SCENARIO_NAMES = (("smooth-turntaking", "S"), ("interruption", "I"), ("pause-handling", "P"),
                  ("background", "B"))
TIMESTAMP_KEYS = ("user_start", "user_end", "model_start", "model_end", "interruption_start",
                  "interruption_end", "pause_start", "pause_end", "background_start", "background_end")
PAIRS = (("user_start", "user_end"), ("model_start", "model_end"),
         ("interruption_start", "interruption_end"), ("pause_start", "pause_end"),
         ("background_start", "background_end"))
ENCODING, TRANSCRIPT, JUDGEMENTS = "encoding.json", "transcript.json", "judgements.jsonl"


@dataclass(frozen=True)
class Round:
    number: int
    scenario: str
    features: tuple          # sorted in FEATURES order: ("S",), ("I", "P", "B"), ...
    ts: dict                 # the encoding's timestamps (seconds)


@dataclass
class Dialogue:
    subset: str
    id: str
    task: str
    set: str | None
    rounds: list             # [Round], numbers 1..n
    segments: dict | None = None     # round -> [Seg]; None: no transcript.json (nothing observed)
    judgements: dict | None = None   # round -> judgement record; None: no judgements.jsonl

    @property
    def key(self) -> str:
        return f"{self.subset}/{self.id}"


def features_of(scenario: str) -> tuple:
    return tuple(f for name, f in SCENARIO_NAMES if name in scenario)


def _num(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _time(key: str, where: str, name: str, x) -> float:
    if not _num(x):
        raise InputError(key, f"{where}: {name} must be a finite number of seconds, got {x!r}")
    if x < 0:
        raise InputError(key, f"{where}: {name} is negative ({x!r})")
    return float(x)


def _read_object(path: Path, key: str) -> dict:
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise InputError(key, f"{path.name}: not readable JSON ({str(exc).splitlines()[0]})") from None
    if not isinstance(obj, dict):
        raise InputError(key, f"{path.name}: expected a JSON object")
    return obj


def _required_times(task: str, features: tuple, ts: dict) -> tuple:
    """The timestamps a round of these features needs. A pause round without pause times (or
    both 0.0, the release's "no pause") is scored over the user turn (rules.pause_window), so an
    interruption+pause round then needs the user times too."""
    if task != "features":
        return ()
    need = ["model_start", "model_end"]
    if "I" in features:
        need += ["interruption_start", "interruption_end"]
    else:
        need += ["user_start", "user_end"]
    if "P" in features and ts.get("pause_start", 0.0) == 0.0 and ts.get("pause_end", 0.0) == 0.0:
        need += [k for k in ("user_start", "user_end") if k not in need]
    if "B" in features:
        need += ["background_start", "background_end"]
    return tuple(need)


def _features(key: str, where: str, task: str, r: dict) -> tuple:
    scenario = r.get("scenario")
    if not isinstance(scenario, str) or not scenario:
        raise InputError(key, f"{where}: scenario must be a non-empty string")
    derived = features_of(scenario)
    given = r.get("features")
    if given is not None:
        if (not isinstance(given, list) or not all(isinstance(f, str) for f in given)
                or len(set(given)) != len(given) or not set(given) <= {"S", "I", "P", "B"}):
            raise InputError(key, f"{where}: features must be distinct names among S, I, P, B, got {given!r}")
        fs = tuple(f for f in ("S", "I", "P", "B") if f in given)
        if (derived or task != "dialogue_quality") and set(derived) != set(fs):
            raise InputError(key, f"{where}: features {given!r} disagree with scenario {scenario!r} "
                                  f"({'+'.join(derived)})")
    else:
        fs = derived
    if task == "dialogue_quality":
        return fs
    if task in ("instruction_following", "safety"):
        if fs not in (("S",), ("I",)):
            raise InputError(key, f"{where}: a {task} round is smooth (S) or interruption (I), "
                                  f"got scenario {scenario!r}")
        return fs
    if not fs:
        raise InputError(key, f"{where}: scenario {scenario!r} names no feature (expected "
                              "smooth-turntaking, interruption, pause-handling, background, or features)")
    base = [f for f in fs if f in ("S", "I")]
    if fs not in (("P",), ("B",)) and len(base) != 1:
        raise InputError(key, f"{where}: features {'+'.join(fs)}: a round is P alone, B alone, or "
                              "exactly one of S and I with optional P and B")
    return fs


def _round(key: str, task: str, r, i: int) -> Round:
    where = f"round #{i + 1}"
    if not isinstance(r, dict):
        raise InputError(key, f"{where}: expected an object")
    n = r.get("round")
    if not isinstance(n, int) or isinstance(n, bool) or n != i + 1:
        raise InputError(key, f"{where}: round must be {i + 1} (rounds are numbered 1, 2, ... in "
                              f"order), got {n!r}")
    where = f"round {n}"
    extra = sorted(set(r) - {"round", "scenario", "features", "timestamps"})
    if extra:
        raise InputError(key, f"{where}: unknown key(s) {', '.join(extra)}")
    fs = _features(key, where, task, r)
    ts_in = r.get("timestamps", {})
    if not isinstance(ts_in, dict):
        raise InputError(key, f"{where}: timestamps must be an object")
    unknown = sorted(set(ts_in) - set(TIMESTAMP_KEYS))
    if unknown:
        raise InputError(key, f"{where}: unknown timestamp key(s) {', '.join(unknown)}")
    ts = {k: _time(key, where, k, ts_in[k]) for k in TIMESTAMP_KEYS if k in ts_in}
    for k in _required_times(task, fs, ts):
        if k not in ts:
            why = " (no pause times: the pause is the user turn)" if k.startswith("user_") and "I" in fs else ""
            raise InputError(key, f"{where}: {'+'.join(fs)} needs timestamp {k}{why}")
    for a, b in PAIRS:
        if (a in ts) != (b in ts):
            raise InputError(key, f"{where}: {a} and {b} come together (one is missing)")
        if a in ts and ts[b] < ts[a]:
            raise InputError(key, f"{where}: {b} ({ts[b]}) is before {a} ({ts[a]})")
    return Round(n, r["scenario"], fs, ts)


def parse_encoding(key: str, obj: dict, dialogue_id: str) -> tuple[str, str | None, list]:
    if obj.get("dialogue_id") != dialogue_id:
        raise InputError(key, f"{ENCODING}: dialogue_id {obj.get('dialogue_id')!r} is not the folder "
                              f"name {dialogue_id!r}")
    task = obj.get("task")
    if task not in TASKS:
        raise InputError(key, f"{ENCODING}: task must be one of {', '.join(TASKS)}, got {task!r}")
    set_ = obj.get("set")
    if set_ is not None and (not isinstance(set_, str) or not set_):
        raise InputError(key, f"{ENCODING}: set must be a non-empty string")
    extra = sorted(set(obj) - {"dialogue_id", "task", "set", "rounds", "source"})
    if extra:
        raise InputError(key, f"{ENCODING}: unknown key(s) {', '.join(extra)}")
    rounds = obj.get("rounds")
    if not isinstance(rounds, list) or not rounds:
        raise InputError(key, f"{ENCODING}: rounds must be a non-empty list")
    return task, set_, [_round(key, task, r, i) for i, r in enumerate(rounds)]


def _segment(key: str, where: str, s) -> Seg:
    if not isinstance(s, dict):
        raise InputError(key, f"{where}: expected an object")
    start = _time(key, where, "start", s.get("start"))
    end = _time(key, where, "end", s.get("end"))
    if end < start:
        raise InputError(key, f"{where}: end ({end}) is before start ({start})")
    text = s.get("text", "")
    if not isinstance(text, str):
        raise InputError(key, f"{where}: text must be a string")
    words = s.get("words")
    if not isinstance(words, list):
        raise InputError(key, f"{where}: words must be a list (word timestamps are needed)")
    pairs = []
    for j, w in enumerate(words):
        ww = f"{where} word {j}"
        if not isinstance(w, dict):
            raise InputError(key, f"{ww}: expected an object")
        a = _time(key, ww, "start", w.get("start"))
        b = _time(key, ww, "end", w.get("end"))
        if b < a:
            raise InputError(key, f"{ww}: end ({b}) is before start ({a})")
        pairs.append((a, b))
    return seg(start, end, text, pairs)


def parse_transcript(key: str, obj: dict, dialogue_id: str, n_rounds: int) -> dict:
    if obj.get("dialogue_id") != dialogue_id:
        raise InputError(key, f"{TRANSCRIPT}: dialogue_id {obj.get('dialogue_id')!r} is not the "
                              f"folder name {dialogue_id!r}")
    rounds = obj.get("rounds")
    if not isinstance(rounds, list):
        raise InputError(key, f"{TRANSCRIPT}: rounds must be a list")
    out: dict[int, list] = {}
    for i, r in enumerate(rounds):
        if not isinstance(r, dict):
            raise InputError(key, f"{TRANSCRIPT}: rounds[{i}]: expected an object")
        n = r.get("round")
        if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= n_rounds:
            raise InputError(key, f"{TRANSCRIPT}: rounds[{i}]: round must be a round of the encoding "
                                  f"(1..{n_rounds}), got {n!r}")
        if n in out:
            raise InputError(key, f"{TRANSCRIPT}: round {n} is given twice")
        segs = r.get("segments")
        if not isinstance(segs, list):
            raise InputError(key, f"{TRANSCRIPT}: round {n}: segments must be a list")
        out[n] = [_segment(key, f"{TRANSCRIPT}: round {n} segment {j}", s) for j, s in enumerate(segs)]
    return out


def parse_judgements(key: str, text: str, task: str, n_rounds: int) -> dict:
    prompt_id = JUDGED[task]
    out: dict[int, dict] = {}
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{JUDGEMENTS} line {i}"
        try:
            rec = json.loads(line)
        except ValueError as exc:
            raise InputError(key, f"{where}: not JSON ({exc})") from None
        if not isinstance(rec, dict):
            raise InputError(key, f"{where}: expected an object")
        n = rec.get("round")
        if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= n_rounds:
            raise InputError(key, f"{where}: round must be a round of the encoding (1..{n_rounds}), "
                                  f"got {n!r}")
        if n in out:
            raise InputError(key, f"{where}: round {n} is judged twice")
        pid = (rec.get("prompt") or {}).get("id") if isinstance(rec.get("prompt"), dict) else None
        if pid != prompt_id:
            raise InputError(key, f"{where}: prompt id {pid!r} is not {prompt_id!r} (task {task})")
        status = rec.get("status")
        if status not in ("ok", "unparsed", "error", "skipped"):
            raise InputError(key, f"{where}: status must be ok, unparsed, error or skipped, got {status!r}")
        score = rec.get("score")
        if status == "ok":
            allowed = (lambda x: 0 <= x <= 5) if task == "dialogue_quality" else (lambda x: x in (0, 1))
            if not _num(score) or not allowed(score):
                raise InputError(key, f"{where}: an ok {task} judgement needs a score "
                                      f"{'in 0..5' if task == 'dialogue_quality' else 'of 0 or 1'}, got {score!r}")
        out[n] = {"status": status, "score": score if status == "ok" else None}
    return out


def load_dialogue(subset: str, d: Path) -> Dialogue:
    """One dialogue folder, validated; InputError (one line) on the first problem."""
    key = f"{subset}/{d.name}"
    enc = d / ENCODING
    if not enc.is_file():
        raise InputError(key, f"no {ENCODING}")
    task, set_, rounds = parse_encoding(key, _read_object(enc, key), d.name)
    dia = Dialogue(subset, d.name, task, set_, rounds)
    tr = d / TRANSCRIPT
    if task == "features" and tr.is_file():
        dia.segments = parse_transcript(key, _read_object(tr, key), d.name, len(rounds))
    jl = d / JUDGEMENTS
    if task in JUDGED and jl.is_file():
        try:
            text = jl.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(key, f"{JUDGEMENTS}: not readable ({exc})") from None
        dia.judgements = parse_judgements(key, text, task, len(rounds))
    return dia


def _listed(folder: Path) -> list[Path]:
    """The sub-folders of a folder that are data: not hidden (`.`) and not tool litter (`_`, such
    as __MACOSX or __pycache__)."""
    return [p for p in folder.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))]


def scan(tree: Path) -> list[tuple[str, Path | None]]:
    """(subset, dialogue folder) pairs in order: subsets by name, dialogues numeric ids first. A
    subset folder whose name is not a plain name gives (its name, None): that subset is invalid,
    the others are read."""
    if not tree.is_dir():
        raise InputError(str(tree), "the tree is not a folder")
    out: list[tuple[str, Path | None]] = []
    for sub in sorted(_listed(tree)):
        if name_problem(sub.name):
            out.append((sub.name, None))
            continue
        for d in sorted(_listed(sub), key=lambda p: id_sort_key(p.name)):
            out.append((sub.name, d))
    return out


def load_tree(tree: Path, strict: bool = False) -> tuple[list, list]:
    """(dialogues, invalid): every dialogue that loads, and (key, problem) for each that does not;
    a dialogue whose task or set differs from its subset's first dialogue is invalid too.
    strict: the first problem raises."""
    dialogues, invalid, first = [], [], {}
    for subset, d in scan(tree):
        if d is None:
            problem = f"subset name {name_problem(subset)}"
            if strict:
                raise InputError(ascii(subset)[:80], problem)
            invalid.append((ascii(subset)[:80], problem))
            continue
        key = f"{subset}/{d.name}"
        try:
            if name_problem(d.name):
                raise InputError(key, f"dialogue id {name_problem(d.name)}")
            dia = load_dialogue(subset, d)
            ref = first.setdefault(subset, (dia.task, dia.set))
            if (dia.task, dia.set) != ref:
                raise InputError(key, f"task/set {dia.task}/{dia.set} differs from the subset's "
                                      f"{ref[0]}/{ref[1]}")
        except InputError as exc:
            if strict:
                raise
            invalid.append((key, exc.problem))
            continue
        dialogues.append(dia)
    return dialogues, invalid
