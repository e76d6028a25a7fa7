"""Loading a Full-Duplex-Bench v1.0 tree: subsets, samples, eligibility and the load-time checks.

A sample is ineligible (listed with its reasons, never dropped) when a file it needs is
missing, a status file says a stage failed, or runner.json says `"status": "ineligible"` (the
output was made but must not be scored: reason "ineligible:<code>", e.g. ineligible:drift). An eligible sample whose times fail a check
stops the whole run with the sample id and the problem (strict, the default), or, when the
caller excludes invalid samples (`aggregator score --exclude-invalid`, the pipeline stage),
becomes ineligible with the reason "invalid:<code>" and keeps the one-line problem.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import soundfile as sf

from duplexeval_common.samples import id_sort_key as sort_key
from duplexeval_common.samples import ScoredSample, inside, name_problem

from duplexeval_common.errors import InputError
from duplexeval_common.timebase import is_number, to_us

from ..tasks import task_of

ANNOTATION = {"pause_handling": "pause.json", "smooth_turn_taking": "turn_taking.json",
              "user_interruption": "interrupt.json", "backchannel": None}
STATUS_FILES = ("status.json", "runner.json", "transcript.json", "asr.json")
OK_STATUSES = {"ok", "success", "succeeded", "done", "completed"}
# A word may end a little after the input window (ASR alignment of the last word); an end more
# than this past T is a load-time problem.
WORD_END_TOLERANCE_S = 0.5


@dataclass
class Sample(ScoredSample):
    T_us: int | None = None
    words: list[tuple[int, int]] = field(default_factory=list)  # (start_us, end_us), by start
    pauses: list[tuple[int, int]] = field(default_factory=list)
    E_us: int | None = None
    S_us: int | None = None
    R_us: int | None = None
    output_sr: int | None = None
    output_channels: int | None = None
    rating: int | None = None
    invalid: tuple[str, str] | None = None  # (reason, one-line problem): the first load-time problem


def read_json(path: Path, where: str):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise InputError(where, f"{path.name} is not valid JSON ({exc})", "bad-json") from None


def invalid_reason(exc: InputError) -> str:
    """The countable reason of a sample excluded for a load-time problem: "invalid:<code>"."""
    code = getattr(exc, "code", None)
    if not code:
        code = ("bad-json" if "is not valid JSON" in exc.problem else
                "no-icc-ground-truth" if "ground-truth distribution" in exc.problem else "bad-input")
    return f"invalid:{code}"


def mark_invalid(s: "Sample", exc: InputError) -> None:
    """Make a sample ineligible for a load-time problem; the first problem is the one kept."""
    reason = invalid_reason(exc)
    if s.invalid is None:
        s.invalid = (reason, exc.problem)
    s.reasons = sorted(set(s.reasons) | {reason})


def _inside_tree(tree: Path, p: Path, where: str, what: str) -> None:
    """Refuse a folder of the tree that is a link leaving it (nothing outside the tree is read)."""
    if not inside(tree, p):
        raise InputError(where, f"{what} is a link leaving the tree")


def discover_subsets(tree: Path, tasks: dict[str, str] | None = None) -> list[tuple[str, str]]:
    """(subset folder, task) of the tree's subset folders: the task `tasks` gives the folder (the
    manifest's, or the user's --task), else the official name's (tasks.task_of); a folder with
    neither is not a subset."""
    if not tree.is_dir():
        raise InputError(str(tree), "tree folder does not exist")
    tasks = tasks or {}
    found = []
    for p in tree.iterdir():
        task = tasks.get(p.name) or task_of(p.name)
        if p.is_dir() and not p.name.startswith(".") and task:
            problem = name_problem(p.name)
            if problem:
                raise InputError(p.name[:80], f"subset folder name {problem}")
            _inside_tree(tree, p, p.name, "subset folder")
            found.append((p.name, task))
    return sorted(found)


NO_SUBSET = ("no subset folder (names ending with pause_handling, turn_taking, backchannel "
             "or user_interruption; a folder named otherwise needs its task: --task SUBSET=TASK, "
             "make score TASKS=\"SUBSET=TASK ...\")")


def manifest_tasks(manifest: dict[str, list[dict]] | None) -> dict[str, str]:
    """{subset: task} of a manifest's rows (the first row of a subset that names one)."""
    out: dict[str, str] = {}
    for subset, rows in (manifest or {}).items():
        for r in rows:
            if isinstance(r.get("task"), str) and r["task"]:
                out.setdefault(subset, r["task"])
                break
    return out


