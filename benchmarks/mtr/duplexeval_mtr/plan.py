"""The plan of an MTR-DuplexBench run, and what run.json keeps of its scores.

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

`make score BENCHMARK=mtr TREE=... OUT=...` scores a tree made elsewhere (score/tree_cli.py).
"""

from __future__ import annotations

from pathlib import Path

RANGES = ("1", "1-2", "1-5", "1-10")


def plan(p, options: dict) -> list:
    seg = dict(p.segmenter_args or {})
    seg_keys = ("OPENAI_API_KEY",) if (seg.get("llm") or {}).get("backend") == "openai" else ()
    return [
        p.dataset_stage(),
        p.asr_stage("dialogue-asr", ["dataset"], source="dialogue"),
        p.stage("segment", "turn-segmenter", seg, ["dialogue-asr"], network=bool(seg_keys), keys=seg_keys),
        p.stage("rounds", "turn-segmenter", {"mode": "samples"}, ["dataset", "dialogue-asr", "segment"]),
        p.runner_stage(["dataset", "rounds"]),
        p.asr_stage("asr", ["dataset", "rounds", "runner"]),
        p.judge_stage(["dataset", "rounds", "asr"]),
        p.stage("aggregate", "aggregator", {}, ["dataset", "rounds", "runner", "asr", "judge"]),
    ]


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
