"""The common part of a unified-samples.jsonl row."""

from __future__ import annotations

from .tree import Sample


def base_row(s: Sample) -> dict:
    row = {"sample_id": s.key, "subset": s.subset, "id": s.id, "task": s.task,
           "eligible": s.eligible, "reasons": list(s.reasons)}
    if s.invalid is not None:
        row["problem"] = s.invalid[1]
    if s.eligible:
        row["T_s"] = s.T_us / 1e6
        row["n_words"] = len(s.words)
    return row
