"""Paired comparison of two scored runs by sample_id (B minus A).

Samples are paired over those eligible in both runs; for the interruption metrics other than
exercised_rate, over those exercised in both. The paired cluster bootstrap draws the same
resampled samples for both runs (2000 resamples, seed 0) and takes the percentile interval
of the differences by the ceil(qN) rule; resamples where a statistic does not exist (no pause
time, a median not reached) are skipped and counted. Each share metric (a per-sample yes/no
outcome) also gets the exact McNemar test over the same paired samples: "mcnemar": {"b": yes in A
and no in B, "c": no in A and yes in B, "p": the exact two-sided p-value} (stats.mcnemar_exact).
"order" (per subset, and per subset of the official column) lists the metrics in the order the
report shows them, for readers of the JSON (whose objects are written with sorted keys).

The official column (from each folder's metrics.json) is compared as A, B and B - A per
subset. Its numbers depend on the upstream revision each folder was scored under
("official_revision" in metrics.json / unified.json; "unknown" in folders scored before it was
recorded): compare refuses two folders whose revisions differ or are unknown (RevisionMismatch,
one line) unless allow_revision_mismatch, and then labels the official differences as across
revisions.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from duplexeval_common.errors import DuplexEvalError

from duplexeval_common import stats

from . import DEFINITIONS
from duplexeval_common.errors import InputError
from ..tasks import task_of
from .report import OFFICIAL_KEYS
from .summary import SPECS, Spec
from duplexeval_common.timebase import INF
from duplexeval_common.benchmarks import Option

# `aggregator compare --benchmark fdb-v1 A B --option NAME=VALUE`
OPTIONS = (
    Option("allow_revision_mismatch", bool, False,
           "compare folders whose official columns reproduce different upstream revisions (or an unknown "
           "one); the official differences are labelled as across revisions (default: refuse, exit 2)"),
)


def _rows(d: Path) -> dict[str, dict]:
    p = Path(d) / "unified-samples.jsonl"
    if not p.is_file():
        raise InputError(str(d), "no unified-samples.jsonl (not a scored output folder)")
    u = Path(d) / "unified.json"
    if u.is_file() and json.loads(u.read_text()).get("definitions") != DEFINITIONS:
        raise InputError(str(d), f"scored with other definitions than {DEFINITIONS}")
    with open(p, encoding="utf-8") as f:
        return {r["sample_id"]: r for r in (json.loads(line) for line in f if line.strip())}


UNKNOWN = "unknown"


class RevisionMismatch(DuplexEvalError):
    """Two scored folders whose official columns reproduce different (or unknown) upstream
    revisions; one line naming both."""


def subset_tasks(d: Path) -> dict[str, str]:
    """{subset: task} of a scored folder, from its unified.json (the task its dataset declared)."""
    u = _read(d, "unified.json") or {}
    return {k: v["task"] for k, v in (u.get("subsets") or {}).items()
            if isinstance(v, dict) and isinstance(v.get("task"), str)}


def _read(d: Path, name: str) -> dict | None:
    p = Path(d) / name
    if not p.is_file():
        return None
    try:
        obj = json.loads(p.read_text(encoding="utf-8"))
    except ValueError:
        raise InputError(str(p), "not valid JSON") from None
    return obj if isinstance(obj, dict) else None


def scored_revision(d: Path) -> str:
    """The name of the upstream revision a scored folder's official column reproduces
    (metrics.json, else unified.json, "official_revision.name"); UNKNOWN without the record."""
    for name in ("metrics.json", "unified.json"):
        rec = (_read(d, name) or {}).get("official_revision")
        if isinstance(rec, dict) and isinstance(rec.get("name"), str):
            return rec["name"]
    return UNKNOWN


def check_revisions(a: Path, b: Path, allow_mismatch: bool = False) -> tuple[str, str, bool]:
    """(revision of A, revision of B, across): across is True when they differ or either is
    unknown; that raises RevisionMismatch unless allow_mismatch."""
    rev_a, rev_b = scored_revision(a), scored_revision(b)
    across = rev_a != rev_b or UNKNOWN in (rev_a, rev_b)
    if across and not allow_mismatch:
        raise RevisionMismatch(
            f"A ({a}) was scored under official revision {rev_a} and B ({b}) under {rev_b}: "
            "official columns of different or unknown upstream revisions do not compare; rescore "
            "with the same --official-revision or pass --allow-revision-mismatch")
    return rev_a, rev_b, across


def _official(a: Path, b: Path, rev_a: str, rev_b: str, across: bool) -> dict:
    """The official column of both folders' metrics.json, per subset present in both."""
    ma, mb = _read(a, "metrics.json") or {}, _read(b, "metrics.json") or {}
    sa, sb = ma.get("subsets", {}), mb.get("subsets", {})
    tasks = subset_tasks(a)
    subsets = {}
    for subset in sorted(set(sa) & set(sb)):
        oa, ob = sa[subset].get("official", {}), sb[subset].get("official", {})
        order = OFFICIAL_KEYS.get(tasks.get(subset) or task_of(subset), [])
        keys = [k for k in order if k in oa or k in ob] + sorted((set(oa) | set(ob)) - set(order))
        entry = {}
        for k in keys:
            va, vb = oa.get(k), ob.get(k)
            entry[k] = {"a": va, "b": vb, "diff": None if va is None or vb is None else vb - va}
        subsets[subset] = entry
    return {"revision_a": rev_a, "revision_b": rev_b, "across_revisions": across, "subsets": subsets,
            "order": {subset: list(entry) for subset, entry in subsets.items()}}


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


