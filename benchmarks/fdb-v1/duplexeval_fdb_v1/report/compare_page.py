"""The HTML page of `duplexeval compare`: two runs paired by sample id, B minus A.

From compare_runs' result only (the two sides' run records and the aggregator's comparison): no
clock, no local path, so the same two runs give the same bytes.
"""

from __future__ import annotations

from duplexeval_common.html import templates
from duplexeval_common.html.page import Markup, Raw, fmt, page

PAIR_LABELS = {
    "only_in_a": "only in A", "only_in_b": "only in B", "eligible_in_both": "eligible in both (paired)",
    "eligible_only_a": "eligible only in A", "eligible_only_b": "eligible only in B",
    "eligible_in_neither": "eligible in neither", "exercised_in_both": "exercised in both (paired)",
    "exercised_only_a": "exercised only in A", "exercised_only_b": "exercised only in B",
    "exercised_in_neither": "exercised in neither",
}


def _signed(x) -> str:
    return "-" if x is None else f"{float(x):+.4f}"


def _interval(iv) -> str:
    return "-" if iv is None else f"[{iv[0]:+.4f}, {iv[1]:+.4f}]"


def _p(p) -> Raw | str:
    if p is None:
        return "-"
    text = "1" if p >= 1 else f"{p:.4g}"
    return Raw(Markup("<b>{}</b>").format(text)) if p < 0.05 else text


def _ordered(entries: dict, order: list | None) -> list[str]:
    """The keys in the order the aggregator reports them (its "order"), then any others sorted."""
    first = [k for k in order or [] if k in entries]
    return first + sorted(set(entries) - set(first))


def _sides(result: dict) -> list[list]:
    rows = []
    for s in (result["a"], result["b"]):
        src = f"archive {s['archive']}" if s["source"] == "archive" else "run in the store"
        rows.append([s["role"], s["run_id"], s["model"], s["dataset"], s["runtime"],
                     "-" if s["limit"] is None else s["limit"], s["asr"], s["judge"], s["status"], src])
    return rows


def _subset(name: str, s: dict) -> dict:
    pairs = s["pairs"]
    keys = [k for k in PAIR_LABELS if k in pairs] + sorted(set(pairs) - set(PAIR_LABELS))
    rows = []
    for metric in _ordered(s["metrics"], s.get("order")):
        m = s["metrics"][metric]
        mc = m.get("mcnemar")
        rows.append([metric, fmt(m["a"]), fmt(m["b"]), _signed(m["diff"]), _interval(m["interval"]), m["n"],
                     "-" if mc is None else mc["b"], "-" if mc is None else mc["c"],
                     _p(None if mc is None else mc["p"]), m["skipped_resamples"] or ""])
    return {"name": name, "task": s["task"], "pair_headers": [PAIR_LABELS.get(k, k) for k in keys],
            "pair_counts": [pairs[k] for k in keys], "rows": rows}


def _official(off: dict | None) -> dict | None:
    if not off or not off.get("subsets"):
        return None
    order = off.get("order") or {}
    rows = [[subset, k, fmt(None if entry[k]["a"] is None else float(entry[k]["a"])),
             fmt(None if entry[k]["b"] is None else float(entry[k]["b"])), _signed(entry[k]["diff"])]
            for subset, entry in off["subsets"].items() for k in _ordered(entry, order.get(subset))]
    return {"across": off["across_revisions"], "revision_a": off["revision_a"], "revision_b": off.get("revision_b"),
            "rows": rows}


def render(result: dict) -> str:
    """The page (templates/compare.html, Jinja2 with autoescape)."""
    a, b = result["a"], result["b"]
    cmp = result["comparison"]
    body = templates.render("compare.html", near=__file__, a=a, b=b, sides=_sides(result),
                            definitions=cmp["definitions"],
                            subsets=[_subset(name, s) for name, s in cmp["subsets"].items()],
                            official=_official(cmp.get("official")))
    return page(f"compare {a['run_id']} vs {b['run_id']}", body)
