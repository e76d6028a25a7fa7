"""The plan: the dataset, the model's runner, the ASR of its output, the scorer."""

from __future__ import annotations

from pathlib import Path


def plan(p, options: dict) -> list:
    p.refuse("segmenter_args", "--segmenter-arg: hello has no turn-segmenter stage")
    return [
        p.dataset_stage(),
        p.runner_stage(["dataset"]),
        p.asr_stage("asr", ["dataset", "runner"]),
        p.stage("aggregate", "aggregator", {"max_gap_s": options["max_gap_s"]}, ["dataset", "runner", "asr"]),
    ]


def summary(metrics: dict) -> dict:
    return {name: {"n": s["n"], "in_time_rate": s["unified"]["in_time_rate"]["value"]}
            for name, s in sorted(metrics["subsets"].items())}


def missing(agg_dir: Path) -> dict:
    from duplexeval_common.jsonio import read_json
    return {k: f"aggregate: {why}" for k, why in read_json(agg_dir / "metrics.json").get("missing", {}).items()}
