"""`duplexeval sensitivity`: how much a run's headline numbers move with the ASR and its VAD.

Every timing metric is computed from ASR word times (and VAD segments), and the choice of ASR moves
published numbers a lot. This command takes one finished run of any benchmark, keeps every stage up
to its runner (the model is not run again), and re-runs the stages after it, each asr-aligner
stage with the setting's backend, under each setting of a grid: ASR backends x VAD thresholds x VAD
minimum silences (a VAD value applies to backends that take `vad_threshold` /
`vad_min_silence_ms`). The stages after the runner keep their archived settings; which stages each
reads is found from the run record (each input's content digest names the stage it came from).
Every stage already in the store is reused. It writes runs/<run>/sensitivity.json and
sensitivity.md: per subset and headline metric (the benchmark's declaration), the value (with its
95% interval where it has one) under each setting and the spread; with `--against RUN2`, the same
for the other run and whether the ranking of the two runs flips under some setting.
"""

from __future__ import annotations

import itertools
from pathlib import Path

from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.jsonio import atomic_write_json, atomic_write_text, read_json
from duplexeval_common.settings import Setting

from .engine import Engine
from .plan import JUDGE_KEYS, OFFLINE_JUDGES, StageSpec
from .reports import benchmark_of
from .store import Store, content_digest

RUNNER = "runner"

# The grid's values: the backend_args of the ASR backends' own VAD filter (faster-whisper, stable-ts
# declare the same ranges; their `asr-aligner check` refuses a value out of them too)
GRID = {"--vad-threshold": Setting("vad_threshold", float, 0.5, "Silero speech probability threshold",
                                   ge=0, le=1),
        "--vad-min-silence-ms": Setting("vad_min_silence_ms", int, 2000, "the shortest silence that splits "
                                        "speech, in ms", ge=0)}


def check_grid(option: str, values: list) -> None:
    """One line for the first value of a grid option out of its range (before anything runs)."""
    for v in values:
        msg = GRID[option].problem(v)
        if msg:
            raise DuplexEvalError(f"{option}: {msg}")


def grid(asrs: list[str], thresholds: list[float], silences: list[int]) -> list[dict]:
    """One setting per combination: {"asr": name, "backend_args": {...}, "label": "..."}; a VAD
    value out of its range is one line."""
    check_grid("--vad-threshold", thresholds)
    check_grid("--vad-min-silence-ms", silences)
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


def _run_stages(store: Store, run: str) -> tuple[dict, dict]:
    """The run record, and what its rescoring needs: the stages up to the runner (given, as the
    engine reads them) and the stages after it (in order, each with the names of what it reads)."""
    rec = read_json(store.resolve_run(run) / "run.json")
    order = [s["name"] for s in rec.get("stages", [])]
    stages = {s["name"]: s for s in rec.get("stages", [])}
    if RUNNER not in stages or stages[RUNNER]["status"] == "failed":
        raise DuplexEvalError(f"run {run}: no completed runner stage to start from")
    if not order or order[-1] != "aggregate" or stages["aggregate"]["status"] == "failed":
        raise DuplexEvalError(f"run {run}: no completed aggregate stage (nothing was scored)")
    given, by_digest = {}, {}
    for name in order:
        st = stages[name]
        stage_rec = store.record(st["key"])
        if stage_rec is None:
            raise DuplexEvalError(f"run {run}: stage {name} ({st['key'][:12]}) is not in the store")
        by_digest[content_digest(stage_rec)] = name
        if order.index(name) <= order.index(RUNNER):
            given[name] = {**stage_rec, "key": st["key"]}
    later = []
    for name in order[order.index(RUNNER) + 1:]:
        st = stages[name]
        reads = []
        for d in st.get("inputs", []):
            if d not in by_digest:
                raise DuplexEvalError(f"run {run}: stage {name} reads {d[:24]}..., which no stage of the run made")
            reads.append(by_digest[d])
        later.append({"name": name, "component": st["component"], "key": st["key"], "reads": reads})
    return rec, {"given": given, "later": later}


def _config(store: Store, key: str) -> dict:
    path = store.config_path(key)
    if not path.is_file():
        raise DuplexEvalError(f"the settings of stage {key[:12]} are not in {path.parent}")
    return read_json(path)


def rescore_plan(store: Store, later: list[dict], setting: dict) -> list[StageSpec]:
    """The stages after the runner with their archived settings, every ASR stage's backend the
    setting's."""
    out = []
    for st in later:
        cfg = _config(store, st["key"])
        network, keys = False, ()
        if st["component"] == "asr-aligner":
            cfg = {**cfg, "backend": setting["asr"], "backend_args": dict(setting["backend_args"])}
        elif st["component"] == "judge":
            judge = cfg.get("judge", "none")
            network, keys = judge not in OFFLINE_JUDGES, JUDGE_KEYS.get(judge, ())
        out.append(StageSpec(st["name"], st["component"], cfg, list(st["reads"]), network=network, keys=keys))
    return out


def subset_tasks(store: Store, given: dict) -> dict[str, str]:
    """{subset: task} from the manifests of the stages kept (the dataset's declaration)."""
    out: dict[str, str] = {}
    for name, rec in given.items():
        p = store.stage_dir(rec["key"]) / "manifest.json"
        if p.is_file():
            for row in read_json(p).get("samples") or []:
                if isinstance(row, dict) and isinstance(row.get("task"), str):
                    out.setdefault(str(row.get("subset")), row["task"])
    return out


def rescore(engine: Engine, store: Store, run: str, settings: list[dict]) -> dict:
    rec, info = _run_stages(store, run)
    bench = benchmark_of(rec)
    tasks = subset_tasks(store, info["given"])
    rows = []
    for setting in settings:
        plan = rescore_plan(store, info["later"], setting)
        engine.check(plan, info["given"])
        results = engine.run(plan, info["given"])
        last = results[-1]
        if last.name != "aggregate" or last.status == "failed":
            raise DuplexEvalError(f"setting {setting['label']}: stage {last.name} failed: {last.reason}")
        metrics = read_json(store.stage_dir(last.key) / "metrics.json")
        cells = {}
        for subset in sorted(metrics["subsets"]):
            task = metrics["subsets"][subset].get("task") or tasks.get(subset)
            for h in bench.headline_of(task):
                cell = h.read(metrics["subsets"][subset])
                if cell["value"] is not None:
                    cells[f"{subset}|{h.column}|{h.metric}"] = {"value": cell["value"], "interval": cell["interval"],
                                                               "higher_is_better": h.higher_is_better}
        rows.append({"setting": setting["label"], "asr_key": results[0].key,
                     "aggregate_key": last.key, "cells": cells,
                     "cached": all(r.cached for r in results)})
    return {"run": rec["run_id"], "benchmark": bench.name, "model": rec["model"], "dataset": rec["dataset"],
            "rows": rows}


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
    out = {}
    for ra, rb in zip(a["rows"], b["rows"]):
        for key, ca in ra["cells"].items():
            cb = rb["cells"].get(key)
            better = ca.get("higher_is_better")
            if better is None or cb is None or ca["value"] is None or cb["value"] is None:
                continue
            d = ca["value"] - cb["value"]
            winner = "tie" if d == 0 else ("a" if (d > 0) == better else "b")
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
