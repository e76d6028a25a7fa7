"""report.md of a Full-Duplex-Bench v1.5 scoring, from metrics.json alone: per task the official
column (behaviour ratios, our aggregation of upstream's latency lists, the adaptation means and the
t-tests) beside the unified one (rates with intervals, latencies, clean-vs-overlap differences)."""

from __future__ import annotations


def _f(x, nd: int = 3) -> str:
    return "-" if x is None else f"{x:.{nd}f}"


def _iv(iv) -> str:
    if not iv:
        return ""
    return "[" + ", ".join("-" if v is None else f"{v:.3f}" for v in iv) + "]"


def _metric(name: str, m: dict) -> str:
    if m["kind"] == "share":
        return f"{name:<28} {_f(m['value']):>7} {_iv(m['interval']):<18} {m['count']}/{m['n']}"
    if m["kind"] == "quantile":
        value = m["status"] if m["value"] is None and m.get("status") != "ok" else _f(m["value"])
        return (f"{name:<28} {value:>7} {_iv(m['interval']):<18} p90 {_f(m['p90'])}, "
                f"{m['count']}/{m['n']} observed")
    return f"{name:<28} {_f(m['value'], 4):>7} {_iv(m['interval']):<18} n {m['n']} (overlap minus clean)"


def invalid_lines(metrics: dict) -> list[str]:
    return [f"excluded: {x['sample_id']}: {x['reason']} ({x['problem']})"
            for s in metrics["subsets"].values() for x in s["invalid"]]


def subset_lines(name: str, s: dict) -> list[str]:
    off, uni = s["official"], s["unified"]
    c = uni["counts"]
    lines = [f"## {name} ({s['task']}): n {s['n']}, eligible {c['eligible']}, exercised {c['exercised']}, "
             f"coverage {_f(uni['coverage'])}", "", "Official (upstream's scripts at d7336bd):", "```"]
    b = off["behaviour"]
    if b:
        lines.append("behaviour ratios (eval_behavior.py, per tag): "
                     + ", ".join(f"{t} {v:.2f}" for t, v in b["rounded"]["C"].items())
                     + f"  ({b['tags']} tags, {b['samples']} samples)")
    else:
        lines.append("behaviour ratios: not judged")
    t = off["timing"]
    for k in ("stop_latency_s", "response_latency_s"):
        v = t[k]
        lines.append(f"{k:<20} {_f(v['mean'])} mean of sample means over {v['n_samples']} samples "
                     f"({v['n_empty']} without an interval); pooled {_f(v['pooled_mean'])} over "
                     f"{v['n_intervals']} intervals")
    lines.append(f"  ({t['label']})")
    if "adaptation" in off:
        tm = off["adaptation"]["trimmed_means"]
        for side in ("pre", "post"):
            lines.append(f"{side:<5} " + ", ".join(f"{k} {_f(v, 2)}" for k, v in tm.get(side, {}).items()))
        ct = off["adaptation"]["clean_trimmed_means"]
        lines.append("clean " + ", ".join(f"{k} {_f(v, 2)}" for k, v in ct.items()) + "  (our addition)")
        for r in off["significance"]["tests"]:
            lines.append(f"t-test {r['pair']}:{r['metric']}: p {_f(r['p_t'], 4)}, Holm {_f(r['p_adj'], 4)}, "
                         f"n {r['n_used']}")
        if off["significance"]["skipped"]:
            lines.append("skipped: " + "; ".join(f"{n} ({why})" for n, why in off["significance"]["skipped"]))
    lines += ["```", "", "Unified (the window from metadata.json; checked against the clean run):", "```"]
    for k, m in uni["metrics"].items():
        lines.append(_metric(k, m))
    if uni.get("behaviour"):
        for lab, m in uni["behaviour"]["rates"].items():
            lines.append(_metric(f"behaviour {lab}", m))
    for k, m in (uni.get("adaptation") or {}).items():
        lines.append(_metric(f"adaptation {k}", m))
    lines.append("```")
    for x in s["invalid"]:
        lines.append(f"- excluded: {x['sample_id']}: {x['reason']} ({x['problem']})")
    return lines + [""]


def render(metrics: dict) -> str:
    out = ["# duplexeval report: Full-Duplex-Bench v1.5", "",
           f"Definitions {metrics['definitions']} (official), {metrics['unified_definitions']} (unified); "
           "benchmarks/fdb-v1.5/README.md defines each number.", ""]
    for name, s in metrics["subsets"].items():
        out += subset_lines(name, s)
    return "\n".join(out)
