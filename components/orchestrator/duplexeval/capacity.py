"""`duplexeval capacity`: how many concurrent realtime sessions one model server sustains.

The sweep ramps the number of sessions at once (levels 1, 2, 4, ... up to `--max-level`, or
`--levels`) against one server, on one fixed set of samples of one subset of a dataset (default: the
default benchmark's default dataset, Full-Duplex-Bench v1.0's fdb-mini, and its first subset of the
first task with an official latency headline, its turn-taking subset), and measures each level the
way `eval` does:

- the dataset stage runs once (`--samples` K samples of the subset, the store's stage when it is
  there already);
- each level N runs `sessions_at(N, K)` = K x ceil(N / K) sessions, at concurrency N: every sample
  the same number of times (N <= K: each once; N = 16 on 8 samples: each twice), so N sessions
  overlap and every level weighs the samples alike. The level's input is a folder of its own under
  the sweep's output (levels/<N>/input/: the samples' files, copies named `<id>` and `<id>-r2`,
  `<id>-r3`, ..., and a manifest listing them, and capacity-level.json naming the sweep and the
  level), so every level of every sweep is a fresh runner stage: nothing is taken from the store;
- each level is the benchmark's own plan after the dataset (runner, asr, judge, aggregate) with
  `concurrency=N` and `drift_retries=0`: a session whose drift passed the limit is not run again,
  it is ineligible and counts against its level;
- per level: the send drift pooled over every frame of every session (each `send` event of
  events.jsonl: p50, p99, max, frames past the limit), the failed and the ineligible sessions, the
  benchmark's official latency and TOR of the subset (where the benchmark's headlines put them in
  the aggregate stage's metrics.json: the benchmark's own scorer, on the ASR `--asr` gives,
  faster-whisper by default as in `eval`), the runner stage's wall time and the sessions' span
  (first session_start to last end). A level with a failed session is not scored (its runner
  stage only).

A level passes (`checks`) when no session failed, the pooled drift p99 is under the runner's
`drift_limit_ms` (20 ms unless `--runner-arg drift_limit_ms=N`) and its official latency is within
`--latency-tolerance` seconds of level 1's, absolutely: |latency(N) - latency(1)| <= tolerance
(default 0.1 s). Where level 1 has no latency (no sample took the turn), the latency check does not
apply (null) and says so. The capacity (`best_level`) is the highest level such that it and every
level below it passed; None when level 1 failed.

A server that refuses or dies at a level: the level's failures and their reasons are recorded, no
higher level runs, and the command ends with one line and exit status 1 (the table, capacity.json
and the page are written all the same). Exit 0: every level ran. Exit 2: a bad setting (one line,
before anything runs) or a model that is not a realtime runner: an in-process model before anything
runs (the catalog says it), a network runner on another clock (moshi-ws's default lockstep) once
level 1's runner stage has recorded its clock in runner.json (the orchestrator imports no component).

Writes `--out` (default <home>/capacity/<id>/): capacity.json (schemas/capacity.schema.json),
capacity.md (the table, also printed) and capacity.html (the table and an SVG figure of drift p99
and max and of latency per level; html/templates/capacity.html, Jinja2 with autoescape).
"""

from __future__ import annotations

import math
import os
import secrets as _random
import shutil
import sys
import time
from pathlib import Path

from duplexeval_common import schemas
from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.html.page import fmt
from duplexeval_common.jsonio import atomic_write_json, atomic_write_text, read_json, read_jsonl
from duplexeval_common.progress import log
from duplexeval_common.secrets import redact, scrub

from . import __version__, benchmarks, catalog, provenance
from .plan import Planner, Source, plan_of

FORMAT = "duplexeval-capacity/1"
DEFAULT_MAX_LEVEL = 16
DEFAULT_SAMPLES = 8
DEFAULT_TOLERANCE_S = 0.1
MAX_LEVEL = 256          # the runner core's concurrency limit
MAX_SAMPLES = 1000
DEFAULT_DRIFT_LIMIT_MS = 20.0  # the runner core's (duplexeval_runner.protocol.DRIFT_LIMIT_MS)
SET_BY_SWEEP = ("concurrency", "drift_retries")
LEVEL_FILE = "capacity-level.json"
RULE = ("a level passes when none of its sessions failed, the send drift p99 over every frame of every "
        "session is under drift_limit_ms, and its official latency is within latency_tolerance_s of level "
        "1's (absolute: |latency(N) - latency(1)| <= tolerance; not applied where level 1 has no latency); "
        "best_level is the highest level that passes with every level below it")


