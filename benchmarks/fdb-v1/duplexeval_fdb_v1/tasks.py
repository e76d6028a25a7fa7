"""The four tasks of Full-Duplex-Bench v1.0, and how a subset gets its task.

A sample's task is declared by its dataset: the manifest row's `task` (every dataset duplexeval
builds or imports writes one). A tree without a manifest (one made by the official scripts, or
the upstream example data) gets it, per subset, from `--task SUBSET=TASK` (`make score
TASKS=...`), else from the official subset names' suffixes (SUBSET_TASKS: `candor_pause_handling`,
`synthetic_turn_taking`, `icc_backchannel`, `synthetic_user_interruption`, ...).
"""

from __future__ import annotations

from typing import Mapping

from duplexeval_common import subset_tasks

TASKS = ("pause_handling", "smooth_turn_taking", "backchannel", "user_interruption")
SUMMARIES = {
    "pause_handling": "does the model keep quiet while the user pauses mid-turn?",
    "smooth_turn_taking": "does it answer, and how fast, once the user is done?",
    "backchannel": "does it backchannel (short 'mm-hm's) without taking the turn?",
    "user_interruption": "does it stop, and answer the interruption?",
}
# (suffix of an official subset name, its task)
SUBSET_TASKS = (
    ("pause_handling", "pause_handling"),
    ("turn_taking", "smooth_turn_taking"),
    ("backchannel", "backchannel"),
    ("user_interruption", "user_interruption"),
)


def task_of(subset: str) -> str | None:
    """The task of an official subset name, or None."""
    return subset_tasks.task_of(SUBSET_TASKS, subset)


def check_tasks(tasks: Mapping[str, str] | None, where: str = "--task") -> dict[str, str]:
    """{subset: task} given by the user, each task one of TASKS (one line otherwise)."""
    return subset_tasks.check_tasks(tasks, TASKS, "Full-Duplex-Bench v1.0", where)
