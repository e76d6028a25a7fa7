"""The printed report: per subset, the official column and the unified column side by side.

A line at the top names the upstream revision the official column reproduces ("official
column: Full-Duplex-Bench @ d7336bd ..."), and each table's left head repeats it ("official @
d7336bd"; "official (reference)" for a file without the record). Each subset gets a header
(n, eligible, coverage, for interruption exercised and who rated) and a table whose left side
holds the official numbers and whose right side holds each unified metric as value, 95%
interval, count/n and the selected bounds (or p90, or the pooled sums). `render(unified.json)` prints it for `aggregator score` and the pipeline's report.md;
`console_rows(metrics.json)` gives the same header and table from metrics.json alone.
"""

from __future__ import annotations

from itertools import zip_longest

from ..tasks import task_of


OFFICIAL_KEYS = {"pause_handling": ["tor"], "smooth_turn_taking": ["tor", "latency"],
                 "backchannel": ["tor", "freq", "jsd"], "user_interruption": ["tor", "latency", "rating"]}
OFFICIAL_HEAD = "official (reference)"  # a metrics.json or unified.json without "official_revision"
UNIFIED_HEAD = f"{'unified':<30} {'value':>11}  {'95% interval':<30} {'count/n':>9}  bounds / p90"
NO_UNIFIED = "(no unified metric for this task; the official numbers are the reference)"


def _f(x, nd: int = 4) -> str:
    return "-" if x is None else f"{x:.{nd}f}"


def _interval(iv) -> str:
    if iv is None:
        return "-"
    return "[" + ", ".join("not reached" if x is None else _f(x) for x in iv) + "]"


def _value(m: dict) -> str:
    if m["kind"] == "quantile" and m["status"] != "ok":
        return "not reached" if m["status"] == "not_reached" else "-"
    return _f(m["value"])


def _extra(m: dict) -> str:
    if m["kind"] == "quantile":
        p90 = "not reached" if m["p90_status"] == "not_reached" else _f(m["p90"])
        return f"p90 {p90}"
    if m["kind"] == "pooled":
        return f"pooled {_f(m['numerator'], 3)}/{_f(m['denominator'], 3)} s" if m["count"] is None \
            else f"pooled {m['numerator']}/{m['denominator']}"
    return "bounds " + _interval(m["selected_bounds"])


def rating_text(label) -> str:
    """Who rated the interruption replies: "official", a judge's model name, or no judge."""
    return "no judge" if label is None else str(label)


def official_head(revision: dict | None) -> str:
    """The left column's head: "official @ <revision name>" (OFFICIAL_HEAD without a record)."""
    return OFFICIAL_HEAD if not revision else f"official @ {revision['name']}"


def revision_line(revision: dict | None) -> str:
    """One line naming the upstream revision of the official column and what it matches."""
    if not revision:
        return "official column: upstream revision not recorded"
    return (f"official column: {revision['repository'].split('/')[-1]} @ {revision['name']} "
            f"({revision['commit']}, {revision['date']}), matches the {revision['matches']}")


def _official_cells(task: str, off: dict, rating_label, head: str = OFFICIAL_HEAD) -> list[str]:
    labels = []
    for k in OFFICIAL_KEYS[task]:
        label = k
        if k == "rating" and rating_label not in (None, "official"):
            label = f"rating[{rating_label}]"
        labels.append((label, _f(off.get(k))))
    w = max(len(lab) for lab, _ in labels)
    vw = max(8, len(head) - w - 1)  # values right-aligned under the column's edge
    return [f"{lab:<{w}} {val:>{vw}}" for lab, val in labels]


def _ordered(task: str, metrics: dict) -> list[str]:
    """The metric names in the definitions' order (the JSON files sort their keys)."""
    from .summary import SPECS
    known = [spec.name for spec in SPECS.get(task, []) if spec.name in metrics]
    return known + sorted(k for k in metrics if k not in known)