# -- settings --------------------------------------------------------------------------------------

def parse_levels(levels: str | None, max_level: int) -> list[int]:
    """The levels of a sweep: `--levels 1,2,4` as given, else 1, 2, 4, ... up to max_level (max_level
    itself last when it is no power of two). They start at 1 (the single-session reference) and rise."""
    if not isinstance(max_level, int) or isinstance(max_level, bool) or not 1 <= max_level <= MAX_LEVEL:
        raise DuplexEvalError(f"--max-level must be an integer from 1 to {MAX_LEVEL} (got {max_level})")
    if levels is None or not levels.strip():
        out, n = [], 1
        while n < max_level:
            out.append(n)
            n *= 2
        return [*out, max_level]
    try:
        out = [int(v.strip()) for v in levels.split(",") if v.strip()]
    except ValueError:
        raise DuplexEvalError(f"--levels: expected a comma-separated list of integers, got {levels!r}") from None
    if not out:
        raise DuplexEvalError(f"--levels names no level (got {levels!r})")
    bad = [n for n in out if not 1 <= n <= MAX_LEVEL]
    if bad:
        raise DuplexEvalError(f"--levels: each level must be from 1 to {MAX_LEVEL} (got {bad[0]})")
    if out[0] != 1:
        raise DuplexEvalError(f"--levels must start at 1, the single-session reference of the latency check "
                              f"(got {levels!r})")
    if any(b <= a for a, b in zip(out, out[1:])):
        raise DuplexEvalError(f"--levels must rise (got {levels!r})")
    return out


def check_number(value, name: str, lo: float, hi: float, integer: bool = False, open_lo: bool = False):
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    ok = ok and (value > lo if open_lo else value >= lo) and value <= hi and (not integer or float(value).is_integer())
    if not ok:
        kind = "an integer" if integer else "a number"
        raise DuplexEvalError(f"{name} must be {kind} {'above' if open_lo else 'from'} {lo:g} "
                              f"{'and at most' if open_lo else 'to'} {hi:g} (got {value})")
    return value


def sessions_at(level: int, samples: int) -> int:
    """Sessions a level runs: every sample the same number of times, at least `level` in all."""
    return samples * math.ceil(level / samples)


def check_runner_args(runner_args: dict) -> None:
    given = [k for k in SET_BY_SWEEP if k in runner_args]
    if given:
        raise DuplexEvalError(f"--runner-arg {given[0]}: the sweep sets it (concurrency is each level, "
                              "drift_retries 0: a drifted session counts against its level)")


HINT = ("capacity ramps concurrent realtime sessions against one server: models freeze-omni, vita-1.5, "
        "openai-realtime, gemini-live, or moshi-ws/personaplex/flm-audio with --runner-arg clock=realtime")


class NotRealtime(DuplexEvalError):
    """The model's runner is not on the realtime clock: the sweep has nothing to measure."""


def check_network(model: str) -> None:
    """Before anything runs: the catalog's model drives a server (a network runner); in-process
    models are one line."""
    m = catalog.model(model)
    if not m.network:
        raise NotRealtime(f"model {model!r} runs in process (runner {m.runner!r}), not as realtime sessions "
                          f"against a server; {HINT}")


def runner_clock(model: str, runner_dir: Path, keys: list[str]) -> dict | None:
    """{"runner", "clock", "kind"} as the first session's runner.json records them (the runner core
    decides the clock; the orchestrator imports no component), None where no session wrote one; a
    runner that is not on the realtime clock (moshi-ws's default lockstep) is one line."""
    for key in keys:
        path = runner_dir / "samples" / key / "runner.json"
        if path.is_file():
            rec = read_json(path)
            info = {"runner": rec.get("runner"), "clock": rec.get("clock"), "kind": rec.get("kind")}
            if info["clock"] != "realtime" or info["kind"] != "stream":
                raise NotRealtime(f"model {model!r}: runner {info['runner']!r} ran on the {info['clock']} clock, "
                                  f"not realtime; {HINT}")
            return info
    return None


