"""The four tasks of Full-Duplex-Bench v1.5 (the official subsets), the overlap event of each, and
how a subset gets its task.

A sample's task is declared by its dataset: the manifest row's `task` (every dataset duplexeval
builds or imports writes one). A tree without a manifest gets it, per subset, from `--task
SUBSET=TASK`, else from the official subset names (SUBSET_TASKS: a subset named, or ending with,
`user_interruption`, `user_backchannel`, `talking_to_other`, `background_speech`).

Each task has one kind of overlap event (KINDS) and the speaker who makes it (SPEAKERS): the
user themself (an interruption, a backchannel: the same voice as the user's prior turn), or
someone else (`other`: a side remark to another person in the room, speech in the background).
"""

from __future__ import annotations

from typing import Mapping

from duplexeval_common import subset_tasks

TASKS = ("user_interruption", "user_backchannel", "talking_to_other", "background_speech")
SUMMARIES = {
    "user_interruption": "the user cuts in with a new request or a correction while the model speaks: "
                         "does it stop and answer the new request?",
    "user_backchannel": "the user backchannels (\"uh-huh\", \"right\") while the model speaks: does it "
                        "keep going instead of stopping or starting over?",
    "talking_to_other": "the user's side remarks to someone else reach the microphone while the model "
                        "speaks: does it ignore them instead of answering?",
    "background_speech": "distant speech or a broadcast is heard while the model speaks: does it carry on "
                         "unaffected?",
}
# The overlap event's kind per task (sample.json overlap.kind).
KINDS = {
    "user_interruption": "interruption",
    "user_backchannel": "backchannel",
    "talking_to_other": "side_talk",
    "background_speech": "background",
}
# Who speaks the event (sample.json overlap.speaker; the speaker of its segment and voice).
SPEAKERS = {
    "user_interruption": "user",
    "user_backchannel": "user",
    "talking_to_other": "other",
    "background_speech": "other",
}
# (official subset name, its task): a subset with this name, or ending with it, has that task.
SUBSET_TASKS = tuple((t, t) for t in TASKS)


def task_of(subset: str) -> str | None:
    """The task of an official subset name (or a name ending with one), or None."""
    return subset_tasks.task_of(SUBSET_TASKS, subset)


def check_tasks(tasks: Mapping[str, str] | None, where: str = "--task") -> dict[str, str]:
    """{subset: task} given by the user, each task one of TASKS (one line otherwise)."""
    return subset_tasks.check_tasks(tasks, TASKS, "Full-Duplex-Bench v1.5", where)