def _unified_cells(task: str, metrics: dict) -> list[str]:
    if not metrics:
        return [NO_UNIFIED]
    cells = []
    for k in _ordered(task, metrics):
        m = metrics[k]
        cn = f"{m['count']}/{m['n']}" if m["kind"] != "pooled" else f"n {m['n']}"
        cells.append(f"{k:<30} {_value(m):>11}  {_interval(m['interval']):<30} {cn:>9}  {_extra(m)}")
    return cells


def subset_table(name: str, task: str, s: dict, revision: dict | None = None) -> list[str]:
    """Header and side-by-side rows of one subset.

    s: {"n", "counts", "coverage", "official", "unified" (metric entries), "rating_label"};
    revision: the file's "official_revision" record (names the official column's head).
    """
    off_head = official_head(revision)
    c = s["counts"]
    head = (f"== {name} ({task}): n {s['n']}, eligible {c['eligible']}, "
            f"coverage {_f(s['coverage'], 3)}")
    if "exercised" in c:
        head += f", exercised {c['exercised']}"
    if task == "user_interruption":
        head += f", rating {rating_text(s.get('rating_label'))}"
    left = _official_cells(task, s["official"], s.get("rating_label"), off_head)
    right = _unified_cells(task, s["unified"])
    lw = max(len(off_head), *(len(x) for x in left))
    lines = [head, f"   {off_head:<{lw}} | {UNIFIED_HEAD if s['unified'] else 'unified'}".rstrip()]
    for a, b in zip_longest(left, right, fillvalue=""):
        lines.append(f"   {a:<{lw}} | {b}".rstrip())
    if c["ineligible_reasons"]:
        lines.append("   ineligible: " + ", ".join(f"{r} {n}" for r, n in c["ineligible_reasons"].items()))
    return lines


def subset_lines(name: str, s: dict, revision: dict | None = None) -> list[str]:
    """One subset of unified.json: the table, then min_observable_s, the official notes and
    the samples excluded as invalid."""
    lines = subset_table(name, s["task"], {**s, "unified": s["metrics"]}, revision)
    if s.get("min_observable_s") is not None:
        lines.append(f"   min_observable_s {_f(s['min_observable_s'], 3)} (a response_rate_ks with k above "
                     "it is a lower bound)")
    if s.get("counterfactual"):
        from ..counterfactual import report_lines
        lines += report_lines(s["counterfactual"])
    for note in s["official_notes"]:
        lines.append(f"     note: {note}")
    for x in s.get("invalid", []):
        lines.append(f"     excluded: {x['sample_id']}: {x['reason']} ({x['problem']})")
    return lines


def render(unified: dict) -> str:
    out = [f"Full-Duplex-Bench v1.0, definitions {unified['definitions']}, silero-vad "
           f"{unified['vad']['version']} ({unified['vad']['backend']}); "
           "left: official column, right: unified column (value, 95% interval)",
           revision_line(unified.get("official_revision"))]
    for name, s in unified["subsets"].items():
        out += subset_lines(name, s, unified.get("official_revision"))
    return "\n".join(out) + "\n"


def console_rows(metrics: dict, tasks: dict[str, str] | None = None) -> list[str]:
    """The side-by-side table of every subset from metrics.json alone (no trailing newlines).

    The same header and rows as render() prints for each subset (the official column's head
    names metrics.json's "official_revision"), without the official notes, min_observable_s and
    the excluded-sample details, which only unified.json holds.
    """
    out = []
    for name, s in metrics["subsets"].items():
        task = (tasks or {}).get(name) or task_of(name)
        if task is None:
            continue
        out += subset_table(name, task, s, metrics.get("official_revision"))
    return out


def invalid_lines(unified: dict) -> list[str]:
    """One line per sample excluded as invalid: "excluded: <subset>/<id>: <reason> (<problem>)"."""
    return [f"excluded: {x['sample_id']}: {x['reason']} ({x['problem']})"
            for s in unified["subsets"].values() for x in s.get("invalid", [])]