def latency_tasks(bench) -> list[str]:
    """The benchmark's tasks with an official latency headline, in its order."""
    return list(dict.fromkeys(h.task for h in bench.headline if h.column == "official" and h.metric == "latency"))


def headline(bench, task: str, metric: str):
    return next((h for h in bench.headline if h.task == task and h.column == "official" and h.metric == metric), None)


def dataset_subsets(bench, dataset: str) -> dict[str, str | None]:
    """{subset: task} of a dataset before it is built: its imported manifest's rows, else its
    scripts' `subset` names with the task the benchmark's subset names give."""
    _, folder, _ = catalog.dataset(dataset)
    folder = Path(folder)
    subsets: dict[str, str | None] = {}
    manifest = folder / "manifest.json"
    if manifest.is_file():
        for row in read_json(manifest).get("samples", []):
            if isinstance(row, dict) and isinstance(row.get("subset"), str):
                subsets.setdefault(row["subset"], row.get("task") or bench.task_of(row["subset"]))
        return subsets
    for p in sorted(folder.glob("*.json")):
        try:
            name = read_json(p).get("subset")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(name, str):
            subsets.setdefault(name, bench.task_of(name))
    return subsets


def default_subset(bench, dataset: str, tasks: list[str]) -> str:
    """The dataset's first subset of the first task with an official latency (Full-Duplex-Bench
    v1.0: turn-taking)."""
    subsets = dataset_subsets(bench, dataset)
    for task in tasks:
        found = sorted(s for s, t in subsets.items() if t == task)
        if found:
            return found[0]
    raise DuplexEvalError(f"dataset {dataset!r} has no subset of a task with an official latency "
                          f"({', '.join(tasks) or 'its benchmark has none'}): give one with --subset "
                          f"(its subsets: {', '.join(sorted(subsets)) or 'none found'})")


# -- one level's input -------------------------------------------------------------------------------

def _copy(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)  # same bytes, no space; a copy where links cannot be made
    except OSError:
        shutil.copyfile(src, dst)


def level_input(dataset_dir: Path, dest: Path, subset: str, ids: list[str], sessions: int, level: int,
                sweep: str) -> list[str]:
    """levels/<N>/input/: the level's sessions as samples (replica r of sample i is `<i>` for r = 1,
    `<i>-r<r>` after), the dataset's root files, a manifest listing them, and LEVEL_FILE. Returns
    the session keys."""
    manifest = read_json(dataset_dir / "manifest.json")
    rows = {(r.get("subset"), r.get("id")): r for r in manifest.get("samples", []) if isinstance(r, dict)}
    dest.mkdir(parents=True)
    for p in sorted(dataset_dir.iterdir()):
        if p.is_file() and p.name not in ("manifest.json", "stage.json") and not p.name.startswith("."):
            _copy(p, dest / p.name)
    out_rows, keys, replicas = [], [], {}
    for n in range(sessions):
        base = ids[n % len(ids)]
        replica = n // len(ids) + 1
        sid = base if replica == 1 else f"{base}-r{replica}"
        src = dataset_dir / "samples" / subset / base
        dst = dest / "samples" / subset / sid
        dst.mkdir(parents=True)
        for f in sorted(src.iterdir()):
            if f.is_file():
                _copy(f, dst / f.name)
        out_rows.append({**rows[(subset, base)], "id": sid})
        keys.append(f"{subset}/{sid}")
        replicas[f"{subset}/{sid}"] = f"{subset}/{base}"
    atomic_write_json(dest / "manifest.json", {**{k: v for k, v in manifest.items() if k != "samples"},
                                               "samples": out_rows})
    atomic_write_json(dest / LEVEL_FILE, {"sweep": sweep, "level": level, "sessions": sessions,
                                          "replicas_of": replicas})
    return keys


# -- one level's numbers -----------------------------------------------------------------------------

def percentile(values: list[float], q: float) -> float:
    import numpy as np
    return float(np.percentile(np.asarray(values, dtype=np.float64), q))


def drift_summary(drifts: list[float], limit_ms: float) -> dict:
    """Pooled drift of every frame of every session (None where no frame was sent)."""
    if not drifts:
        return {"frames": 0, "drift_p50_ms": None, "drift_p99_ms": None, "drift_max_ms": None, "late_frames": 0}
    return {"frames": len(drifts), "drift_p50_ms": round(percentile(drifts, 50), 3),
            "drift_p99_ms": round(percentile(drifts, 99), 3), "drift_max_ms": round(max(drifts), 3),
            "late_frames": sum(1 for d in drifts if d > limit_ms)}


