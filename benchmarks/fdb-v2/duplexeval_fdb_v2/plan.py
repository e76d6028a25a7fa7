"""The plan of a fdb-v2 run, and what run.json keeps of its scores.

    dataset    tts-synth      live.json and sample.json per task (dataset.py; no audio)
    runner     the model      a live session per sample, the runner core's examiner engine
                              talking to the model: input.wav (examiner), output.wav (model),
                              mix.wav, examiner.json, events.jsonl, runner.json
    asr        asr-aligner    both channels (asr.py), only with a judge
    judge      judge          judgement.json per session (judge.py), only when --judge is not none
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
    args = {"preset": options["preset"]}
    if options.get("examiner_llm", "local") == "openai":
        args.update(llm="openai", llm_url=options["examiner_llm_url"], llm_model=options["examiner_llm_model"],
                    api_key_env=options["examiner_api_key_env"])
    return {"engine": EXAMINER_ENGINE, "args": args, "duration_s": float(options["duration_s"])}


def plan(p, options: dict) -> list:
    p.refuse("segmenter_args", "--segmenter-arg applies to benchmarks with a turn-segmenter stage "
                               "(fdb-v2 has none)")
    judge = getattr(p, "judge", "none") or "none"
    if judge == "none":
        p.refuse("asr_args", "--asr-arg: fdb-v2 transcribes only for a judge (--judge local-llm, openai or official)")
        p.refuse("judge_args", "--judge-arg: fdb-v2 has no judge stage with --judge none (its numbers are measured)")
    aggregate = {"response_window_s": float(options["response_window_s"])}
    epochs = int(options.get("epochs", 1))
    stages = [p.dataset_stage(options={"epochs": epochs} if epochs > 1 else None),  # 1: the key as before
              p.runner_stage(["dataset"], examiner=examiner(options))]
    if judge == "none":
        return stages + [p.stage("aggregate", "aggregator", aggregate, ["dataset", "runner"])]
    stages.append(p.asr_stage("asr", ["dataset", "runner"]))
    stages.append(judge_stage(p, judge))
    return stages + [p.stage("aggregate", "aggregator", aggregate, ["dataset", "runner", "asr", "judge"])]


def judge_stage(p, judge: str):
    """The judge stage; for `official` the prompts file (judge arg `prompts`) is read here, refused
    with one line when absent or malformed, and its sections and sha256 go into the stage's judge_args (official_prompts)
    (so a changed file re-judges, and the stage needs no path), its key variable passed by name."""
    if judge != "official":
        return p.judge_stage(["dataset", "runner", "asr"])
    from duplexeval_common.errors import DuplexEvalError

    from . import official
    args = dict(p.judge_args or {})
    path = args.pop("prompts", None)
    if not path:
        raise DuplexEvalError("judge official needs --judge-arg prompts=PATH: your copy of upstream's "
                              "v2/eval/eval_prompts.json (Full-Duplex-Bench; not shipped here)")
    prompts = official.load(path)
    saved = p.judge_args
    p.judge_args = {**args, "official_prompts": prompts}
    try:
        spec = p.judge_stage(["dataset", "runner", "asr"])
    finally:
        p.judge_args = saved
    spec.network = True
    spec.keys = (str(args.get("api_key_env", "GEMINI_API_KEY")),)
    return spec


def summary(metrics: dict) -> dict:
    """Per subset: sessions, coverage and the headline values (response rate, latency, overlap)."""
    out = {}
    for subset, m in sorted(metrics.get("subsets", {}).items()):
        u = m["unified"]
        out[subset] = {"task": m["task"], "n": m["n"], "scored": m["coverage"]["scored"],
                       **{k: u[k]["value"] for k in ("response_rate", "response_latency_s", "overlap_rate")}}
        if m.get("judged"):
            out[subset]["judged"] = {k: (m["judged"].get(k) or {}).get("value")
                                     for k in ("fluency", "instruction_following", "task_score")}
    return out


def missing(agg_dir: Path) -> dict[str, str]:
    """The sessions the scorer could not use, with their reasons (metrics.json `missing`)."""
    from duplexeval_common.jsonio import read_json
    path = Path(agg_dir) / "metrics.json"
    found = read_json(path).get("missing", {}) if path.is_file() else {}
    return {k: f"aggregate: {why}" for k, why in sorted(found.items())}
