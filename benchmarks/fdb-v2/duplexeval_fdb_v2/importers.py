"""The importer of upstream's task file: `duplexeval import fdb-v2 FILE` (the `importers` hook),
run by the orchestrator with its import service (duplexeval/importing.py: the dataset folder built
aside and renamed into place, the manifest, the shared id rules).

FILE is the user's copy of Full-Duplex-Bench v2's task file (DanielLin94144/Full-Duplex-Bench,
`v2/prompts_staged_200.json`, CC BY-NC 4.0: nothing of it is in this repository): one JSON object
{"version", "created_at", "note", "settings": {"turn_limit", "max_duration_sec", ...}, "splits":
{"Daily" | "Correction" | "EntityTracking" | "Safety": {"classes": [...], "tasks": [{"id",
"split", "class_id", "class_name", "scenario_title", "examiner_system_prompt",
"examiner_task_prompt", "staged_reveal": {"T1": ..., "T2": ...}, "skills_tested",
"allow_barge_in", "metrics_focus"}]}}}. FILE is never written to.

What is written, <home>/datasets/<name>/:

    tasks.json     format tasks.IMPORTED_FORMAT, read by the dataset hook (dataset.py)
    manifest.json  the import manifest: build "dataset" (the hook builds the samples: tts-synth's
                   import mode does not copy them), tasks.json's sha256 in root_files, one row
                   per task (subset = task = its kind, id, source_id: upstream's id; no files of
                   its own), what was excluded and why, and `upstream`: the file's provenance

Each task becomes (tasks.py): kind from its split (SPLITS); system_prompt = examiner_system_prompt
+ a blank line + examiner_task_prompt (the examiner adds upstream's "Do not talk over the other
speaker." itself); goals = staged_reveal in T order, T1 -> goal T1, ..., with no `say` and no
`opening` (upstream scripts no line: the examiner's LLM writes the opening and every line toward
the goal); end_phrase "The conversation is over."; turn_limit = settings.turn_limit (default 5);
`source` = upstream's other fields of the task (its id, split, class, scenario title,
allow_barge_in, skills_tested, metrics_focus), copied to each sample.json. The id is upstream's
("Correction.001": dots pass the sample id rule) when it is a plain name, else a safe name made
from it (`safe_id`: the same id always gives the same name; a note says so), upstream's kept in
`source`. Settings other than turn_limit are recorded, not applied: `max_duration_sec` is
upstream's per-task setting (upstream's run_dataset.sh runs every session 120 s regardless), and
here the benchmark option duration_s sets the session length.

The file is refused with one line (nothing written) when it is not strict JSON (no NaN, no key
given twice: duplexeval_common.jsonio), not an object with `splits` naming at least one known
split, or its settings are malformed. Otherwise each bad task is left out with one line
`<split>/<id>: <reason>` (`<split>/#<index>` when it has no usable id, `<split>/*` for a whole
split) and listed in the manifest's `excluded`; the others are imported. The checks, in order:
the split is known and holds a `tasks` list; the task is an object with a non-empty string id
that no other task also names (ids equal ignoring case, or as numbers, name the same sample:
every spelling is excluded); every field above present with its type (strings, an object, lists
of strings, a boolean allow_barge_in); `split` names the split it is listed under; both prompts
non-empty; staged_reveal's keys T1..Tn with none missing, 1 to turn_limit - 1 of them, each a
non-empty string; the task as tasks.py reads it.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from duplexeval_common.benchmarks import Importer
from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.import_checks import Excluded, canonical_id
from duplexeval_common.jsonio import dumps, strict_loads
from duplexeval_common.samples import name_problem, printable

from .tasks import IMPORTED_FORMAT, MAX_TURN_LIMIT, TASK_FILE, TASKS, parse_task

NAME = "fdb-v2"
SPLITS = {"Daily": "daily", "Correction": "correction", "EntityTracking": "entity_tracking", "Safety": "safety"}
END_PHRASE = "The conversation is over."
DEFAULT_TURN_LIMIT = 5
MAX_BYTES = 64 << 20          # upstream's file is about 0.5 MB
STRINGS = ("id", "split", "class_id", "class_name", "scenario_title", "examiner_system_prompt",
           "examiner_task_prompt")
LISTS = ("skills_tested", "metrics_focus")
REQUIRED = STRINGS + ("staged_reveal",) + LISTS + ("allow_barge_in",)
SOURCE_FIELDS = ("id", "split", "class_id", "class_name", "scenario_title", "allow_barge_in", "skills_tested",
                 "metrics_focus")
UPSTREAM = {"benchmark": "Full-Duplex-Bench v2", "repository": "https://github.com/DanielLin94144/Full-Duplex-Bench",
            "path": "v2/prompts_staged_200.json", "license": "CC BY-NC 4.0"}
DURATION_NOTE = ("settings.max_duration_sec is upstream's per-task setting, and upstream's run_dataset.sh runs "
                 "each session 120 s regardless; here the session length is the fdb-v2 benchmark option "
                 "duration_s (--benchmark-arg duration_s=...), not this file. Only settings.turn_limit is applied.")
_T = re.compile(r"T([1-9][0-9]{0,3})")


def _type(v) -> str:
    return "null" if v is None else {bool: "boolean", int: "number", float: "number", str: "string",
                                     list: "list", dict: "object"}.get(type(v), type(v).__name__)


def safe_id(raw: str) -> str:
    """A sample id for upstream's `raw`: itself when it is a plain name (samples.name_problem),
    else its plain characters and the start of its sha256 (deterministic, distinct per id)."""
    if name_problem(raw) is None:
        return raw
    slug = re.sub(r"\.{2,}", ".", re.sub(r"[^A-Za-z0-9_.-]+", "-", raw)).strip("-._")[:100].rstrip("-._")
    digest = hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"{slug}-{digest}" if slug else f"task-{digest}"


@dataclass
class Entry:
    split: str
    index: int
    raw: object
    id: str | None = None        # upstream's id (a non-empty string), else None
    sid: str | None = None       # ours (safe_id)
    reason: str | None = None

    @property
    def key(self) -> str:
        return f"{self.split}/{printable(self.id)}" if self.id is not None else f"{self.split}/#{self.index}"


# ---- the file ----------------------------------------------------------------------------------

def read_file(path: Path) -> tuple[bytes, dict]:
    """(bytes, parsed object) of upstream's task file; a one-line refusal when it is not one."""
    path = Path(path)
    if path.is_dir():
        raise DuplexEvalError(f"{path}: is a folder; give upstream's task file (Full-Duplex-Bench "
                              f"{UPSTREAM['path']})")
    if not path.is_file():
        raise DuplexEvalError(f"{path}: no such file")
    try:
        if path.stat().st_size > MAX_BYTES:
            raise DuplexEvalError(f"{path}: {path.stat().st_size} bytes is too large for a Full-Duplex-Bench v2 "
                                  f"task file (at most {MAX_BYTES})")
        data = path.read_bytes()
    except OSError as exc:
        raise DuplexEvalError(f"{path}: not readable ({exc.strerror or exc})") from None
    what = f"{path.name}: not a Full-Duplex-Bench v2 task file"
    try:
        doc = strict_loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise DuplexEvalError(f"{what}: not strict JSON ({printable(str(exc), 160)})") from None
    try:  # a lone surrogate escape ("\ud800") is JSON but no text: tasks.json could not be written
        dumps(doc).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise DuplexEvalError(f"{what}: it holds a lone surrogate escape "
                              f"({printable(exc.object[exc.start:exc.end])}), which is not text") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("splits"), dict):
        raise DuplexEvalError(f"{what}: expected a JSON object with `splits` ({', '.join(SPLITS)}), got "
                              + (f"an object with {', '.join(sorted(map(printable, doc))[:6]) or 'no fields'}"
                                 if isinstance(doc, dict) else f"a {_type(doc)}"))
    if not set(doc["splits"]) & set(SPLITS):
        got = ", ".join(printable(s, 40) for s in list(doc["splits"])[:6]) or "none"
        raise DuplexEvalError(f"{what}: its splits name none of {', '.join(SPLITS)} (got {got})")
    return data, doc