def session_numbers(runner_dir: Path, keys: list[str]) -> tuple[list[float], dict, float | None, float | None]:
    """(every send drift, {session: ineligible reason}, limit recorded, sessions' span in s)."""
    drifts: list[float] = []
    ineligible: dict[str, str] = {}
    limit, starts, ends = None, [], []
    for key in keys:
        d = runner_dir / "samples" / key
        if not (d / "events.jsonl").is_file() or not (d / "runner.json").is_file():
            continue  # a failed session leaves no files
        for e in read_jsonl(d / "events.jsonl"):
            if e.get("type") == "send" and isinstance(e.get("drift_ms"), (int, float)):
                drifts.append(float(e["drift_ms"]))
            elif e.get("type") == "session_start" and "wall" in e:
                starts.append(e["wall"])
            elif e.get("type") == "end" and "wall" in e:
                ends.append(e["wall"])
        rec = read_json(d / "runner.json")
        limit = rec.get("stats", {}).get("drift_limit_ms", limit)
        if rec.get("status") == "ineligible":
            ineligible[key] = (rec.get("ineligible") or {}).get("reason", "ineligible")
    span = round(max(ends) - min(starts), 3) if starts and ends else None
    return drifts, ineligible, limit, span


def measure(store, results: list, keys: list[str], subset: str, limit_ms: float, level: int, bench=None,
            task: str | None = None) -> dict:
    """A level's row from its stage results (engine.StageResult, in plan order)."""
    by = {r.name: r for r in results}
    runner = by.get("runner")
    row: dict = {"level": level, "sessions": len(keys), "status": "ok", "reason": None,
                 "stages": {r.name: {"key": r.key, "status": r.status, "seconds": r.seconds} for r in results}}
    failures: dict[str, str] = {}
    if runner is not None and runner.status != "failed":
        failures = {k: v.split(": ", 1)[1] if ": " in v else v for k, v in runner.not_ok.items()}
        drifts, ineligible, limit, span = session_numbers(store.stage_dir(runner.key), keys)
        row["wall_s"] = runner.seconds
    else:
        drifts, ineligible, limit, span = [], {}, None, None
        why = runner.reason if runner is not None else "the runner stage did not run"
        failures = {k: why for k in keys}
        row["wall_s"] = runner.seconds if runner is not None else None
    row["drift_limit_ms"] = float(limit if limit is not None else limit_ms)
    row.update(drift_summary(drifts, row["drift_limit_ms"]))
    row["sessions_span_s"] = span
    row["failed"] = len(failures)
    row["failures"] = dict(sorted(failures.items()))
    row["ineligible"] = len(ineligible)
    row["ineligible_sessions"] = dict(sorted(ineligible.items()))
    row.update(official_latency(store, by.get("aggregate"), subset, bench, task))
    stopped = [r for r in results if r.status == "failed"]
    if failures:
        first = next(iter(row["failures"].items()))
        row.update(status="failed", reason=f"{len(failures)} of {len(keys)} sessions failed "
                                           f"(first: {first[0]}: {first[1]})")
    elif stopped:
        row.update(status="failed", reason=f"stage {stopped[0].name} failed: {stopped[0].reason}")
    elif "aggregate" not in by and runner is not None:
        row.update(status="failed", reason="the level's stages stopped before the aggregate stage")
    return row


def official_latency(store, aggregate, subset: str, bench, task: str | None) -> dict:
    """The subset's official latency (s) and TOR, where the benchmark's headlines for the task say
    they are in its metrics.json (the aggregate stage: the benchmark's own scorer), and its
    eligible count."""
    out = {"tor": None, "latency_s": None, "eligible": None}
    if aggregate is None or aggregate.status == "failed" or bench is None or task is None:
        return out
    path = store.stage_dir(aggregate.key) / "metrics.json"
    if not path.is_file():
        return out
    m = (read_json(path).get("subsets") or {}).get(subset) or {}
    for key, metric in (("latency_s", "latency"), ("tor", "tor")):
        h = headline(bench, task, metric)
        value = h.read(m)["value"] if h is not None else None
        out[key] = value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    eligible = (m.get("counts") or {}).get("eligible")
    out["eligible"] = eligible if isinstance(eligible, int) else None
    return out