def _mcnemar(spec: Spec, rows_a: list[dict], rows_b: list[dict]) -> dict:
    """The discordant pairs of a yes/no outcome over the paired samples (b: yes in A, no in B;
    c: no in A, yes in B) and the exact two-sided McNemar p-value."""
    ya = [bool(spec.fn(r)) for r in rows_a]
    yb = [bool(spec.fn(r)) for r in rows_b]
    b = sum(1 for x, y in zip(ya, yb) if x and not y)
    c = sum(1 for x, y in zip(ya, yb) if y and not x)
    return {"b": b, "c": c, "p": stats.mcnemar_exact(b, c)}


def _point(spec: Spec, rows: list[dict]) -> float | None:
    if not rows:
        return None
    v = _stat(spec, rows, np.arange(len(rows))[None, :])[0]
    return float(v) if np.isfinite(v) else None


def compare(a: Path, b: Path, allow_revision_mismatch: bool = False) -> dict:
    ra, rb = _rows(a), _rows(b)
    rev_a, rev_b, across = check_revisions(a, b, allow_revision_mismatch)
    out = {"definitions": DEFINITIONS, "direction": "b - a", "subsets": {},
           "official": _official(a, b, rev_a, rev_b, across)}
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
            if spec.kind == "share":
                entry["mcnemar"] = _mcnemar(spec, rows_a, rows_b)
            if ids:
                idx = stats.resample_indices(len(ids))
                sa, sb = _stat(spec, rows_a, idx), _stat(spec, rows_b, idx)
                entry["interval"] = stats.bootstrap_diff(sa, sb)
                entry["skipped_resamples"] = int((~(np.isfinite(sa) & np.isfinite(sb))).sum())
            metrics[spec.name] = entry
        out["subsets"][subset] = {"task": task, "pairs": pairs, "metrics": metrics,
                                  "order": [spec.name for spec in SPECS[task]]}
    return out


def _f(x) -> str:
    return "-" if x is None else f"{x:+.4f}" if isinstance(x, float) else str(x)


def format_p(p: float) -> str:
    """A p-value for a table: four significant digits, exactly 1 as "1"."""
    return "1" if p >= 1 else f"{p:.4g}"


def render(result: dict) -> str:
    lines = ["paired comparison, B minus A, definitions " + result["definitions"]]
    for subset, s in result["subsets"].items():
        p = s["pairs"]
        lines.append(f"== {subset} ({s['task']}): " + ", ".join(f"{k} {v}" for k, v in p.items()))
        for name, m in s["metrics"].items():
            iv = "-" if m["interval"] is None else f"[{m['interval'][0]:+.4f}, {m['interval'][1]:+.4f}]"
            a = "-" if m["a"] is None else f"{m['a']:.4f}"
            b = "-" if m["b"] is None else f"{m['b']:.4f}"
            mc = m.get("mcnemar")
            lines.append(f"   {name:<30} A {a:>8}  B {b:>8}  diff {_f(m['diff']):>8}  {iv:<22} "
                         f"n {m['n']}" + (f", {m['skipped_resamples']} resamples skipped"
                                          if m["skipped_resamples"] else "")
                         + ("" if mc is None else
                            f"  McNemar b {mc['b']} c {mc['c']} p {format_p(mc['p'])}"))
    lines += _official_lines(result.get("official"))
    return "\n".join(lines) + "\n"


def _official_lines(off: dict | None) -> list[str]:
    if not off or not off["subsets"]:
        return []
    if off["across_revisions"]:
        head = (f"== official column, B minus A, ACROSS UPSTREAM REVISIONS: A @ {off['revision_a']}, "
                f"B @ {off['revision_b']} (differences mix the revisions' rules with the systems')")
        tag = "  (across revisions)"
    else:
        head = f"== official column, B minus A, both @ {off['revision_a']}"
        tag = ""
    lines = [head]
    for subset, entry in off["subsets"].items():
        for k, m in entry.items():
            a = "-" if m["a"] is None else f"{float(m['a']):.4f}"
            b = "-" if m["b"] is None else f"{float(m['b']):.4f}"
            d = "-" if m["diff"] is None else f"{float(m['diff']):+.4f}"
            lines.append(f"   {subset + ' ' + k:<40} A {a:>8}  B {b:>8}  diff {d:>8}{tag}")
    return lines


def page(result: dict) -> str:
    """The HTML page of `duplexeval compare` (report/compare_page.py)."""
    from ..report.compare_page import render as render_page
    return render_page(result)