def turn_limit(doc: dict, name: str) -> int:
    settings = doc.get("settings", {})
    if not isinstance(settings, dict):
        raise DuplexEvalError(f"{name}: settings must be an object, got a {_type(settings)}")
    tl = settings.get("turn_limit", DEFAULT_TURN_LIMIT)
    if isinstance(tl, bool) or not isinstance(tl, int) or not 2 <= tl <= MAX_TURN_LIMIT:
        raise DuplexEvalError(f"{name}: settings.turn_limit must be a whole number in [2, {MAX_TURN_LIMIT}], "
                              f"got {printable(repr(tl), 40)}")
    return tl


def provenance(data: bytes, doc: dict, tl: int) -> dict:
    """What the import records of the upstream file (the manifest's and tasks.json's `source`)."""
    keep = {k: doc[k] for k in ("version", "created_at", "note") if isinstance(doc.get(k), (str, int, float))
            and not isinstance(doc.get(k), bool)}
    return {**UPSTREAM, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data), **keep,
            "settings": doc.get("settings", {}), "turn_limit": tl, "duration_note": DURATION_NOTE}


# ---- the tasks ---------------------------------------------------------------------------------

def entries(doc: dict, report) -> tuple[list[Entry], list[dict]]:
    """(the tasks of the known splits, the excluded whole splits), in the file's order."""
    out, excluded = [], []
    for split, body in doc["splits"].items():
        why = None
        if split not in SPLITS:
            why = f"unknown split {printable(split, 40)!r} (known: {', '.join(SPLITS)}); its tasks are not imported"
        elif not isinstance(body, dict) or not isinstance(body.get("tasks"), list):
            why = "the split must be an object whose `tasks` is a list of tasks"
        if why:
            excluded.append({"subset": printable(split), "id": "*", "reason": why})
            report(f"{printable(split)}/*: {why}")
            continue
        for i, raw in enumerate(body["tasks"]):
            e = Entry(split, i, raw)
            if not isinstance(raw, dict):
                e.reason = f"tasks[{i}] is not an object (a {_type(raw)})"
            elif "id" not in raw:
                e.reason = f"tasks[{i}] has no id"
            elif not isinstance(raw["id"], str) or not raw["id"].strip():
                e.reason = f"tasks[{i}]: id must be a non-empty string, got {printable(repr(raw['id']), 40)}"
            else:
                e.id, e.sid = raw["id"], safe_id(raw["id"])
            out.append(e)
    for split in SPLITS:
        if split not in doc["splits"]:
            report(f"note: no {split} split in the file; importing the others")
    return out, excluded