# -- the rule ----------------------------------------------------------------------------------------

def apply_rule(rows: list[dict], tolerance_s: float) -> int | None:
    """Each row's `checks` and `passes` (in place, level 1 the reference) and the best level: the
    highest level that passes with every level below it (None when the first fails)."""
    ref = rows[0].get("latency_s") if rows and rows[0]["level"] == 1 else None
    best = None
    prefix = True
    for r in rows:
        drift_ok = r.get("drift_p99_ms") is not None and r["drift_p99_ms"] < r["drift_limit_ms"]
        failures_ok = r.get("failed", 0) == 0 and r.get("status") == "ok"
        if ref is None:
            latency_ok = None
            r["latency_delta_s"] = None
        elif r.get("latency_s") is None:
            latency_ok = False
            r["latency_delta_s"] = None
        else:
            r["latency_delta_s"] = round(r["latency_s"] - ref, 6)
            latency_ok = abs(r["latency_s"] - ref) <= tolerance_s + 1e-12
        r["checks"] = {"drift": drift_ok, "failures": failures_ok, "latency": latency_ok}
        r["passes"] = bool(drift_ok and failures_ok and latency_ok is not False)
        if prefix and r["passes"]:
            best = r["level"]
        else:
            prefix = False
    return best


# -- output ------------------------------------------------------------------------------------------

def _f(x, nd: int = 2) -> str:
    """A table cell: the report's formatting (html/page.py `fmt`), two decimals unless told."""
    return fmt(x, nd)


HEADERS = ["level", "sessions", "failed", "ineligible", "frames", "drift p99 (ms)", "drift max (ms)", "TOR",
           "latency (s)", "Δ latency (s)", "runner wall (s)", "passes"]


def table_rows(doc: dict) -> list[list[str]]:
    out = []
    for r in doc["levels"]:
        passes = _f(r.get("passes")) + ("" if r.get("status") == "ok" else " (stopped)")
        out.append([str(r["level"]), str(r["sessions"]), str(r["failed"]), str(r["ineligible"]), str(r["frames"]),
                    _f(r["drift_p99_ms"]), _f(r["drift_max_ms"]), _f(r["tor"], 3), _f(r["latency_s"], 3),
                    _f(r.get("latency_delta_s"), 3), _f(r.get("wall_s"), 1), passes])
    return out


def summary_line(doc: dict) -> str:
    s = doc["settings"]
    best = doc["best_level"]
    head = (f"capacity of {doc['model']} on {doc['dataset']}/{doc['subset']}: "
            + (f"{best} concurrent session(s)" if best is not None else "none (level 1 did not pass)"))
    rule = (f"drift p99 under {_f(s['drift_limit_ms'], 1)} ms, no failed session, latency within "
            f"{s['latency_tolerance_s']:g} s of level 1's; drift_retries 0")
    return f"{head} ({rule})"


def render_markdown(doc: dict) -> str:
    lines = [f"# Capacity: {doc['model']}", "", summary_line(doc), "",
             "| " + " | ".join(HEADERS) + " |", "|" + "---:|" * len(HEADERS)]
    lines += ["| " + " | ".join(r) + " |" for r in table_rows(doc)]
    lines.append("")
    if doc["reference_note"]:
        lines += [doc["reference_note"], ""]
    for r in doc["levels"]:
        if r.get("reason"):
            lines.append(f"- level {r['level']}: {r['reason']}")
        for k, why in list(r["ineligible_sessions"].items())[:5]:
            lines.append(f"- level {r['level']}: ineligible {k}: {why}")
    if doc.get("stopped"):
        lines.append(f"\nStopped at level {doc['stopped']['level']}: {doc['stopped']['reason']}")
    lines.append(f"\nSamples: {doc['settings']['samples']} of {doc['subset']}; level N runs K x ceil(N / K) "
                 f"sessions (K samples, each the same number of times). Latency: the official "
                 f"{doc['task']} latency (fdb-v1 scorer, ASR {doc['asr']}). Load average at the start "
                 f"{doc['environment']['machine'].get('load_average_start')}, at the end "
                 f"{doc['environment']['machine'].get('load_average_end')}.")
    return "\n".join(lines) + "\n"