def upstream_failures(tree: Path) -> dict[str, str]:
    """Failures recorded at the tree root: stage.json / status.json {"samples": {key: {status}}}."""
    out: dict[str, str] = {}
    for name in ("stage.json", "status.json"):
        p = tree / name
        if not p.is_file():
            continue
        rec = read_json(p, name)
        samples = rec.get("samples", {}) if isinstance(rec, dict) else {}
        who = rec.get("component", name.split(".")[0]) if isinstance(rec, dict) else name
        for key, st in samples.items():
            if isinstance(st, dict) and st.get("status", "ok") not in OK_STATUSES:
                out.setdefault(key, f"failed:{who}")
    return out


def reason_code(text: str) -> str:
    """A short, countable reason for an upstream failure given as free text.

    "failed:runner" stays; "failed upstream in duplex-runner: timeout" becomes
    "failed:duplex-runner"; anything else "failed:upstream".
    """
    if re.fullmatch(r"[a-z]+:[A-Za-z0-9_.-]+", text):
        return text
    if re.fullmatch(r"[A-Za-z0-9_.-]+", text):
        return f"failed:{text}"
    m = re.search(r"\bin ([A-Za-z0-9_.-]+)", text)
    return f"failed:{m.group(1).rstrip(':.')}" if m else "failed:upstream"


def manifest_samples(tree: Path) -> dict[str, list[dict]] | None:
    p = tree / "manifest.json"
    if not p.is_file():
        return None
    rows = read_json(p, "manifest.json")
    if not isinstance(rows, dict) or not isinstance(rows.get("samples"), list):
        raise InputError("manifest.json", "has no samples list")
    by: dict[str, list[dict]] = {}
    seen = set()
    for i, r in enumerate(rows["samples"]):
        if not isinstance(r, dict):
            raise InputError("manifest.json", f"sample row {i} is not an object")
        for field_name in ("subset", "id"):
            problem = name_problem(r.get(field_name))
            if problem:
                raise InputError("manifest.json", f"sample row {i}: {field_name} {problem}")
        if (r["subset"], r["id"]) in seen:
            raise InputError("manifest.json", f"duplicate sample {r['subset']}/{r['id']}")
        seen.add((r["subset"], r["id"]))
        by.setdefault(str(r["subset"]), []).append(r)
    return by


def _inside_any(resolved_roots: list[Path], path: Path) -> bool:
    """inside(r, path) for some root r, the roots given already resolved."""
    real = Path(os.path.realpath(path))
    for r in resolved_roots:
        try:
            real.relative_to(r)
            return True
        except ValueError:
            continue
    return False


