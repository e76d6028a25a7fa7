"""The printed report: each subset's unified metrics as value, interval and count, the bounds,
and the official column beside them."""

from __future__ import annotations

OFFICIAL_KEYS = {"pause_handling": ["tor"], "smooth_turn_taking": ["tor", "latency"],
                 "backchannel": ["tor", "freq", "jsd"], "user_interruption": ["tor", "latency", "rating"]}


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


def subset_lines(name: str, s: dict) -> list[str]:
    c = s["counts"]
    head = (f"== {name} ({s['task']}): n {s['n']}, eligible {c['eligible']}, "
            f"coverage {_f(s['coverage'], 3)}")
    if "min_observable_s" in s:
        head += f", min_observable_s {_f(s['min_observable_s'], 3)}"
    if "exercised" in c:
        head += f", exercised {c['exercised']}"
    lines = [head]
    if s["metrics"]:
        lines.append(f"   {'metric':<30} {'value':>11}  {'95% interval':<30} {'count/n':>9}  bounds / p90")
        for k, m in s["metrics"].items():
            cn = f"{m['count']}/{m['n']}" if m["kind"] != "pooled" else f"n {m['n']}"
            lines.append(f"   {k:<30} {_value(m):>11}  {_interval(m['interval']):<30} {cn:>9}  {_extra(m)}")
    else:
        lines.append("   (no unified metric for this task; the official numbers are the reference)")
    off = s["official"]
    parts = []
    for k in OFFICIAL_KEYS[s["task"]]:
        label = k
        if k == "rating" and s.get("rating_label") not in (None, "official"):
            label = f"rating[{s['rating_label']}]"
        parts.append(f"{label} {_f(off.get(k))}")
    lines.append(f"   {'official (reference)':<30} " + "  ".join(parts))
    for note in s["official_notes"]:
        lines.append(f"     note: {note}")
    if c["ineligible_reasons"]:
        lines.append("   ineligible: " + ", ".join(f"{r} {n}" for r, n in c["ineligible_reasons"].items()))
    return lines


def render(unified: dict) -> str:
    out = [f"Full-Duplex-Bench v1.0, definitions {unified['definitions']}, silero-vad "
           f"{unified['vad']['version']} ({unified['vad']['backend']})"]
    for name, s in unified["subsets"].items():
        out += subset_lines(name, s)
    return "\n".join(out) + "\n"