def figure(doc: dict) -> dict | None:
    """The SVG figure's geometry: two panels over the levels (evenly spaced), drift p99 and max with
    the limit, and latency with level 1's value +- the tolerance. Plain numbers for the template."""
    rows = doc["levels"]
    if not rows:
        return None
    w, h, left, right, top, bottom = 360, 240, 56, 12, 28, 40
    pw, ph = w - left - right, h - top - bottom
    n = len(rows)

    def x(i: int) -> float:
        return round(left + (pw * (i + 0.5) / n), 1)

    def axis(values: list[float], floor: float) -> tuple[float, float]:
        vals = [v for v in values if v is not None]
        hi = max([floor, *vals]) * 1.15
        return 0.0, hi

    def y(v: float, lo: float, hi: float) -> float:
        return round(top + ph - ph * (v - lo) / (hi - lo), 1)

    def series(key: str, lo: float, hi: float) -> list[dict]:
        return [{"x": x(i), "y": y(r[key], lo, hi), "label": f"level {r['level']}: {r[key]:.3f}"}
                for i, r in enumerate(rows) if r.get(key) is not None]

    def ticks(lo: float, hi: float, unit: str) -> list[dict]:
        return [{"y": y(lo + (hi - lo) * k / 4, lo, hi), "text": f"{lo + (hi - lo) * k / 4:.3g}{unit}"}
                for k in range(5)]

    limit = doc["settings"]["drift_limit_ms"]
    d_lo, d_hi = axis([r.get("drift_max_ms") for r in rows] + [r.get("drift_p99_ms") for r in rows], limit)
    drift = {"title": "send drift (ms) per level", "p99": series("drift_p99_ms", d_lo, d_hi),
             "max": series("drift_max_ms", d_lo, d_hi), "line": y(limit, d_lo, d_hi),
             "line_label": f"limit {limit:g} ms", "ticks": ticks(d_lo, d_hi, "")}
    ref, tol = doc["reference_latency_s"], doc["settings"]["latency_tolerance_s"]
    l_lo, l_hi = axis([r.get("latency_s") for r in rows], (ref or 0.0) + tol)
    band = None if ref is None else {"y1": y(ref + tol, l_lo, l_hi), "y2": y(max(ref - tol, l_lo), l_lo, l_hi)}
    if band is not None:
        band["height"] = round(band["y2"] - band["y1"], 1)
    latency = {"title": "official latency (s) per level", "points": series("latency_s", l_lo, l_hi),
               "band": band, "ticks": ticks(l_lo, l_hi, "")}
    return {"width": w, "height": h, "left": left, "top": top, "pw": pw, "ph": ph, "bottom": top + ph,
            "xs": [{"x": x(i), "text": str(r["level"])} for i, r in enumerate(rows)], "drift": drift,
            "latency": latency}


def unscored(doc: dict) -> list[dict]:
    """Per level, the sessions that failed or were ineligible, with why."""
    out = []
    for r in doc["levels"]:
        rows = [[k, f"failed: {why}"] for k, why in r["failures"].items()]
        rows += [[k, f"ineligible: {why}"] for k, why in r["ineligible_sessions"].items()]
        if rows:
            out.append({"level": r["level"], "rows": rows})
    return out


def render_html(doc: dict) -> str:
    from duplexeval_common.html import templates
    from duplexeval_common.html.page import page
    from .html import leaderboard_page
    body = templates.render("capacity.html", near=leaderboard_page.__file__, doc=doc, summary=summary_line(doc),
                            headers=HEADERS, rows=table_rows(doc), fig=figure(doc), unscored=unscored(doc))
    return page(f"duplexeval capacity: {doc['model']}", body)


def default_out(store) -> Path:
    base = store.root.parent / "capacity"
    base.mkdir(parents=True, exist_ok=True)
    for _ in range(100):
        d = base / (time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + _random.token_hex(4))
        try:
            d.mkdir()
            return d
        except FileExistsError:
            continue
    raise DuplexEvalError(f"could not create an output folder in {base}")