def select_samples(tree: Path, subset: str, task: str, manifest: dict | None,
                   failures: dict[str, str],
                   on_invalid: Callable[[Sample, InputError], None] | None = None,
                   link_roots: tuple = ()) -> list[Sample]:
    """The subset's samples with their ineligibility reasons.

    A sample's file that is a link leading outside the tree (and outside `link_roots`, the
    pipeline's input stages) is refused: nothing outside what was given is read.

    A status file that is not valid JSON raises InputError, or, with on_invalid, is passed
    to it (the sample is then marked invalid by the caller).
    """
    sub = tree / subset
    if manifest is not None and subset in manifest:
        ids = [str(r["id"]) for r in manifest[subset]]
    else:
        ids = [p.name for p in sub.iterdir() if p.is_dir() and not p.name.startswith(".")]
        for sid in ids:
            problem = name_problem(sid)
            if problem:
                raise InputError(f"{subset}/{sid[:80]}", f"sample folder name {problem}")
    samples = []
    # the roots resolved once (inside() resolves both sides on every call)
    roots = [Path(os.path.realpath(r)) for r in (link_roots or (tree,))]
    for sid in sorted(set(ids), key=sort_key):
        s = Sample(subset, sid, task, sub / sid)
        if s.dir.exists():
            _inside_tree(tree, s.dir, s.key, "sample folder")
            if s.dir.is_dir():
                for f in s.dir.iterdir():
                    if f.is_symlink() and not _inside_any(roots, f):
                        raise InputError(s.key, f"{f.name} is a link leaving the tree")
        if not s.dir.is_dir():
            s.reasons.append("missing:sample folder")
        else:
            need = ["input.wav", ANNOTATION[task], "output.wav", "output.json"]
            s.reasons += [f"missing:{n}" for n in need if n and not (s.dir / n).is_file()]
            bad = None
            for name in STATUS_FILES:
                p = s.dir / name
                if p.is_file():
                    try:
                        st = read_json(p, s.key)
                    except InputError as exc:
                        if on_invalid is None:
                            raise
                        bad = bad or exc
                        continue
                    if isinstance(st, dict) and st.get("status") == "ineligible":
                        # made, but not to be scored (e.g. a runner whose realtime pacing drifted)
                        code = (st.get("ineligible") or {}).get("code") if isinstance(st.get("ineligible"), dict) else None
                        s.reasons.append(f"ineligible:{code or name[:-5]}")
                    elif isinstance(st, dict) and "status" in st and st["status"] not in OK_STATUSES:
                        s.reasons.append(f"failed:{name[:-5]}")
        if s.key in failures:
            s.reasons.append(reason_code(failures[s.key]))
        s.reasons = sorted(set(s.reasons))
        if s.dir.is_dir() and bad is not None:
            on_invalid(s, bad)
        samples.append(s)
    return samples


def check_manifest_hashes(s: Sample, row: dict, sha256_file) -> None:
    for name, digest in sorted((row.get("files") or {}).items()):
        p = s.dir / name
        if name in ("input.wav", ANNOTATION[s.task]) and p.is_file() and sha256_file(p) != digest:
            raise InputError(s.key, f"{name} differs from manifest.json", "manifest-hash")


# ---- load-time checks of an eligible sample ----

def _wav_info(path: Path, where: str):
    try:
        return sf.info(str(path))
    except RuntimeError as exc:
        raise InputError(where, f"{path.name} is not readable audio ({exc})", "unreadable-audio") from None


def _time(x, where: str, what: str, code: str = "bad-annotation") -> int:
    if not is_number(x):
        raise InputError(where, f"{what} is not a number ({x!r})", code)
    return to_us(x)


def _inside(t: int, T: int, where: str, what: str, code: str = "annotation-outside-window") -> None:
    if not 0 <= t <= T:
        raise InputError(where, f"{what} {t / 1e6:.6f} s is outside the window [0, {T / 1e6:.6f}]", code)


def _annotation_items(obj, where: str, name: str) -> list:
    if not isinstance(obj, list) or not obj:
        raise InputError(where, f"{name} lists nothing", "bad-annotation")
    for i, it in enumerate(obj):
        ts = it.get("timestamp") if isinstance(it, dict) else None
        if not isinstance(ts, list) or len(ts) < 2:
            raise InputError(where, f"{name} item {i} has no [start, end] timestamp", "bad-annotation")
    return obj


