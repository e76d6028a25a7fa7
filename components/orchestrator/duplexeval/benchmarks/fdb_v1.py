"""Full-Duplex-Bench v1.0: pause handling, backchannel, smooth turn-taking, user interruption.

Plan: dataset -> runner -> asr -> judge -> aggregate (the aggregator's official column equals the
upstream evaluator's; the unified column has intervals; docs/metrics.md). `make score` scores an
official-layout tree with `aggregator fdb-v1`.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..paths import DATASETS
from . import Benchmark, Dataset


def plan(model: str, dataset: str, asr: str, judge: str, limit: int | None,
         runner_args: dict | None = None, asr_args: dict | None = None, judge_args: dict | None = None,
         environ: dict | None = None, official_revision: str | None = None,
         subsets: list[str] | None = None, segmenter_args: dict | None = None) -> list:
    from duplexeval_common.errors import DuplexEvalError

    from ..plan import StageSpec, check_limit, dataset_stage, judge_stage, runner_stage
    environ = os.environ if environ is None else environ
    if segmenter_args:
        raise DuplexEvalError("--segmenter-arg applies to benchmark mtr (fdb-v1 has no turn-segmenter stage)")
    check_limit(limit)
    runner = runner_stage(model, runner_args, ["dataset"], environ)
    return [
        dataset_stage(dataset, limit, subsets),
        runner,
        StageSpec("asr", "asr-aligner", {"backend": asr, "backend_args": dict(asr_args or {})},
                  ["dataset", "runner"]),
        judge_stage(judge, judge_args, ["dataset", "asr"], environ),
        StageSpec("aggregate", "aggregator",
                  {"benchmark": "fdb-v1", **({"official_revision": official_revision} if official_revision else {})},
                  ["dataset", "runner", "asr", "judge"]),
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


BENCHMARK = Benchmark(
    name="fdb-v1",
    title="Full-Duplex-Bench v1.0",
    datasets=(
        Dataset("fdb-mini", "tts-synth", DATASETS / "fdb-mini",
                "embedded Full-Duplex-Bench-style set synthesized with Piper (pause, turn-taking, "
                "interruption, backchannel)"),
        Dataset("fdb-synth", "tts-synth", DATASETS / "fdb-synth",
                "synthetic Full-Duplex-Bench v1.0 at the official sizes (727 samples: pause, conversational "
                "pause, turn-taking, interruption with 7 s + 15 s, backchannel with ground truth), several voices"),
    ),
    default_dataset="fdb-mini",
    default_judge="embedding-relevance",
    judges=("embedding-relevance", "local-llm", "openai", "official-gpt", "none"),
    plan=plan,
    summary=summary,
    missing=missing,
    score_command=("aggregator", "fdb-v1"),
    components=("tts-synth", "asr-aligner", "judge", "aggregator"),
)