def prepare_out(out: Path | None, store) -> Path:
    if out is None:
        return default_out(store)
    out = Path(out).resolve()
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise DuplexEvalError(f"--out {out} exists and is not an empty folder (each sweep writes a folder of "
                              "its own)")
    out.mkdir(parents=True, exist_ok=True)
    return out


def write(out: Path, doc: dict) -> tuple[str, str]:
    doc = redact(doc)
    schemas.validate("capacity", doc, "capacity.json")
    atomic_write_json(out / "capacity.json", doc)
    text = render_markdown(doc)
    atomic_write_text(out / "capacity.md", text)
    atomic_write_text(out / "capacity.html", render_html(doc))
    return text, summary_line(doc)


# -- the sweep ---------------------------------------------------------------------------------------

def sweep(store, runtime, limits, cache, *, model: str, dataset: str | None, subset: str | None,
          levels: list[int], samples: int, asr: str, judge: str, runner_args: dict, asr_args: dict,
          tolerance_s: float, runtime_name: str, out: Path | None) -> tuple[dict, Path, int]:
    """Run the sweep; (capacity.json's document, its folder, the exit status: 0 every level ran,
    1 stopped at a level with failures)."""
    from .engine import Engine
    t0 = time.monotonic()
    check_number(samples, "--samples", 1, MAX_SAMPLES, integer=True)
    check_number(tolerance_s, "--latency-tolerance", 0, 10, open_lo=True)
    check_runner_args(runner_args)
    check_network(model)
    bench, dataset = benchmarks.resolve(None, dataset)
    tasks = latency_tasks(bench)
    subset = subset or default_subset(bench, dataset, tasks)
    known = dataset_subsets(bench, dataset)
    if known and subset not in known:
        raise DuplexEvalError(f"dataset {dataset!r} has no subset {subset!r} (its subsets: {', '.join(sorted(known))})")
    if known.get(subset) is not None and known[subset] not in tasks:
        raise DuplexEvalError(f"--subset {subset!r} is a {known[subset]} subset, whose official column has no "
                              f"latency (capacity needs one of: {', '.join(tasks) or 'none in ' + bench.name})")
    base_args = {**runner_args, "concurrency": 1, "drift_retries": 0}
    planner = Planner(bench.name, model, dataset, asr, judge, samples, [subset], base_args, asr_args, {}, {})
    plan = plan_of(bench, planner)
    if plan[0].name != "dataset" or plan[1].name != "runner":
        raise DuplexEvalError(f"benchmark {bench.name}: its plan does not start with dataset and runner stages")
    created = out is None or not Path(out).exists()
    out = prepare_out(out, store)
    sweep_id = out.name + "-" + _random.token_hex(4)
    engine = Engine(store, runtime, limits, out, cache)
    try:
        engine.check(plan)  # every stage's settings and the server's endpoint, before anything runs
    except DuplexEvalError:
        for d in [out] if created else [out / "checks", out / "logs"]:
            shutil.rmtree(d, ignore_errors=True)  # nothing ran: leave no folder behind
        raise
    limit_ms = float(runner_args.get("drift_limit_ms", DEFAULT_DRIFT_LIMIT_MS))  # checked by the runner's check
    (ds,) = engine.run(plan[:1])
    if ds.status == "failed":
        raise DuplexEvalError(f"stage dataset ({ds.component}) failed: {ds.reason}")
    ds_dir = store.stage_dir(ds.key)
    rows = ds_rows(ds_dir, subset)
    ids = [r["id"] for r in rows if f"{subset}/{r['id']}" not in ds.not_ok]
    if not ids:
        raise DuplexEvalError(f"dataset {dataset!r} has no sample in subset {subset!r}")
    task = rows[0].get("task") or bench.task_of(subset)
    if task not in tasks:
        raise DuplexEvalError(f"--subset {subset!r} is a {task} subset, whose official column has no latency "
                              f"(capacity needs one of: {', '.join(tasks) or 'none in ' + bench.name})")
    env = {**provenance.environment(), "duplexeval": __version__}
    doc = {"format": FORMAT, "duplexeval": __version__,
           "command": [scrub(a) for a in ["duplexeval", *sys.argv[1:]]],
           "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "seconds": 0.0,
           "model": model, "runner": catalog.model(model).runner, "clock": None, "kind": None,
           "benchmark": bench.name, "dataset": dataset, "subset": subset,
           "task": task, "asr": asr, "judge": judge, "runtime": runtime_name,
           "runner_args": {k: v for k, v in plan[1].config["runner_args"].items() if k not in SET_BY_SWEEP},
           "settings": {"levels": levels, "samples": len(ids), "samples_requested": samples,
                        "sessions": {str(n): sessions_at(n, len(ids)) for n in levels},
                        "drift_limit_ms": limit_ms, "drift_retries": 0, "latency_tolerance_s": tolerance_s,
                        "latency_rule": "absolute", "rule": RULE},
           "samples": [f"{subset}/{i}" for i in ids], "dataset_stage": ds.key,
           "environment": env, "levels": [], "reference_latency_s": None, "reference_note": None,
           "best_level": None, "status": "running", "stopped": None}
    code = 0
    for level in levels:
        n = sessions_at(level, len(ids))
        log(f"== capacity level {level}: {n} sessions, {level} at once")
        ldir = out / "levels" / str(level)
        keys = level_input(ds_dir, ldir / "input", subset, ids, n, level, sweep_id)
        lplan = level_plan(plan[1:], Source(f"capacity-{level}", ldir / "input"), level)
        lengine = Engine(store, runtime, limits, ldir, cache)
        try:
            for url in _endpoints(lplan[0]):
                from .engine import reachable
                reachable(url, "runner")
            results = run_level(lengine, store, lplan, lambda r: doc.update(
                runner_clock(model, store.stage_dir(r.key), keys) or {}))
            row = measure(store, results, keys, subset, limit_ms, level, bench, task)
        except NotRealtime:
            raise
        except DuplexEvalError as exc:
            row = measure(store, [], keys, subset, limit_ms, level)
            row["failures"] = {k: str(exc) for k in keys}
            row.update(failed=len(keys), reason=f"{len(keys)} of {len(keys)} sessions failed (first: {keys[0]}: {exc})")
        doc["levels"].append(row)
        if row["status"] != "ok":
            doc["stopped"] = {"level": level, "reason": row["reason"]}
            code = 1
            break
    doc["best_level"] = apply_rule(doc["levels"], tolerance_s)
    doc["reference_latency_s"] = doc["levels"][0]["latency_s"] if doc["levels"] else None
    if doc["reference_latency_s"] is None:
        doc["reference_note"] = ("Level 1 has no official latency (no session took the turn, or it failed): "
                                 "the latency check does not apply.")
    doc["status"] = "stopped" if code else "ok"
    doc["environment"]["machine"]["load_average_end"] = provenance.load_average()
    doc["seconds"] = round(time.monotonic() - t0, 2)
    return doc, out, code


