"""MTR-DuplexBench: many rounds of one dialogue, scored round by round (docs/mtr.md).

The unit of work is the round sample `<subset>/<dialogue>-r<kk>` (the runner core's multi-round
protocol: the model hears the user channel with the ground-truth history and the next user turn
muted). Plan:

    dataset        tts-synth       round samples (conversational features, instruction following,
                                   safety) and two-channel dialogues (dialogue quality)
    dialogue-asr   asr-aligner     per dialogue, user.json and model.json (source "dialogue")
    segment        turn-segmenter  per dialogue, the user turns (Algorithm 1, or the offline rule)
    rounds         turn-segmenter  the dialogues' round samples, and the manifest of every round
    runner         the model       one session per round sample
    asr            asr-aligner     the model's words in each round (from the round's start on)
    judge          judge           instruction following, safety, dialogue quality per round
    aggregate      aggregator      the scoring tree, per-round tables and ranges 1, 1-2, 1-5, 1-10

`make score BENCHMARK=mtr TREE=... OUT=...` scores a tree made elsewhere with `aggregator mtr`.
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
    if official_revision:
        raise DuplexEvalError("--official-revision applies to benchmark fdb-v1 (the Full-Duplex-Bench "
                              "evaluator's revision); MTR's code column follows docs/mtr.md")
    check_limit(limit)
    runner = runner_stage(model, runner_args, ["dataset", "rounds"], environ)
    backend = {"backend": asr, "backend_args": dict(asr_args or {})}
    seg = dict(segmenter_args or {})
    seg_keys = ()
    if (seg.get("llm") or {}).get("backend") == "openai":
        seg_keys = ("OPENAI_API_KEY",)
    return [
        dataset_stage(dataset, limit, subsets),
        StageSpec("dialogue-asr", "asr-aligner", {**backend, "source": "dialogue"}, ["dataset"]),
        StageSpec("segment", "turn-segmenter", seg, ["dialogue-asr"], network=bool(seg_keys), keys=seg_keys),
        StageSpec("rounds", "turn-segmenter", {"mode": "rounds"}, ["dataset", "dialogue-asr", "segment"]),
        runner,
        StageSpec("asr", "asr-aligner", dict(backend), ["dataset", "rounds", "runner"]),
        judge_stage(judge, judge_args, ["dataset", "rounds", "asr"], environ, {"benchmark": "mtr"}),
        StageSpec("aggregate", "aggregator", {"benchmark": "mtr"},
                  ["dataset", "rounds", "runner", "asr", "judge"]),
    ]


RANGES = ("1", "1-2", "1-5", "1-10")


def _cell_value(cell: dict) -> dict:
    """The headline numbers of one MTR cell (metrics.json: paper/code success, judged rates, DQ)."""
    out: dict = {"n": cell.get("n"), "declared": cell.get("declared")}
    for col in ("paper", "code"):
        if isinstance(cell.get(col), dict):
            c = cell[col]
            out[col] = {k: (c[k] or {}).get("value") for k in ("success", "latency_s", "backchannel_freq")
                        if k in c}
    for k in ("success", "refusal", "score"):
        if isinstance(cell.get(k), dict):
            out[k] = cell[k].get("value")
    for k in ("harmful_rate", "score_rescaled"):
        if k in cell:
            out[k] = cell[k]
    if (cell.get("judgements") or {}).get("skipped"):
        out["not_judged"] = cell["judgements"]["skipped"]
    return out


def summary(metrics: dict) -> dict:
    """run.json's summary: per subset, its task and set and the range cells (1, 1-2, 1-5, 1-10)."""
    out = {}
    for subset, m in sorted(metrics.get("subsets", {}).items()):
        cells = {r: _cell_value(c) for r, c in sorted((m.get("ranges") or {}).items()) if r in RANGES}
        out[subset] = {"task": m.get("task"), "set": m.get("set"), "dialogues": m.get("dialogues"),
                       "rounds_declared": m.get("rounds_declared"), "rounds_observed": m.get("rounds_observed"),
                       "ranges": cells}
    return out


def missing(agg_dir: Path) -> dict[str, str]:
    """Round samples the scorer could not use, and why: metrics.json's `missing` (declared rounds
    not observed, by round sample) and `invalid` (dialogues left out, by dialogue)."""
    from duplexeval_common.jsonio import read_json
    path = agg_dir / "metrics.json"
    if not path.is_file():
        return {}
    m = read_json(path)
    out: dict[str, str] = {}
    for row in m.get("missing") or []:
        out[str(row["sample"])] = f"aggregate: {row['reason']}"
    for row in m.get("invalid") or []:
        out[str(row["dialogue"])] = f"aggregate: invalid: {row['problem']}"
    return out


BENCHMARK = Benchmark(
    name="mtr",
    title="MTR-DuplexBench",
    datasets=(
        Dataset("mtr-mini", "tts-synth", DATASETS / "mtr-mini",
                "small MTR-DuplexBench-style set (the default): one 10-round dialogue per conversational-feature "
                "set and mix, one instruction-following and one safety set, one dialogue-quality dialogue"),
        Dataset("mtr-synth", "tts-synth", DATASETS / "mtr-synth",
                "synthetic MTR-DuplexBench at the paper's sizes: 200 conversational-feature dialogues, 100 "
                "instruction-following and 100 safety ten-round sets, 200 dialogue-quality dialogues"),
    ),
    default_dataset="mtr-mini",
    default_judge="none",     # SmolLM2 (local-llm) answers nearly constantly: a smoke test, not a default
    judges=("none", "openai", "local-llm"),
    plan=plan,
    summary=summary,
    missing=missing,
    score_command=("aggregator", "mtr"),
    components=("tts-synth", "asr-aligner", "turn-segmenter", "judge", "aggregator"),
    judge_notes={
        "local-llm": "note: judge local-llm (SmolLM2-135M) is a smoke test, not the paper's GPT-4o judge: its "
                     "instruction-following, safety and dialogue-quality numbers are not official (JUDGE=openai)",
        "none": "note: judge none: instruction following, safety and dialogue quality are not judged "
                "(JUDGE=openai judges them; the runner and ASR stages are reused)",
    },
)
