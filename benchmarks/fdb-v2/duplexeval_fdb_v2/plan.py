"""The plan of a fdb-v2 run, and what run.json keeps of its scores.

    dataset    tts-synth      live.json and sample.json per task (dataset.py; no audio)
    runner     the model      a live session per sample, the runner core's examiner engine
                              talking to the model: input.wav (examiner), output.wav (model),
                              mix.wav, examiner.json, events.jsonl, runner.json
    aggregate  aggregator     metrics.json, samples.jsonl, report.md (score/)

The examiner's settings reach the runner stage as `examiner: {"engine": "cascade", "args":
{"preset"}, "duration_s"}`. The session length is the harness's, not the task's (upstream runs
every task for a fixed time too): live.json carries the default length and the runner core's
`examiner.duration_s` replaces it. A new length then re-runs the runner and aggregate stages,
never the dataset stage.
"""

from __future__ import annotations

from pathlib import Path

EXAMINER_ENGINE = "cascade"


def examiner(options: dict) -> dict:
    """The runner stage's `examiner` setting for the benchmark's options."""
    return {"engine": EXAMINER_ENGINE, "args": {"preset": options["preset"]},
            "duration_s": float(options["duration_s"])}


def plan(p, options: dict) -> list:
    p.refuse("segmenter_args", "--segmenter-arg applies to benchmarks with a turn-segmenter stage "
                               "(fdb-v2 has none)")
    p.refuse("asr_args", "--asr-arg: fdb-v2 has no asr stage (the examiner transcribes the model itself)")
    p.refuse("judge_args", "--judge-arg: fdb-v2 has no judge stage (its numbers are measured, not judged)")
    return [
        p.dataset_stage(),
        p.runner_stage(["dataset"], examiner=examiner(options)),
        p.stage("aggregate", "aggregator", {"response_window_s": float(options["response_window_s"])},
                ["dataset", "runner"]),
    ]


def summary(metrics: dict) -> dict:
    """Per subset: sessions, coverage and the headline values (response rate, latency, overlap)."""
    out = {}
    for subset, m in sorted(metrics.get("subsets", {}).items()):
        u = m["unified"]
        out[subset] = {"task": m["task"], "n": m["n"], "scored": m["coverage"]["scored"],
                       **{k: u[k]["value"] for k in ("response_rate", "response_latency_s", "overlap_rate")}}
    return out


def missing(agg_dir: Path) -> dict[str, str]:
    """The sessions the scorer could not use, with their reasons (metrics.json `missing`)."""
    from duplexeval_common.jsonio import read_json
    path = Path(agg_dir) / "metrics.json"
    found = read_json(path).get("missing", {}) if path.is_file() else {}
    return {k: f"aggregate: {why}" for k, why in sorted(found.items())}
