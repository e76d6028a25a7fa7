"""report.md of a fdb-v2 scoring, from metrics.json alone: per task the measured numbers with
their intervals, the coverage, and the examiner's own behaviour."""

from __future__ import annotations

from .pool import UNIFIED


def _f(x, nd: int = 3) -> str:
    return "-" if x is None else f"{x:.{nd}f}"


def _line(name: str, m: dict) -> str:
    iv = "" if not m["interval"] else f"[{_f(m['interval'][0])}, {_f(m['interval'][1])}]"
    value = _f(m["value"]) if m["value"] is not None else m["status"]
    return f"{name:<28} {value:>8} {iv:<16} {_f(m['count'], 2)}/{_f(m['n'], 2)}"


def render(metrics: dict) -> str:
    out = ["# duplexeval report: fdb-v2 live sessions (not official)", "",
           f"Definitions {metrics['definitions']}; response window {metrics['settings']['response_window_s']:g} s. "
           "An offline examiner, not upstream's: these numbers do not compare with published "
           "Full-Duplex-Bench v2 tables (benchmarks/fdb-v2/README.md).", "", "```"]
    for name, s in sorted(metrics["subsets"].items()):
        c = s["coverage"]
        out.append(f"{name} ({s['task']}): {c['scored']}/{c['sessions']} sessions scored")
        for k, *_ in UNIFIED:   # a fixed order: metrics.json is written with sorted keys
            out.append("  " + _line(k, s["unified"][k]))
        for k in ("talked_over_model", "yielded", "ended_early"):
            out.append("  " + _line(f"examiner {k}", s["examiner"][k]))
        e = s.get("epochs")
        if e:
            out.append(f"  over {e['k']} epochs (seeds 0..{e['k'] - 1}): by epoch, range, sd")
            for k, m in sorted(e["metrics"].items()):
                vals = " ".join(_f(v) for v in m["by_epoch"])
                out.append(f"  {'epochs ' + k:<28} {vals}  [{_f(m['min'])}, {_f(m['max'])}]  sd {_f(m['sd'])}")
        j = s.get("judged")
        if j:
            out.append(f"  judged: {j['parsed']}/{j['sessions']} sessions parsed ({j['unparsed']} unparsed), "
                       f"{j['events']} events")
            for k in ("fluency", "instruction_following", "task_score"):
                m = j[k]
                iv = "" if not m["interval"] else f"[{_f(m['interval'][0])}, {_f(m['interval'][1])}]"
                out.append(f"  {'judged ' + k:<28} {_f(m['value']):>8} {iv}")
    out.append("```")
    if metrics["missing"]:
        out += ["", "Not scored:", ""] + [f"- {k}: {why}" for k, why in sorted(metrics["missing"].items())]
    return "\n".join(out) + "\n"
