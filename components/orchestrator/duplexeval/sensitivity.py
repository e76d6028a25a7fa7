"""`duplexeval sensitivity`: how much a run's headline numbers move with the ASR and its VAD.

Every timing metric is computed from ASR word times (and VAD segments), and the choice of ASR moves
published numbers a lot. This command takes one finished run, keeps its dataset and runner stages
(the model is not run again), and re-runs transcription, judging and scoring under each setting of
a grid: ASR backends x VAD thresholds x VAD minimum silences (a VAD value applies to backends that
take `vad_threshold` / `vad_min_silence_ms`). Every stage already in the store is reused. It writes
runs/<run>/sensitivity.json and sensitivity.md: per subset and headline metric, the value (with its
95% interval for unified metrics) under each setting and the spread; with `--against RUN2`, the
same for the other run and whether the ranking of the two runs flips under some setting.
"""

from __future__ import annotations

import itertools
from pathlib import Path

from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.jsonio import atomic_write_json, atomic_write_text, read_json

from .engine import Engine
from .plan import JUDGE_KEYS, OFFLINE_JUDGES, StageSpec
from .store import Store

# The numbers a reader looks at first, per task: (column, metric, higher is better).
HEADLINE = {
    "pause_handling": [("official", "tor", False), ("unified", "pause_intrusion_rate", False)],
    "smooth_turn_taking": [("official", "tor", True), ("official", "latency", False),
                           ("unified", "response_rate_2s", True), ("unified", "response_latency_s", False)],
    "user_interruption": [("official", "tor", True), ("official", "latency", False),
                          ("unified", "exercised_rate", None), ("unified", "response_latency_s", False)],
    "backchannel": [("official", "tor", False), ("official", "freq", True), ("official", "jsd", False)],
}


def _task(subset: str) -> str | None:
    from duplexeval_common.samples import known_task
    return known_task(subset)


def grid(asrs: list[str], thresholds: list[float], silences: list[int]) -> list[dict]:
    """One setting per combination: {"asr": name, "backend_args": {...}, "label": "..."}."""
    out = []
    for asr, th, ms in itertools.product(asrs, thresholds or [None], silences or [None]):
        args = {}
        if th is not None:
            args["vad_threshold"] = th
        if ms is not None:
            args["vad_min_silence_ms"] = ms
        label = asr + "".join(f" {k}={v}" for k, v in args.items())
        out.append({"asr": asr, "backend_args": args, "label": label})
    return out


def _run_stages(store: Store, run: str) -> tuple[dict, dict[str, dict]]:
    rec = read_json(store.resolve_run(run) / "run.json")
    if rec.get("benchmark", "fdb-v1") != "fdb-v1":
        raise DuplexEvalError(f"run {run} is a {rec['benchmark']} run: sensitivity re-scores fdb-v1 runs only")
    stages = {s["name"]: s for s in rec.get("stages", [])}
    for need in ("dataset", "runner", "asr", "judge", "aggregate"):
        if need not in stages or stages[need]["status"] == "failed":
            raise DuplexEvalError(f"run {run}: no completed {need} stage to start from")
    given = {}
    for name in ("dataset", "runner"):
        stage_rec = store.record(stages[name]["key"])
        if stage_rec is None:
            raise DuplexEvalError(f"run {run}: stage {name} ({stages[name]['key'][:12]}) is not in the store")
        given[name] = {**stage_rec, "key": stages[name]["key"]}
    return rec, {"given": given, "stages": stages}


def _config(store: Store, key: str) -> dict:
    path = store.config_path(key)
    if not path.is_file():
        raise DuplexEvalError(f"the settings of stage {key[:12]} are not in {path.parent}")
    return read_json(path)


def rescore_plan(store: Store, stages: dict, setting: dict) -> list[StageSpec]:
    asr_cfg = {**_config(store, stages["asr"]["key"]), "backend": setting["asr"]}
    asr_cfg["backend_args"] = dict(setting["backend_args"])
    judge_cfg = _config(store, stages["judge"]["key"])
    judge = judge_cfg.get("judge", "none")
    return [
        StageSpec("asr", "asr-aligner", asr_cfg, ["dataset", "runner"]),
        StageSpec("judge", "judge", judge_cfg, ["dataset", "asr"], network=judge not in OFFLINE_JUDGES,
                  keys=JUDGE_KEYS.get(judge, ())),
        StageSpec("aggregate", "aggregator", _config(store, stages["aggregate"]["key"]),
                  ["dataset", "runner", "asr", "judge"]),
    ]


