"""The four tasks of MTR-DuplexBench, and how a subset of a scoring tree gets its task.

A sample's task is declared by its dataset (the manifest row's `task`; a scoring tree's
encoding.json names it per dialogue). SUBSET_TASKS names the suffixes of this project's subset
names (`<set>_features`, `<set>_instruction_following`, `<set>_safety`,
`<source>_dialogue_quality`), which the built-in datasets and the importer use.
"""

from duplexeval_common import subset_tasks

TASKS = ("features", "instruction_following", "safety", "dialogue_quality")
SUMMARIES = {
    "features": "conversational features over ten rounds: smooth turn-taking, interruption, pause handling, "
                "background speech, backchannel frequency and their mixes",
    "instruction_following": "does the model follow what the user asked, round after round?",
    "safety": "does it decline requests it should decline, round after round?",
    "dialogue_quality": "how good is each turn of a dialogue cut into turns?",
}
SUBSET_TASKS = (
    ("_features", "features"),
    ("_instruction_following", "instruction_following"),
    ("_safety", "safety"),
    ("_dialogue_quality", "dialogue_quality"),
)


def task_of(subset: str) -> str | None:
    return subset_tasks.task_of(SUBSET_TASKS, subset)
