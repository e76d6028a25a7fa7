"""A subset's task: from the suffix of its name (a benchmark's SUBSET_TASKS, the `subset_tasks` of
its declaration), or as the user gives it (`--task SUBSET=TASK`)."""

from __future__ import annotations

from typing import Iterable, Mapping

from .errors import InputError


def task_of(subset_tasks: Iterable[tuple[str, str]], subset: str) -> str | None:
    """The task of the first (suffix, task) whose suffix ends the subset's name, or None."""
    for suffix, task in subset_tasks:
        if subset.endswith(suffix):
            return task
    return None


def check_tasks(tasks: Mapping[str, str] | None, known: tuple[str, ...], title: str,
                where: str = "--task") -> dict[str, str]:
    """{subset: task} given by the user, each task one of known (one line naming the benchmark's
    title otherwise)."""
    out = {}
    for subset, task in (tasks or {}).items():
        if task not in known:
            raise InputError(where, f"{subset}={task}: {task!r} is not a {title} task "
                                    f"(one of {', '.join(known)})")
        out[subset] = task
    return out
