"""A task's sessions pooled: every rate is a ratio of sums over the scored sessions (turns,
seconds or goals of all sessions together), and its 95% interval is the percentile bootstrap
over sessions (duplexeval_common.stats: 2000 resamples, seed 0, the same resamples for every
number of a subset), so a long session weighs as much as its turns."""

from __future__ import annotations

from duplexeval_common.stats import bootstrap_ratio, resample_indices

# (metric, numerator of a session, denominator of a session, what the value means)
UNIFIED = (
    ("response_rate", "answered", "answerable", "answered examiner turns / answerable ones"),
    ("response_latency_s", "latency_sum", "answered", "mean seconds from a turn's end to the model's answer"),
    ("overlap_rate", "overlap_s", "examiner_speech_s", "share of the examiner's speech the model talks over"),
    ("model_talk_over", "model_talk_over", "turns_completed", "model starts inside an examiner turn, per turn"),
    ("goals_reached", "goals_reached", "goals", "goals whose turn the model answered / the tasks' goals"),
    ("turns_completed", "turns_completed", "one", "examiner turns per session"),
)
EXAMINER = (
    ("talked_over_model", "examiner_talk_over", "turns_completed", "examiner turns started while the model spoke, per turn"),
    ("yielded", "examiner_yielded", "turns_completed", "examiner turns cut short because the model talked, per turn"),
    ("ended_early", "ended_early", "one", "sessions the examiner ended before the task's last goal"),
)


def _column(rows: list[dict], key: str) -> list[float]:
    if key == "one":
        return [1] * len(rows)
    if key == "latency_sum":
        return [sum(r["latencies_s"]) for r in rows]
    if key == "ended_early":
        return [int(r["examiner_ended_early"]) for r in rows]
    return [r[key] for r in rows]


def ratio(rows: list[dict], num: str, den: str, idx, meaning: str) -> dict:
    """{"value", "interval", "count", "n", "status", "meaning"} of sum(num) / sum(den)."""
    a, b = _column(rows, num), _column(rows, den)
    total, count = sum(b), sum(a)
    if not rows or total == 0:
        why = "no scored session" if not rows else f"no {den.replace('_', ' ')}"
        return {"value": None, "interval": None, "count": count, "n": total, "status": why, "meaning": meaning}
    return {"value": count / total, "interval": bootstrap_ratio(a, b, idx), "count": round(count, 6),
            "n": total, "status": "ok", "meaning": meaning}


def pool(rows: list[dict]) -> tuple[dict, dict]:
    """(unified, examiner) columns of a task's scored sessions."""
    idx = resample_indices(len(rows)) if rows else None
    unified = {m: ratio(rows, n, d, idx, what) for m, n, d, what in UNIFIED}
    examiner = {m: ratio(rows, n, d, idx, what) for m, n, d, what in EXAMINER}
    reasons: dict[str, int] = {}
    for r in rows:
        reasons[r["ended_reason"]] = reasons.get(r["ended_reason"], 0) + 1
    examiner["ended_reasons"] = dict(sorted(reasons.items()))
    examiner["llm_lines"] = sum(r["llm_lines"] for r in rows)
    return unified, examiner


SPREAD = ("response_rate", "response_latency_s", "overlap_rate")


def epochs(rows: list[dict]) -> dict | None:
    """The spread over epochs (the benchmark's `epochs`: each task run K times with seeds 0..K-1) of
    a task's headline numbers: each epoch's sessions pooled alone, then per metric the values by
    epoch, their range and population standard deviation. None with one epoch."""
    ks = sorted({r.get("epoch", 1) for r in rows})
    if len(ks) < 2:
        return None
    out = {"k": len(ks), "epochs": ks, "metrics": {}}
    for m, num, den, what in UNIFIED:
        if m not in SPREAD:
            continue
        values = [ratio([r for r in rows if r.get("epoch", 1) == k], num, den, None, what)["value"] for k in ks]
        got = [v for v in values if v is not None]
        mean = sum(got) / len(got) if got else None
        sd = (sum((v - mean) ** 2 for v in got) / len(got)) ** 0.5 if got else None
        out["metrics"][m] = {"by_epoch": values, "min": min(got) if got else None, "max": max(got) if got else None,
                             "sd": sd}
    return out
