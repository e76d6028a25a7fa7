"""`aggregator mtr`: score a tree (docs/mtr.md) into metrics (mtr-metrics) and per dialogue-round
rows (mtr-round)."""

from __future__ import annotations

from pathlib import Path

from .encodings import Dialogue, load_tree
from .judged import judged_rows, judged_tables
from .rounds import feature_cell, num, table
from .rules import score_round

BENCHMARK = "mtr-duplexbench"
DEFINITIONS = "mtr-1"
UPSTREAM = {"repo": "ZhangHe0918/MTR-DuplexBench", "commit": "6d7c125"}


def feature_rows(d: Dialogue) -> list[dict]:
    """One row per declared round; a round is observed when transcript.json has it (an empty
    segment list is an observed silent round)."""
    rows = []
    for r in d.rounds:
        segs = None if d.segments is None else d.segments.get(r.number)
        row = {"dialogue": d.key, "round": r.number, "scenario": r.scenario,
               "features": list(r.features), "observed": segs is not None}
        if segs is not None:
            row.update(score_round(segs, r.features, r.ts))
        rows.append(row)
    return rows


def _out_row(row: dict) -> dict:
    out = {k: v for k, v in row.items() if k not in ("paper", "code")}
    for col in ("paper", "code"):
        if col in row:
            out[col] = {k: num(v) for k, v in row[col].items()}
    return out


def score_dialogues(dialogues: list[Dialogue], invalid: list) -> tuple[dict, list]:
    """(metrics, rows) for loaded dialogues; `invalid` is [(key, problem)] to record."""
    subsets: dict[str, list] = {}
    for d in dialogues:
        subsets.setdefault(d.subset, []).append(d)
    out_subsets, all_rows = {}, []
    for name in sorted(subsets):
        ds = subsets[name]
        task, set_ = ds[0].task, ds[0].set
        declared: dict[int, int] = {}
        for d in ds:
            for r in d.rounds:
                declared[r.number] = declared.get(r.number, 0) + 1
        if task == "features":
            rows = [row for d in ds for row in feature_rows(d)]
            per_round, ranges = table(rows, declared, feature_cell)
        else:
            rows = [row for d in ds for row in judged_rows(d)]
            per_round, ranges = judged_tables(task, rows, declared)
        out_subsets[name] = {"task": task, "set": set_, "dialogues": len(ds),
                             "rounds_declared": sum(declared.values()),
                             "rounds_observed": sum(1 for r in rows if r["observed"]),
                             "per_round": per_round, "ranges": ranges}
        all_rows += [_out_row(r) for r in rows]
    metrics = {"benchmark": BENCHMARK, "definitions": DEFINITIONS, "upstream": dict(UPSTREAM),
               "subsets": out_subsets,
               "invalid": [{"dialogue": k, "problem": p} for k, p in invalid]}
    return metrics, all_rows


def score_tree(tree: Path, strict: bool = False) -> tuple[dict, list]:
    """Load and score a tree: (metrics, rows). A dialogue that fails validation is listed in
    metrics["invalid"] and left out (strict: the first problem raises InputError)."""
    dialogues, invalid = load_tree(Path(tree), strict=strict)
    return score_dialogues(dialogues, invalid)