def load_words(s: Sample) -> None:
    out = read_json(s.dir / "output.json", s.key)
    chunks = out.get("chunks") if isinstance(out, dict) else None
    if not isinstance(chunks, list):
        raise InputError(s.key, "output.json has no chunks list", "bad-words")
    words = []
    tolerance = to_us(WORD_END_TOLERANCE_S)
    for i, c in enumerate(chunks):
        ts = c.get("timestamp") if isinstance(c, dict) else None
        if not isinstance(ts, list) or len(ts) < 2:
            raise InputError(s.key, f"output.json word {i} has no [start, end] timestamp", "bad-words")
        if ts[0] is None:
            raise InputError(s.key, f"output.json word {i} has no start time", "bad-words")
        a = _time(ts[0], s.key, f"output.json word {i} start", "bad-words")
        b = a if ts[1] is None else _time(ts[1], s.key, f"output.json word {i} end", "bad-words")
        if b < a:
            raise InputError(s.key, f"output.json word {i} ends ({b / 1e6:.6f} s) before it starts "
                                    f"({a / 1e6:.6f} s)", "word-end-before-start")
        _inside(a, s.T_us, s.key, f"output.json word {i} starts at", "word-start-outside-window")
        if b > s.T_us + tolerance:
            raise InputError(s.key, f"output.json word {i} ends at {b / 1e6:.6f} s, more than "
                                    f"{WORD_END_TOLERANCE_S} s past the window end T = "
                                    f"{s.T_us / 1e6:.6f} s", "word-end-past-window")
        words.append((a, b))
    s.words = sorted(words)


def load_sample(s: Sample) -> None:
    """Read an eligible sample's times and check them; raises InputError on the first problem."""
    info = _wav_info(s.dir / "input.wav", s.key)
    s.T_us = to_us(info.frames / info.samplerate)
    out = _wav_info(s.dir / "output.wav", s.key)
    s.output_sr, s.output_channels = out.samplerate, out.channels
    load_words(s)
    ann = ANNOTATION[s.task]
    if s.task == "pause_handling":
        items = _annotation_items(read_json(s.dir / ann, s.key), s.key, ann)
        prev_end = None
        for i, it in enumerate(items):
            a = _time(it["timestamp"][0], s.key, f"pause {i} start")
            b = _time(it["timestamp"][1], s.key, f"pause {i} end")
            _inside(a, s.T_us, s.key, f"pause {i} starts at")
            _inside(b, s.T_us, s.key, f"pause {i} ends at")
            if a > b:
                raise InputError(s.key, f"pause {i} ends before it starts", "bad-annotation")
            if prev_end is not None and a < prev_end:
                raise InputError(s.key, f"pause {i} starts before pause {i - 1} ends "
                                        "(pauses must be sorted and not overlap)", "bad-annotation")
            prev_end = b
            s.pauses.append((a, b))
    elif s.task == "smooth_turn_taking":
        items = _annotation_items(read_json(s.dir / ann, s.key), s.key, ann)
        s.E_us = _time(items[0]["timestamp"][0], s.key, "turn end E")
        _inside(s.E_us, s.T_us, s.key, "turn end E at")
    elif s.task == "user_interruption":
        items = _annotation_items(read_json(s.dir / ann, s.key), s.key, ann)
        s.S_us = _time(items[0]["timestamp"][0], s.key, "interruption onset S")
        s.R_us = _time(items[0]["timestamp"][1], s.key, "interruption end R")
        _inside(s.S_us, s.T_us, s.key, "interruption onset S at")
        _inside(s.R_us, s.T_us, s.key, "interruption end R at")
        if s.S_us > s.R_us:
            raise InputError(s.key, "interruption onset S is after its end R", "bad-annotation")
        for a, _ in s.words:
            # times are written to the microsecond: a word at R may read up to 1 us before it
            if a < s.R_us - 1:
                raise InputError(s.key, f"output.json word starts at {a / 1e6:.6f} s, before the "
                                        f"interruption end R = {s.R_us / 1e6:.6f} s", "word-before-R")
        # output.wav must hold T seconds of samples (to within one output sample)
        if abs(out.frames * info.samplerate - info.frames * out.samplerate) > info.samplerate:
            raise InputError(s.key, f"output.wav lasts {out.frames / out.samplerate:.6f} s, "
                                    f"input.wav {info.frames / info.samplerate:.6f} s", "output-length")
        r = s.dir / "rating.json"
        if r.is_file():
            obj = read_json(r, s.key)
            rating = obj.get("rating") if isinstance(obj, dict) else None
            if not isinstance(rating, int) or isinstance(rating, bool) or not 0 <= rating <= 5:
                raise InputError(s.key, f"rating.json has no integer rating in 0..5 ({rating!r})",
                                 "bad-rating")
            s.rating = rating
