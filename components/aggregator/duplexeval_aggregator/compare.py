"""Paired comparison of two scored runs by sample_id (B minus A).

Samples are paired over those eligible in both runs; for the interruption metrics other than
exercised_rate, over those exercised in both. The paired cluster bootstrap draws the same
resampled samples for both runs (2000 resamples, seed 0) and takes the percentile interval
of the differences by the ceil(qN) rule; resamples where a statistic does not exist (no pause
time, a median not reached) are skipped and counted.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from . import DEFINITIONS, stats
from .errors import InputError
from .summary import SPECS, Spec
from .timebase import INF


def _rows(d: Path) -> dict[str, dict]:
    p = Path(d) / "unified-samples.jsonl"
    if not p.is_file():
        raise InputError(str(d), "no unified-samples.jsonl (not a scored output folder)")
    u = Path(d) / "unified.json"
    if u.is_file() and json.loads(u.read_text()).get("definitions") != DEFINITIONS:
        raise InputError(str(d), f"scored with other definitions than {DEFINITIONS}")
    with open(p, encoding="utf-8") as f:
        return {r["sample_id"]: r for r in (json.loads(line) for line in f if line.strip())}


def _stat(spec: Spec, rows: list[dict], idx: np.ndarray) -> np.ndarray:
    """The statistic for each resample (one row of idx); nan/inf where it does not exist."""
    if spec.kind == "share":
        x = np.array([1.0 if spec.fn(r) else 0.0 for r in rows])
        return x[idx].mean(axis=1)
    if spec.kind == "pooled":
        pairs = [spec.fn(r) for r in rows]
        num = np.array([p[0] for p in pairs], dtype=np.int64)
        den = np.array([p[1] for p in pairs], dtype=np.int64)
        d = den[idx].sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(d > 0, num[idx].sum(axis=1) / np.where(d > 0, d, 1), np.nan)
    vals = np.array([spec.fn(r) for r in rows], dtype=np.int64)
    k = stats.rank(stats.MEDIAN, len(rows)) - 1
    q = np.partition(vals[idx], k, axis=1)[:, k].astype(float)
    q[q >= INF] = np.inf
    return q / 1e6


def _point(spec: Spec, rows: list[dict]) -> float | None:
    if not rows:
        return None
    v = _stat(spec, rows, np.arange(len(rows))[None, :])[0]
    return float(v) if np.isfinite(v) else None


def compare(a: Path, b: Path) -> dict:
    ra, rb = _rows(a), _rows(b)
    out = {"definitions": DEFINITIONS, "direction": "b - a", "subsets": {}}
    subsets = sorted({r["subset"] for r in ra.values()} & {r["subset"] for r in rb.values()})
    for subset in subsets:
        ids_a = {k for k, r in ra.items() if r["subset"] == subset}
        ids_b = {k for k, r in rb.items() if r["subset"] == subset}
        common = sorted(ids_a & ids_b)
        ea = {k for k in common if ra[k]["eligible"]}
        eb = {k for k in common if rb[k]["eligible"]}
        both = sorted(ea & eb)
        task = ra[common[0]]["task"] if common else rb[sorted(ids_b)[0]]["task"]
        pairs = {"only_in_a": len(ids_a - ids_b), "only_in_b": len(ids_b - ids_a),
                 "eligible_in_both": len(both), "eligible_only_a": len(ea - eb),
                 "eligible_only_b": len(eb - ea), "eligible_in_neither": len(set(common) - ea - eb)}
        exercised = both
        if task == "user_interruption":
            xa = {k for k in both if ra[k]["exercised"]}
            xb = {k for k in both if rb[k]["exercised"]}
            exercised = sorted(xa & xb)
            pairs.update({"exercised_in_both": len(exercised), "exercised_only_a": len(xa - xb),
                          "exercised_only_b": len(xb - xa),
                          "exercised_in_neither": len(set(both) - xa - xb)})
        metrics = {}
        for spec in SPECS[task]:
            ids = both if spec.population == "eligible" else exercised
            rows_a, rows_b = [ra[k] for k in ids], [rb[k] for k in ids]
            va, vb = _point(spec, rows_a), _point(spec, rows_b)
            entry = {"a": va, "b": vb, "diff": None if va is None or vb is None else vb - va,
                     "interval": None, "n": len(ids), "skipped_resamples": 0}
            if ids:
                idx = stats.resample_indices(len(ids))
                sa, sb = _stat(spec, rows_a, idx), _stat(spec, rows_b, idx)
                entry["interval"] = stats.bootstrap_diff(sa, sb)
                entry["skipped_resamples"] = int((~(np.isfinite(sa) & np.isfinite(sb))).sum())
            metrics[spec.name] = entry
        out["subsets"][subset] = {"task": task, "pairs": pairs, "metrics": metrics}
    return out


def _f(x) -> str:
    return "-" if x is None else f"{x:+.4f}" if isinstance(x, float) else str(x)


def render(result: dict) -> str:
    lines = ["paired comparison, B minus A, definitions " + result["definitions"]]
    for subset, s in result["subsets"].items():
        p = s["pairs"]
        lines.append(f"== {subset} ({s['task']}): " + ", ".join(f"{k} {v}" for k, v in p.items()))
        for name, m in s["metrics"].items():
            iv = "-" if m["interval"] is None else f"[{m['interval'][0]:+.4f}, {m['interval'][1]:+.4f}]"
            a = "-" if m["a"] is None else f"{m['a']:.4f}"
            b = "-" if m["b"] is None else f"{m['b']:.4f}"
            lines.append(f"   {name:<30} A {a:>8}  B {b:>8}  diff {_f(m['diff']):>8}  {iv:<22} "
                         f"n {m['n']}" + (f", {m['skipped_resamples']} resamples skipped"
                                          if m["skipped_resamples"] else ""))
    return "\n".join(lines) + "\n"
