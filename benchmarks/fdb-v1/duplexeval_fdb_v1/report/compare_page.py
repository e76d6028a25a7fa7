"""The HTML page of `duplexeval compare`: two runs paired by sample id, B minus A.

From compare_runs' result only (the two sides' run records and the aggregator's comparison): no
clock, no local path, so the same two runs give the same bytes.
"""

from __future__ import annotations

from duplexeval_common.html.page import Raw, escape, fmt, page, table

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
    return Raw(f'<b>{escape(text)}</b>') if p < 0.05 else text


def _ordered(entries: dict, order: list | None) -> list[str]:
    """The keys in the order the aggregator reports them (its "order"), then any others sorted."""
    first = [k for k in order or [] if k in entries]
    return first + sorted(set(entries) - set(first))


def _sides(result: dict) -> str:
    rows = []
    for s in (result["a"], result["b"]):
        src = f"archive {s['archive']}" if s["source"] == "archive" else "run in the store"
        rows.append([s["role"], s["run_id"], s["model"], s["dataset"], s["runtime"],
                     "-" if s["limit"] is None else s["limit"], s["asr"], s["judge"], s["status"], src])
    return table(["", "run", "model", "dataset", "runtime", "limit", "ASR", "judge", "status", "from"],
                 rows, left=10)


def _subset(name: str, s: dict) -> str:
    pairs = s["pairs"]
    keys = [k for k in PAIR_LABELS if k in pairs] + sorted(set(pairs) - set(PAIR_LABELS))
    out = [f'<h2 id="{escape(name)}">{escape(name)} <span class="muted">({escape(s["task"])})</span></h2>',
           table([PAIR_LABELS.get(k, k) for k in keys], [[pairs[k] for k in keys]], left=0)]
    rows = []
    for metric in _ordered(s["metrics"], s.get("order")):
        m = s["metrics"][metric]
        mc = m.get("mcnemar")
        rows.append([metric, fmt(m["a"]), fmt(m["b"]), _signed(m["diff"]), _interval(m["interval"]), m["n"],
                     "-" if mc is None else mc["b"], "-" if mc is None else mc["c"],
                     _p(None if mc is None else mc["p"]), m["skipped_resamples"] or ""])
    if rows:
        out.append(table(["metric", "A", "B", "B \u2212 A", "95% interval (paired bootstrap)", "n pairs",
                          "McNemar b", "McNemar c", "McNemar p", "resamples skipped"], rows))
    else:
        out.append('<p class="muted">no unified metric for this task</p>')
    return "\n".join(out)


def _official(off: dict | None) -> str:
    if not off or not off.get("subsets"):
        return ""
    if off["across_revisions"]:
        note = (f'<p class="bad">ACROSS UPSTREAM REVISIONS: A @ {escape(off["revision_a"])}, B @ '
                f'{escape(off["revision_b"])}: the differences mix the revisions\' rules with the systems\'.</p>')
    else:
        note = f'<p>Both scored under upstream revision {escape(off["revision_a"])}.</p>'
    order = off.get("order") or {}
    rows = [[subset, k, fmt(None if entry[k]["a"] is None else float(entry[k]["a"])),
             fmt(None if entry[k]["b"] is None else float(entry[k]["b"])), _signed(entry[k]["diff"])]
            for subset, entry in off["subsets"].items() for k in _ordered(entry, order.get(subset))]
    return ("<h2 id=\"official\">Official column</h2>\n" + note + "\n"
            + table(["subset", "metric", "A", "B", "B \u2212 A"], rows, left=2))


def render(result: dict) -> str:
    a, b = result["a"], result["b"]
    cmp = result["comparison"]
    title = f"compare {a['run_id']} vs {b['run_id']}"
    official_link = ' <a href="#official">official</a>' if (cmp.get("official") or {}).get("subsets") else ""
    nav = " ".join(f'<a href="#{escape(n)}">{escape(n)}</a>' for n in cmp["subsets"])
    body = [
        f"<h1>Paired comparison: {escape(b['model'])} (B) minus {escape(a['model'])} (A)</h1>",
        _sides(result),
        f"<p>Dataset {escape(a['dataset'])}; unified definitions {escape(cmp['definitions'])}; every "
        "difference is B minus A. Samples are paired by sample id over those eligible in both runs "
        "(for the interruption metrics after exercised_rate, exercised in both); the counts above each "
        "table say how many each side excluded. Intervals: paired cluster bootstrap (the same resampled "
        "samples for both runs, 2000 resamples, seed 0), percentile by the ceil(qN) rule. For each "
        "yes/no metric, the exact two-sided McNemar test: b pairs are yes in A and no in B, c pairs "
        "no in A and yes in B; p = 2 P(X \u2264 min(b, c)), X ~ Binomial(b + c, 1/2), capped at 1 "
        "(bold below 0.05; with many metrics some small p-values are expected by chance).</p>",
        f"<nav>{nav}{official_link}</nav>",
    ]
    body += [_subset(name, s) for name, s in cmp["subsets"].items()]
    if not cmp["subsets"]:
        body.append('<p class="bad">The two runs have no subset in common.</p>')
    body.append(_official(cmp.get("official")))
    return page(title, "\n".join(x for x in body if x))
