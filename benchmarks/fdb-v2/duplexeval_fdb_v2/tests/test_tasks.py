"""The shipped task files, and the one-line refusal of a malformed one (naming the task and the
problem)."""

from __future__ import annotations

import copy
import json

import pytest

from duplexeval_common.errors import DuplexEvalError
from duplexeval_fdb_v2.tasks import FORMAT, TASKS, load_tasks

from .conftest import BUILTIN, MINI


@pytest.mark.parametrize("folder, per_kind", [(MINI, 1), (BUILTIN, 6)])
def test_shipped_task_files(folder, per_kind):
    tasks = load_tasks(folder)
    assert sorted(t.kind for t in tasks.values()) == sorted(k for k in TASKS for _ in range(per_kind))
    for t in tasks.values():
        assert t.end_phrase == "The conversation is over." and t.turn_limit == 5
        assert 2 <= len(t.goals) <= 4 and len(t.opening.split()) <= 15
        assert [g.id for g in t.goals] == [f"T{i}" for i in range(1, len(t.goals) + 1)]


def _good():
    return json.loads((MINI / "tasks.json").read_text())


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["tasks"][0].pop("opening"), "tasks.json: task daily-01: missing field opening"),
    (lambda d: d["tasks"][1].update(kind="chitchat"), "tasks.json: task correction-01: kind must be one of"),
    (lambda d: d["tasks"][0].update(opening="word " * 16), "tasks.json: task daily-01: opening has 16 words"),
    (lambda d: d["tasks"][2].update(goals=d["tasks"][2]["goals"][:1]), "tasks.json: task entity-tracking-01: goals must be"),
    (lambda d: d["tasks"][3]["goals"][1].pop("say"), "tasks.json: task safety-01: goal 2 has no say"),
    (lambda d: d["tasks"][0].update(turn_limit=3), "tasks.json: task daily-01: 3 goals need turn_limit >= 4"),
    (lambda d: d["tasks"][0].update(extra=1), "tasks.json: task daily-01: unknown field extra"),
    (lambda d: d["tasks"][1].update(id="daily-01"), "tasks.json: task daily-01: id given twice"),
    (lambda d: d["tasks"][0].update(id="../x"), "tasks.json: task 0: id '../x' contains a path separator"),
    (lambda d: d.update(format="other/1"), f"tasks.json: format must be {FORMAT}"),
])
def test_malformed_file_is_one_line(tmp_path, edit, message):
    doc = copy.deepcopy(_good())
    edit(doc)
    (tmp_path / "tasks.json").write_text(json.dumps(doc))
    with pytest.raises(DuplexEvalError) as exc:
        load_tasks(tmp_path)
    assert str(exc.value).startswith(message) and "\n" not in str(exc.value)