def mark_duplicates(es: list[Entry]) -> None:
    """Every task whose id another task's also names (across splits: the dataset's ids are unique)."""
    groups: dict[str, list[Entry]] = {}
    for e in es:
        if e.reason is None:
            groups.setdefault(canonical_id(e.sid), []).append(e)
    for group in groups.values():
        if len(group) < 2:
            continue
        where = ", ".join(e.split for e in group)
        if len({e.id for e in group}) == 1:
            why = f"id {printable(group[0].id)!r} is given {len(group)} times ({where}); none is imported"
        else:
            names = " and ".join(repr(printable(e.id)) for e in group)
            why = f"duplicate id: {names} ({where}) name the same sample; none is imported"
        for e in group:
            e.reason = why


def check_task(e: Entry, tl: int) -> dict:
    """The task of tasks.json (IMPORTED_FORMAT) for one upstream task; Excluded on its first problem."""
    raw = e.raw
    missing = [k for k in REQUIRED if k not in raw]
    if missing:
        raise Excluded(f"missing field {', '.join(missing)}")
    for k in STRINGS:
        if not isinstance(raw[k], str):
            raise Excluded(f"{k} must be a string, got a {_type(raw[k])}")
    if not isinstance(raw["staged_reveal"], dict):
        raise Excluded(f"staged_reveal must be an object {{\"T1\": goal, ...}}, got a {_type(raw['staged_reveal'])}")
    for k in LISTS:
        if not isinstance(raw[k], list) or not all(isinstance(x, str) for x in raw[k]):
            raise Excluded(f"{k} must be a list of strings")
    if not isinstance(raw["allow_barge_in"], bool):
        raise Excluded(f"allow_barge_in must be true or false, got {printable(repr(raw['allow_barge_in']), 40)}")
    if raw["split"] != e.split:
        raise Excluded(f"split is {printable(raw['split'], 40)!r} but the task is listed under {e.split}")
    for k in ("examiner_system_prompt", "examiner_task_prompt"):
        if not raw[k].strip():
            raise Excluded(f"{k} is empty")
    reveal = raw["staged_reveal"]
    if not reveal:
        raise Excluded(f"staged_reveal is empty (1 to {tl - 1} goals T1..Tn)")
    numbers = [int(m.group(1)) if (m := _T.fullmatch(k)) else None for k in reveal]
    if None in numbers or sorted(numbers) != list(range(1, len(reveal) + 1)):
        got = ", ".join(printable(k, 20) for k in list(reveal)[:8])
        raise Excluded(f"staged_reveal keys must be T1..T{len(reveal)} with none missing, got {got}")
    if len(reveal) > tl - 1:
        raise Excluded(f"staged_reveal has {len(reveal)} goals; turn_limit {tl} allows 1 to {tl - 1} (each goal "
                       "a turn, the end phrase one more)")
    goals = []
    for n in range(1, len(reveal) + 1):
        text = reveal[f"T{n}"]
        if not isinstance(text, str) or not text.strip():
            raise Excluded(f"staged_reveal T{n} must be a non-empty string")
        goals.append({"goal": text.strip()})
    task = {"id": e.sid, "kind": SPLITS[e.split],
            "system_prompt": raw["examiner_system_prompt"].strip() + "\n\n" + raw["examiner_task_prompt"].strip(),
            "goals": goals, "end_phrase": END_PHRASE, "turn_limit": tl,
            "source": {k: raw[k] for k in SOURCE_FIELDS}}
    try:
        parse_task(f"{TASK_FILE}: task {e.index}", task, imported=True)
    except DuplexEvalError as exc:  # what the dataset hook would refuse
        raise Excluded(str(exc).split(": ", 2)[-1]) from None
    return task


