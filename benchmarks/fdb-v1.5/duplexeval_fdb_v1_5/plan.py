"""The plan of a Full-Duplex-Bench v1.5 run, and what run.json keeps of its scores.

    dataset    tts-synth      the samples: input.wav, clean_input.wav, metadata.json
    runner     the model      two sessions per sample: output.wav (on input.wav, the overlap) and
                              clean_output.wav (on clean_input.wav), same settings and seed
    asr        asr-aligner    output.json, clean_output.json, input.json, clean_input.json
    judge      judge          the behaviour label (content_tag.json) from the four transcripts
    aggregate  aggregator     metrics.json, samples.jsonl, report.md
"""

from __future__ import annotations

from pathlib import Path

SESSIONS = [{"name": "overlap", "prefix": ""}, {"name": "clean", "prefix": "clean_"}]


def plan(p, options: dict) -> list:
    p.refuse("segmenter_args", "--segmenter-arg applies to benchmarks with a turn-segmenter stage "
                               "(fdb-v1.5 has none)")
    aggregate = {} if options.get("adaptation", True) else {"adaptation": False}
    return [
        p.dataset_stage(),
        p.runner_stage(["dataset"], sessions=SESSIONS),
        p.asr_stage("asr", ["dataset", "runner"]),
        p.judge_stage(["dataset", "asr"]),
        p.stage("aggregate", "aggregator", aggregate, ["dataset", "runner", "asr", "judge"]),
    ]


def summary(metrics: dict) -> dict:
    """The part of metrics.json that run.json keeps: per subset the behaviour ratios, the
    aggregated latencies and the unified values."""
    out = {}
    for subset, m in sorted(metrics.get("subsets", {}).items()):
        off, uni = m["official"], m["unified"]
        out[subset] = {"n": m["n"],
                       "official": {"behaviour": (off.get("behaviour") or {}).get("C"),
                                    "stop_latency_s": off["timing"]["stop_latency_s"]["mean"],
                                    "response_latency_s": off["timing"]["response_latency_s"]["mean"]},
                       "unified": {k: v.get("value") for k, v in uni["metrics"].items()}}
    return out


def missing(agg_dir: Path) -> dict[str, str]:
    """Samples the aggregator could not score for want of an input, with their reasons."""
    from duplexeval_common.jsonio import read_jsonl
    out: dict[str, str] = {}
    rows = agg_dir / "samples.jsonl"
    for row in read_jsonl(rows) if rows.is_file() else []:
        why = [r for r in row.get("reasons", []) if r.startswith(("missing:", "failed:", "invalid:", "ineligible:"))]
        if not row.get("eligible", True) and why:
            out[row["sample_id"]] = "aggregate: " + ", ".join(why) + (f" ({row['problem']})" if row.get("problem") else "")
    return out
