"""fdb-v2's own judge prompts (the benchmark's `prompts` hook), written for duplexeval (not
upstream's text): per examinee segment a turn-taking fluency and an instruction-following score,
per session a task score for correction, entity tracking and safety, each one number 1-5, so the
offline `local-llm` judge answers each with one constrained choice. The official column is
upstream's prompt built from the user's own eval_prompts.json (official.py), not one of these."""

from __future__ import annotations

import re
from pathlib import Path

from duplexeval_common.llm.prompts import Parsed, Parser, PromptSet, summary_mean

FLUENCY, INSTRUCTION = "fdb-v2-fluency", "fdb-v2-instruction"
TASK_PROMPTS = {"correction": "fdb-v2-task-correction", "entity_tracking": "fdb-v2-task-entity-tracking",
                "safety": "fdb-v2-task-safety"}
_SCORE = re.compile(r"(?<![\d.])([1-5])(?![\d.])")


def parse_1_5(reply: str) -> Parsed | None:
    """The first whole number 1-5 of the reply (after "Score:" when the reply has it)."""
    text = reply or ""
    at = text.lower().rfind("score:")
    m = _SCORE.search(text, at + 6 if at != -1 else 0) or _SCORE.search(text)
    return Parsed(int(m.group(1))) if m else None


PARSERS = {"fdb-v2-1-5": Parser(parse_1_5, summary_mean, "one whole number 1-5")}
PROMPTS = PromptSet(Path(__file__).parent / "prompts", PARSERS)
