"""`aggregator score --benchmark mtr`: score a tree (benchmarks/mtr/README.md) into metrics (mtr-metrics) and per dialogue-round
rows (mtr-round).

A tree built by the pipeline stage (mtr/pipeline.py) also holds TREE/coverage.json
({"format": "mtr-coverage/1", "invalid": [{"dialogue", "problem"}], "missing": [{"dialogue",
"round", "reason"}]}): the dialogues the stage could not put into the tree and why each declared
round it could not observe is missing. score_tree reads it, so rescoring the tree gives the same
metrics.json byte for byte. metrics["missing"] lists every declared, unobserved round of a scored
dialogue with its reason (coverage.json's, else what the tree lacks).
"""

from __future__ import annotations

import json
from pathlib import Path

from duplexeval_common.samples import id_sort_key

from duplexeval_common.errors import InputError
from .encodings import JUDGED, Dialogue, load_tree
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


COVERAGE = "coverage.json"
COVERAGE_FORMAT = "mtr-coverage/1"


def round_sample(dialogue: str, k: int) -> str:
    """The round sample of round k of dialogue "subset/id": "subset/id-rkk" (benchmarks/mtr/README.md)."""
    return f"{dialogue}-r{k:02d}"


def _line(x) -> bool:
    return isinstance(x, str) and bool(x) and "\n" not in x and "\r" not in x


def read_coverage(tree: Path) -> tuple[list, dict]:
    """TREE/coverage.json, when there is one: ([(dialogue, problem)], {(dialogue, round): reason}).
    A malformed file is an InputError naming it (the whole tree is refused: exit 2)."""
    path = Path(tree) / COVERAGE
    if not path.exists():
        return [], {}

    def bad(problem: str) -> InputError:
        return InputError(COVERAGE, problem)
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise bad(f"not readable JSON ({type(exc).__name__})") from None
    if not isinstance(obj, dict) or obj.get("format") != COVERAGE_FORMAT:
        raise bad(f"expected an object with format {COVERAGE_FORMAT!r}")
    extra = sorted(set(obj) - {"format", "invalid", "missing"})
    if extra:
        raise bad(f"unknown key(s) {', '.join(extra)}")
    lists = {name: obj.get(name, []) for name in ("invalid", "missing")}
    for name, value in lists.items():
        if not isinstance(value, list):
            raise bad(f"{name} must be a list")
    invalid, missing = [], {}
    for i, x in enumerate(lists["invalid"]):
        if not (isinstance(x, dict) and set(x) == {"dialogue", "problem"} and _line(x["dialogue"])
                and _line(x["problem"])):
            raise bad(f"invalid[{i}]: expected {{dialogue, problem}} (one-line strings)")
        invalid.append((x["dialogue"], x["problem"]))
    for i, x in enumerate(lists["missing"]):
        if not (isinstance(x, dict) and set(x) == {"dialogue", "round", "reason"} and _line(x["dialogue"])
                and isinstance(x["round"], int) and not isinstance(x["round"], bool) and x["round"] >= 1
                and _line(x["reason"])):
            raise bad(f"missing[{i}]: expected {{dialogue, round >= 1, reason}} (one-line strings)")
        if (x["dialogue"], x["round"]) in missing:
            raise bad(f"missing[{i}]: round {x['round']} of {x['dialogue']} is listed twice")
        missing[(x["dialogue"], x["round"])] = x["reason"]
    return invalid, missing


def _default_reason(task: str) -> str:
    if task in JUDGED:
        return "no judgement of the round in judgements.jsonl"
    return "the round is not in transcript.json"


def missing_rounds(dialogues: list[Dialogue], rows: list[dict], reasons: dict) -> list[dict]:
    """One entry per declared round that was not observed: {dialogue, round, sample, reason}."""
    task = {d.key: d.task for d in dialogues}
    out = []
    for r in rows:
        if not r["observed"]:
            key = (r["dialogue"], r["round"])
            out.append({"dialogue": r["dialogue"], "round": r["round"],
                        "sample": round_sample(r["dialogue"], r["round"]),
                        "reason": reasons.get(key) or _default_reason(task[r["dialogue"]])})
    return out


def _dialogue_order(key: str) -> tuple:
    subset, _, did = key.partition("/")
    return (subset, *id_sort_key(did), key)


def score_dialogues(dialogues: list[Dialogue], invalid: list,
                    reasons: dict | None = None) -> tuple[dict, list]:
    """(metrics, rows) for loaded dialogues; `invalid` is [(key, problem)] to record; `reasons`
    {(dialogue, round): why it is missing} (coverage.json's)."""
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
               "invalid": [{"dialogue": k, "problem": p}
                           for k, p in sorted(invalid, key=lambda x: (_dialogue_order(x[0]), x[1]))],
               "missing": missing_rounds(dialogues, all_rows, reasons or {})}
    return metrics, all_rows


def score_tree(tree: Path, strict: bool = False) -> tuple[dict, list]:
    """Load and score a tree: (metrics, rows). A dialogue that fails validation is listed in
    metrics["invalid"] and left out (strict: the first problem raises InputError), as is each
    dialogue TREE/coverage.json lists as invalid; metrics["missing"] names every unobserved round."""
    tree = Path(tree)
    if not tree.is_dir():
        raise InputError(str(tree), "the tree is not a folder")
    cov_invalid, reasons = read_coverage(tree)
    if strict and cov_invalid:
        raise InputError(*cov_invalid[0])
    dialogues, invalid = load_tree(tree, strict=strict)
    return score_dialogues(dialogues, cov_invalid + invalid, reasons)


def score_outputs(tree: Path, strict: bool = False) -> tuple[dict, dict]:
    """Score a tree into the files `aggregator score --benchmark mtr` and the pipeline stage both write:
    (metrics, {"metrics.json": text, "rounds.jsonl": text, "report.md": text}), schema-checked."""
    from duplexeval_common.jsonio import dumps, jsonl_text
    from ..schemas import SCHEMAS
    from .report import render
    metrics, rows = score_tree(tree, strict=strict)
    SCHEMAS.check_output("metrics", metrics, "metrics.json")
    for row in rows:
        SCHEMAS.check_output("round", row, "rounds.jsonl")
    return metrics, {"metrics.json": dumps(metrics), "rounds.jsonl": jsonl_text(rows),
                     "report.md": render(metrics)}