# ---- the importer ------------------------------------------------------------------------------

def import_file(svc, path: Path, name: str, home: Path | None = None, force: bool = False, report=None):
    """Import upstream's task file (the module docstring); svc: the orchestrator's import service."""
    report = report or svc.default_report
    svc.check_name(name)
    path = Path(path)
    data, doc = read_file(path)
    tl = turn_limit(doc, path.name)
    es, excluded = entries(doc, report)
    mark_duplicates(es)
    tasks, rows = [], []
    for e in es:
        try:
            if e.reason:
                raise Excluded(e.reason)
            task = check_task(e, tl)
        except Excluded as exc:
            excluded.append({"subset": e.split, "id": printable(e.id) if e.id is not None else f"#{e.index}",
                             "reason": str(exc)})
            report(f"{e.key}: {exc}")
            continue
        if e.sid != e.id:
            report(f"note: {e.key}: the id is not a plain name (sample ids are letters, digits, '_', '-', '.'); "
                   f"imported as {e.sid}")
        tasks.append(task)
        rows.append({"subset": task["kind"], "id": e.sid, "task": task["kind"], "files": {}, "source_id": e.id})
    if not tasks:
        raise DuplexEvalError(f"{path}: no task passed the checks ({len(excluded)} excluded); nothing was written")
    source = provenance(data, doc, tl)
    order = {k: i for i, k in enumerate(TASKS)}
    tasks.sort(key=lambda t: order[t["kind"]])   # by kind; the file's order within a kind
    text = (dumps({"format": IMPORTED_FORMAT, "source": source, "tasks": tasks}) + "\n").encode("utf-8")
    with svc.staging(name, path, home, force) as (work, commit):
        (work / TASK_FILE).write_bytes(text)
        manifest = svc.manifest(NAME, name, NAME, path, rows, excluded,
                                {TASK_FILE: hashlib.sha256(text).hexdigest()},
                                build=svc.BUILD_BY_HOOK, upstream=source)
        final = commit(manifest)
    return svc.Imported(name, final, manifest, excluded)


IMPORTERS = {
    NAME: Importer(NAME, "Upstream's task file as downloaded: FILE is Full-Duplex-Bench v2's "
                   "v2/prompts_staged_200.json (200 staged tasks in the splits Daily, Correction, EntityTracking, "
                   "Safety). Writes a tasks.json the fdb-v2 dataset stage reads; the examiner's LLM says every "
                   "line.", import_file, default_name=NAME, argument="FILE"),
}
