"""The scorer (the aggregator runs it): per sample, the gap from the end of the user's turn
(sample.json turn_end_s) to the model's first word after it (the ASR's output.json); in time
when the gap is at most max_gap_s. Per subset: the share in time with its 95% Wilson interval.

The same function scores a stage (`score(stage context)`, the `score` hook) and a tree made
elsewhere (`score_tree`, `aggregator score --benchmark hello`): <subset>/<id>/ with sample.json
and output.json."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from duplexeval_common.benchmarks import Option
from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.jsonio import atomic_write_many, dumps
from duplexeval_common.stats import wilson

OPTIONS = (Option("max_gap_s", float, 2.0, "the longest gap that counts as in time", low=0.0, high=60.0),)
DEFINITIONS = "hello-1"


def check(config: dict) -> None:
    unknown = sorted(set(config) - {"benchmark", "max_gap_s"})
    if unknown:
        raise DuplexEvalError(f"aggregator: hello has no setting {', '.join(unknown)} (known: max_gap_s)")
    OPTIONS[0].check("hello", config.get("max_gap_s", 2.0))


def sample_result(sample: dict, output: dict, max_gap_s: float) -> dict:
    end = float(sample["turn_end_s"])
    starts = [float(c["timestamp"][0]) for c in output.get("chunks", []) if float(c["timestamp"][0]) >= end]
    gap = round(min(starts) - end, 6) if starts else None
    return {"turn_end_s": end, "gap_s": gap, "in_time": gap is not None and gap <= max_gap_s}


def metrics_of(results: dict[str, dict], tasks: dict[str, str], missing: dict[str, str], max_gap_s: float) -> dict:
    subsets = {}
    for subset in sorted({k.split("/")[0] for k in results} | {k.split("/")[0] for k in missing}):
        rows = [r for k, r in sorted(results.items()) if k.split("/")[0] == subset]
        k = sum(r["in_time"] for r in rows)
        lo, hi = wilson(k, len(rows)) if rows else (None, None)
        subsets[subset] = {"task": tasks.get(subset), "n": len(rows),
                           "unified": {"in_time_rate": {"value": k / len(rows) if rows else None,
                                                        "interval": [lo, hi], "count": k, "n": len(rows)}}}
    return {"benchmark": "hello", "definitions": DEFINITIONS, "max_gap_s": max_gap_s, "subsets": subsets,
            "missing": dict(sorted(missing.items())), "samples": dict(sorted(results.items()))}


def report_md(metrics: dict) -> str:
    lines = ["# hello", "", f"In time: the model's first word at most {metrics['max_gap_s']} s after the user's turn.",
             "", "```"]
    for name, s in metrics["subsets"].items():
        u = s["unified"]["in_time_rate"]
        iv = "-" if u["value"] is None else f"[{u['interval'][0]:.4f}, {u['interval'][1]:.4f}]"
        value = "-" if u["value"] is None else f"{u['value']:.4f}"
        lines.append(f"{name} ({s['task']}): in_time_rate {value} {iv} ({u['count']}/{u['n']})")
    return "\n".join(lines + ["```", ""])


def _write(out: Path, metrics: dict) -> None:
    atomic_write_many({Path(out) / "metrics.json": dumps(metrics), Path(out) / "report.md": report_md(metrics)})


def score(sctx) -> None:
    max_gap = float(sctx.config.get("max_gap_s", 2.0))
    results, tasks, missing = {}, {}, {}
    for s in sctx.inputs.samples():
        tasks[s.subset] = s.task
        why = sctx.inputs.upstream_failure(s)
        sample, output = sctx.inputs.find(s, "sample.json"), sctx.inputs.find(s, "output.json")
        if why or sample is None or output is None:
            missing[s.key] = why or "output.json or sample.json missing"
            continue
        results[s.key] = sample_result(json.loads(sample.read_text()), json.loads(output.read_text()), max_gap)
    _write(sctx.output, metrics_of(results, tasks, missing, max_gap))


def score_tree(tree: Path, out: Path, tasks: dict[str, str], options: dict) -> int:
    results, found = {}, {}
    for d in sorted(Path(tree).glob("*/*/sample.json")):
        key = f"{d.parent.parent.name}/{d.parent.name}"
        sample = json.loads(d.read_text())
        found[d.parent.parent.name] = tasks.get(d.parent.parent.name) or sample.get("task")
        results[key] = sample_result(sample, json.loads((d.parent / "output.json").read_text()), options["max_gap_s"])
    if not results:
        print(f"error: {tree}: no <subset>/<id>/sample.json", file=sys.stderr)
        return 2
    _write(out, metrics_of(results, found, {}, options["max_gap_s"]))
    return 0
