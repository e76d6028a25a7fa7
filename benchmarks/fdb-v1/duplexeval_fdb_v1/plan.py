"""The plan of a Full-Duplex-Bench v1.0 run, and what run.json keeps of its scores.

    dataset    tts-synth      the samples (built-in scripts, or an import)
    runner     the model      output.wav of each sample (the runner core; one session per sample)
    asr        asr-aligner    output.json (the official ASR file), transcript.json, vad.json
    judge      judge          the reply after each user interruption, 0-5 (rating.json)
    aggregate  aggregator     metrics.json, unified.json, unified-samples.jsonl, report.md

The official column equals the upstream evaluator's at the revision `official_revision` names;
the unified column has intervals (README.md beside this package). With `counterfactual` the
dataset stage adds each interruption and pause sample's twin without the event and the runner
runs it as a second session (counterfactual.py).
"""

from __future__ import annotations

from pathlib import Path

from .counterfactual import SESSIONS


def plan(p, options: dict) -> list:
    """p: the orchestrator's planner (the run's request and the stages every plan shares)."""
    p.refuse("segmenter_args", "--segmenter-arg applies to benchmarks with a turn-segmenter stage "
                               "(fdb-v1 has none)")
    aggregate = {k: v for k, v in (("official_revision", options.get("official_revision")),) if v}
    cf = bool(options.get("counterfactual"))
    return [
        p.dataset_stage(options={"counterfactual": True} if cf else None),
        p.runner_stage(["dataset"], sessions=SESSIONS if cf else None),
        p.asr_stage("asr", ["dataset", "runner"]),
        p.judge_stage(["dataset", "asr"]),
        p.stage("aggregate", "aggregator", aggregate, ["dataset", "runner", "asr", "judge"]),
    ]


def summary(metrics: dict) -> dict:
    """The part of metrics.json that run.json keeps: official values and unified values per subset."""
    out = {}
    for subset, m in sorted(metrics.get("subsets", {}).items()):
        out[subset] = {"n": m.get("n"), "official": m.get("official", {}),
                       "unified": {k: v.get("value") if isinstance(v, dict) else v
                                   for k, v in m.get("unified", {}).items()}}
    return out


MISSING_REASONS = ("missing:", "failed:", "invalid:", "ineligible:")


def missing(agg_dir: Path) -> dict[str, str]:
    """Samples the aggregator could not score for want of an input (a missing or invalid file, a
    failed stage): from unified-samples.jsonl, with their reasons and problems."""
    from duplexeval_common.jsonio import read_jsonl
    out: dict[str, str] = {}
    rows = agg_dir / "unified-samples.jsonl"
    for row in read_jsonl(rows) if rows.is_file() else []:
        why = [r for r in row.get("reasons", []) if r.startswith(MISSING_REASONS)]
        if not row.get("eligible", True) and why:
            out[row["sample_id"]] = "aggregate: " + ", ".join(why) + (
                f" ({row['problem']})" if row.get("problem") else "")
    return out
