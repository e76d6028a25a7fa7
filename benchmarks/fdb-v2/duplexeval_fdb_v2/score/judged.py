"""The judged column of a task: upstream's scoring/score.py and score_time.py arithmetic on the
judge stage's judgement.json of each session, with 95% bootstrap intervals over sessions.

- fluency, instruction_following: sum of the events' scores / the events (over every parsed
  session of the task: an event counts when both its scores are numbers, as score.py counts it);
- task_score: sum of the sessions' task scores / the sessions with one (correction, entity
  tracking, safety; daily has none);
- bins: per 15 s bin of 0-120 s, fluency and instruction following weighted by each event's
  overlap with the bin (score_time.py): sum(score x overlap_s) / sum(overlap_s); events with
  end <= start weigh nothing.

A session whose reply did not parse is counted in `unparsed`, never averaged.
"""

from __future__ import annotations

from duplexeval_common.stats import bootstrap_ratio, resample_indices

BINS = tuple((float(i), float(i + 15)) for i in range(0, 120, 15))


def _num(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def session_sums(judgement: dict) -> dict:
    """One parsed session's sums (pure)."""
    out = {"events": 0, "fl": 0.0, "if": 0.0, "task": 0.0, "tasks": 0,
           "bin_fl": [0.0] * len(BINS), "bin_if": [0.0] * len(BINS), "bin_s": [0.0] * len(BINS)}
    for ev in judgement.get("events") or []:
        if not (isinstance(ev, list) and len(ev) >= 3 and _num(ev[1]) and _num(ev[2])):
            continue
        out["events"] += 1
        out["fl"] += ev[1]
        out["if"] += ev[2]
        iv = ev[0]
        if not (isinstance(iv, list) and len(iv) >= 2 and _num(iv[0]) and _num(iv[1])) or iv[1] <= iv[0]:
            continue
        for k, (lo, hi) in enumerate(BINS):
            ov = max(0.0, min(hi, iv[1]) - max(lo, iv[0]))
            out["bin_fl"][k] += ev[1] * ov
            out["bin_if"][k] += ev[2] * ov
            out["bin_s"][k] += ov
    if _num(judgement.get("task_score")):
        out["task"], out["tasks"] = float(judgement["task_score"]), 1
    return out


def _ratio(num, den, idx) -> dict:
    total = sum(den)
    if total == 0:
        return {"value": None, "interval": None, "n": total, "status": "none"}
    return {"value": sum(num) / total, "interval": bootstrap_ratio(num, den, idx) if idx is not None else None,
            "n": round(total, 6), "status": "ok"}


def pool(judgements: list[dict]) -> dict:
    """The task's judged column from its sessions' judgement.json (module docstring)."""
    parsed = [j for j in judgements if j.get("status") == "ok"]
    rows = [session_sums(j) for j in parsed]
    idx = resample_indices(len(rows)) if rows else None
    col = lambda k: [r[k] for r in rows]  # noqa: E731
    ev = col("events")
    out = {"sessions": len(judgements), "parsed": len(parsed), "unparsed": len(judgements) - len(parsed),
           "events": sum(ev),
           "fluency": _ratio(col("fl"), ev, idx), "instruction_following": _ratio(col("if"), ev, idx),
           "task_score": _ratio(col("task"), col("tasks"), idx), "bins": []}
    for k, (lo, hi) in enumerate(BINS):
        s = [r["bin_s"][k] for r in rows]
        out["bins"].append({"bin": [lo, hi], "seconds": round(sum(s), 6),
                            "fluency": _ratio([r["bin_fl"][k] for r in rows], s, idx)["value"],
                            "instruction_following": _ratio([r["bin_if"][k] for r in rows], s, idx)["value"]})
    return out