def _cell(metrics: dict, subset: str, column: str, metric: str) -> dict | None:
    m = metrics["subsets"].get(subset, {}).get(column, {}).get(metric)
    if m is None:
        return None
    if isinstance(m, dict):
        return {"value": m.get("value"), "interval": m.get("interval")}
    return {"value": m, "interval": None}


def rescore(engine: Engine, store: Store, run: str, settings: list[dict]) -> dict:
    rec, info = _run_stages(store, run)
    rows = []
    for setting in settings:
        plan = rescore_plan(store, info["stages"], setting)
        engine.check(plan, info["given"])
        results = engine.run(plan, info["given"])
        last = results[-1]
        if last.name != "aggregate" or last.status == "failed":
            raise DuplexEvalError(f"setting {setting['label']}: stage {last.name} failed: {last.reason}")
        metrics = read_json(store.stage_dir(last.key) / "metrics.json")
        cells = {}
        for subset in sorted(metrics["subsets"]):
            for column, metric, _ in HEADLINE.get(_task(subset) or "", []):
                cell = _cell(metrics, subset, column, metric)
                if cell is not None:
                    cells[f"{subset}|{column}|{metric}"] = cell
        rows.append({"setting": setting["label"], "asr_key": results[0].key,
                     "aggregate_key": last.key, "cells": cells,
                     "cached": all(r.cached for r in results)})
    return {"run": rec["run_id"], "model": rec["model"], "dataset": rec["dataset"], "rows": rows}


def spread(result: dict) -> dict:
    """Per cell: min, max and max - min of the value over the settings."""
    out = {}
    for key in sorted({k for r in result["rows"] for k in r["cells"]}):
        vals = [r["cells"][key]["value"] for r in result["rows"]
                if key in r["cells"] and isinstance(r["cells"][key]["value"], (int, float))]
        if vals:
            out[key] = {"min": min(vals), "max": max(vals), "range": max(vals) - min(vals)}
    return out


def ranking(a: dict, b: dict) -> dict:
    """Per cell with a direction: which run is better under each setting, and whether it flips."""
    better = {m: hi for task in HEADLINE.values() for _, m, hi in task}
    out = {}
    for ra, rb in zip(a["rows"], b["rows"]):
        for key, ca in ra["cells"].items():
            metric = key.split("|")[2]
            cb = rb["cells"].get(key)
            if better.get(metric) is None or cb is None or ca["value"] is None or cb["value"] is None:
                continue
            d = ca["value"] - cb["value"]
            winner = "tie" if d == 0 else ("a" if (d > 0) == better[metric] else "b")
            out.setdefault(key, {})[ra["setting"]] = winner
    return {k: {"by_setting": v, "flips": len({w for w in v.values() if w != "tie"}) > 1}
            for k, v in sorted(out.items())}


def _fmt(cell: dict | None) -> str:
    if cell is None or cell["value"] is None:
        return "-"
    v = f"{cell['value']:.3f}"
    iv = cell.get("interval")
    if iv and iv[0] is not None:
        v += f" [{iv[0]:.2f}, {iv[1]:.2f}]"
    return v


def render(result: dict, spreads: dict, ranks: dict | None = None) -> str:
    lines = [f"# ASR sensitivity of run {result['run']} ({result['model']} on {result['dataset']})", ""]
    settings = [r["setting"] for r in result["rows"]]
    lines.append("| subset | metric | " + " | ".join(settings) + " | range |")
    lines.append("|---|---|" + "---|" * (len(settings) + 1))
    for key, sp in spreads.items():
        subset, column, metric = key.split("|")
        cells = [_fmt(r["cells"].get(key)) for r in result["rows"]]
        lines.append(f"| {subset} | {column} {metric} | " + " | ".join(cells) + f" | {sp['range']:.3f} |")
    if ranks is not None:
        lines += ["", "Ranking against the other run (a: this run is better, b: the other):", ""]
        for key, r in ranks.items():
            flag = "FLIPS" if r["flips"] else "stable"
            lines.append(f"- {key.replace('|', ' ')}: {flag} ("
                         + ", ".join(f"{s}: {w}" for s, w in r["by_setting"].items()) + ")")
    return "\n".join(lines) + "\n"


def write(store: Store, run: str, doc: dict, text: str) -> Path:
    d = store.resolve_run(run)
    atomic_write_json(d / "sensitivity.json", doc)
    atomic_write_text(d / "sensitivity.md", text)
    return d / "sensitivity.md"