def run_level(engine, store, plan: list, check_clock) -> list:
    """The level's runner stage, its clock checked (`check_clock(result)`), then (when every session
    completed) the stages that score it; a level with a failed session is not scored: it has failed
    whatever its latency, and the sweep stops there."""
    (runner,) = engine.run(plan[:1])
    if runner.status != "failed":
        check_clock(runner)
    if runner.status == "failed" or runner.failed_samples:
        return [runner]
    record = store.record(runner.key)
    return [runner, *engine.run(plan[1:], given={"runner": {**record, "key": runner.key}})]


def ds_rows(ds_dir: Path, subset: str) -> list[dict]:
    """The dataset stage's manifest rows of the subset's samples that were made, in id order."""
    from duplexeval_common.samples import id_sort_key
    rows = [r for r in read_json(ds_dir / "manifest.json").get("samples", [])
            if isinstance(r, dict) and r.get("subset") == subset and r.get("status", "ok") == "ok"
            and isinstance(r.get("id"), str)]
    return sorted(rows, key=lambda r: id_sort_key(r["id"]))


def level_plan(specs: list, source: Source, level: int) -> list:
    """The benchmark's stages after the dataset, reading the level's folder instead of the dataset
    stage, the runner at concurrency `level` and no drift retries."""
    import copy
    out = []
    for s in specs:
        s = copy.deepcopy(s)
        s.inputs = [source if i == "dataset" else i for i in s.inputs]
        if s.name == "runner":
            s.config["runner_args"] = {**s.config["runner_args"], "concurrency": level, "drift_retries": 0}
        out.append(s)
    return out


def _endpoints(spec) -> list[str]:
    from .plan import endpoints
    return endpoints(spec) if spec.network else []
