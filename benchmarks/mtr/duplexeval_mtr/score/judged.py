"""Dialogue quality, instruction following and safety from the judge's per-round judgements.

A judgement record is what the judge component writes for one LLM judgement
(duplexeval_common.llm.engine.Judgement.record(), schemas/judgement.schema.json "llm") with the round
added; only `round`, `prompt.id`, `status` and `score` are read. A round is observed when it has a
record; ok records are scored, unparsed and failed ones are counted and excluded, and so are the
`skipped` records the judge `none` writes (observed, not judged).
"""

from __future__ import annotations

from ..prompts import DQ_RAW_GT, MTR_DQ_RESCALE as DQ_RESCALE  # noqa: F401  (the paper's rescaling)
from .encodings import Dialogue
from .rounds import judged_cell, table


def judged_rows(d: Dialogue) -> list[dict]:
    """One row per declared round: observed when a judgement record exists."""
    js = d.judgements or {}
    rows = []
    for r in d.rounds:
        j = js.get(r.number)
        rows.append({"dialogue": d.key, "round": r.number, "scenario": r.scenario,
                     "observed": j is not None, "status": None if j is None else j["status"],
                     "score": None if j is None else j["score"]})
    return rows


def judged_tables(task: str, rows: list[dict], declared: dict) -> tuple[list, dict]:
    return table(rows, declared, judged_cell(task))
