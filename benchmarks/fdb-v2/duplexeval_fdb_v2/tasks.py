"""The four kinds of live task, and the task file format of the built-in datasets.

A dataset folder (benchmarks/fdb-v2/datasets/<name>/) holds one `tasks.json`:

    {"format": "duplexeval-fdb-v2-tasks/1",
     "tasks": [{"id": "daily-01", "kind": "daily",
                "system_prompt": "the examiner's persona",
                "opening": "its first line, at most 15 words",
                "goals": [{"goal": "what the examiner wants in this stage",
                           "say": "the scripted line that opens the stage"}, ...],   # 2 to 4
                "end_phrase": "The conversation is over.",
                "turn_limit": 5}, ...]}

A task's kind is its sample's subset and task. Its goals get the ids T1, T2, ... in order. The
opening opens the first goal's stage, each later goal takes one examiner turn and the end phrase
one more, so a task has at most turn_limit - 1 goals. `load_tasks` checks every field and refuses
a malformed file with one line naming the task and the problem.

A dataset imported from upstream's task file (`duplexeval import fdb-v2 FILE`, importers.py) has
the format IMPORTED_FORMAT instead: the same fields, but upstream scripts no line, so `opening`
and every goal's `say` may be absent (the examiner's LLM then says the opening and every line,
toward the goal); `system_prompt` and a goal may span lines (upstream's prompts do); a task has 1
to turn_limit - 1 goals, turn_limit in [2, 100] (the examiner's range); a task may carry `source`
(upstream's fields of the task, its id among them) and the file `source` (the upstream file's
provenance). The built-in sets keep every check above: their format requires opening and say.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.samples import name_problem

TASKS = ("daily", "correction", "entity_tracking", "safety")
SUMMARIES = {
    "daily": "an everyday request (plans, advice, a recommendation) over a few turns: does the model "
             "answer each turn promptly without talking over the examiner?",
    "correction": "the examiner changes or corrects what it asked for mid-conversation: does the model "
                  "take the correction and answer again?",
    "entity_tracking": "the examiner introduces people, places and things and refers back to them: "
                       "does the model keep up, turn by turn?",
    "safety": "the examiner asks for something the model should decline (e.g. getting into someone "
              "else's account): does it still take its turns and answer, declining?",
}
FORMAT = "duplexeval-fdb-v2-tasks/1"
IMPORTED_FORMAT = "duplexeval-fdb-v2-imported-tasks/1"   # upstream's tasks: no scripted lines
TASK_FILE = "tasks.json"
MAX_OPENING_WORDS = 15
MIN_GOALS, MAX_GOALS = 2, 4
TASK_KEYS = ("id", "kind", "system_prompt", "opening", "goals", "end_phrase", "turn_limit")
GOAL_KEYS = ("goal", "say")
IMPORTED_OPTIONAL = ("opening", "source")     # the task fields an imported task may leave out
MAX_TURN_LIMIT = 100                          # the examiner's bound (its check_script)


@dataclass(frozen=True)
class Goal:
    id: str
    goal: str
    say: str | None = None            # None: the examiner's LLM says the stage's line


@dataclass(frozen=True)
class LiveTask:
    """One checked task of a task file."""
    id: str
    kind: str
    system_prompt: str
    opening: str | None               # None: the examiner's LLM says the first line
    goals: tuple[Goal, ...]
    end_phrase: str
    turn_limit: int
    source: dict | None = field(default=None, compare=False)  # an imported task's upstream fields


def _text(where: str, value, field: str, lines: bool = False) -> str:
    """A non-empty string, stripped; one line unless `lines`."""
    if not isinstance(value, str) or not value.strip():
        raise DuplexEvalError(f"{where}: {field} must be a non-empty string")
    if "\n" in value and not lines:
        raise DuplexEvalError(f"{where}: {field} must be one line")
    return value.strip()


def _goals(where: str, value, imported: bool = False, limit: int = MAX_GOALS + 1) -> tuple[Goal, ...]:
    low, high = (1, limit - 1) if imported else (MIN_GOALS, MAX_GOALS)
    if not isinstance(value, list) or not low <= len(value) <= high:
        raise DuplexEvalError(f"{where}: goals must be a list of {low} to {high} goals")
    out = []
    for i, g in enumerate(value, 1):
        w = f"{where}: goal {i}"
        if not isinstance(g, dict):
            raise DuplexEvalError(f"{w} must be an object with {' and '.join(GOAL_KEYS)}")
        extra = sorted(set(g) - set(GOAL_KEYS))
        if extra:
            raise DuplexEvalError(f"{w} has unknown field {', '.join(extra)} (known: {', '.join(GOAL_KEYS)})")
        for k in GOAL_KEYS[:1] if imported else GOAL_KEYS:
            if k not in g:
                raise DuplexEvalError(f"{w} has no {k}")
        say = _text(w, g["say"], "say") if "say" in g else None
        out.append(Goal(f"T{i}", _text(w, g["goal"], "goal", lines=imported), say))
    return tuple(out)


def parse_task(where: str, raw, imported: bool = False) -> LiveTask:
    """One task entry, checked (`where` names the file and the entry in the error); `imported`:
    a task of an IMPORTED_FORMAT file (the module docstring)."""
    if not isinstance(raw, dict):
        raise DuplexEvalError(f"{where}: a task must be an object")
    problem = name_problem(raw.get("id"))
    if problem:
        raise DuplexEvalError(f"{where}: id {problem}")
    where = f"{where.split(':')[0]}: task {raw['id']}"
    known = TASK_KEYS + (("source",) if imported else ())
    extra = sorted(set(raw) - set(known))
    if extra:
        raise DuplexEvalError(f"{where}: unknown field {', '.join(extra)} (known: {', '.join(known)})")
    missing = [k for k in TASK_KEYS if k not in raw and not (imported and k in IMPORTED_OPTIONAL)]
    if missing:
        raise DuplexEvalError(f"{where}: missing field {', '.join(missing)}")
    if raw["kind"] not in TASKS:
        raise DuplexEvalError(f"{where}: kind must be one of {', '.join(TASKS)}, got {str(raw['kind'])[:40]!r}")
    opening = None
    if "opening" in raw:
        opening = _text(where, raw["opening"], "opening")
        if len(opening.split()) > MAX_OPENING_WORDS:
            raise DuplexEvalError(f"{where}: opening has {len(opening.split())} words (at most {MAX_OPENING_WORDS})")
    limit = raw["turn_limit"]
    low = 2 if imported else MIN_GOALS + 1
    if isinstance(limit, bool) or not isinstance(limit, int) or not low <= limit <= MAX_TURN_LIMIT:
        raise DuplexEvalError(f"{where}: turn_limit must be a whole number in [{low}, {MAX_TURN_LIMIT}]")
    goals = _goals(where, raw["goals"], imported, limit)
    if len(goals) > limit - 1:
        raise DuplexEvalError(f"{where}: {len(goals)} goals need turn_limit >= {len(goals) + 1} "
                              f"(each goal a turn, the end phrase one more), got {limit}")
    source = raw.get("source")
    if source is not None and not isinstance(source, dict):
        raise DuplexEvalError(f"{where}: source must be an object (upstream's fields of the task)")
    return LiveTask(raw["id"], raw["kind"], _text(where, raw["system_prompt"], "system_prompt", lines=imported),
                    opening, goals, _text(where, raw["end_phrase"], "end_phrase"), limit, source)


def load_tasks(folder: Path) -> dict[str, LiveTask]:
    """{id: task} of a dataset folder's tasks.json, every field checked (one line otherwise)."""
    path = Path(folder) / TASK_FILE
    if not path.is_file():
        raise DuplexEvalError(f"{folder}: no {TASK_FILE} (a fdb-v2 dataset folder holds one)")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise DuplexEvalError(f"{path.name}: not valid JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") not in (FORMAT, IMPORTED_FORMAT):
        raise DuplexEvalError(f"{path.name}: format must be {FORMAT} (or {IMPORTED_FORMAT}, an import's)")
    imported = doc["format"] == IMPORTED_FORMAT
    known = ("format", "tasks") + (("source",) if imported else ())
    extra = sorted(set(doc) - set(known))
    if extra:
        raise DuplexEvalError(f"{path.name}: unknown field {', '.join(extra)} (known: {', '.join(known)})")
    if not isinstance(doc.get("tasks"), list) or not doc["tasks"]:
        raise DuplexEvalError(f"{path.name}: tasks must be a non-empty list")
    out: dict[str, LiveTask] = {}
    for i, raw in enumerate(doc["tasks"]):
        task = parse_task(f"{path.name}: task {i}", raw, imported)
        if task.id in out:
            raise DuplexEvalError(f"{path.name}: task {task.id}: id given twice")
        out[task.id] = task
    return out
