"""Unified metrics of a subset from its unified-samples rows: specs, intervals and bounds.

Kinds: a share of samples (Wilson interval, selected_bounds), a pooled ratio (cluster
bootstrap interval), a quantile metric (median with a bootstrap interval, and p90 as a field).
compare.py uses the same specs on paired rows.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Callable

from duplexeval_common import stats
from duplexeval_common.timebase import INF, to_us


@dataclass(frozen=True)
class Spec:
    name: str
    kind: str                 # share | pooled | quantile
    population: str           # eligible | exercised
    fn: Callable[[dict], object]
    counts: bool = False      # pooled: the numerator is a count


def _us(x) -> int:
    return INF if x is None else to_us(x)


def _within(k: int) -> Callable[[dict], bool]:
    return lambda r: r["outcome"] == "response" and to_us(r["latency_s"]) <= k * 1_000_000


def _latency(r: dict) -> int:
    return _us(r["latency_s"]) if r["outcome"] == "response" else INF


SPECS = {
    "pause_handling": [
        Spec("pause_intrusion_rate", "share", "eligible", lambda r: r["pause_intrusion"]),
        Spec("pause_intrusion_per_pause", "pooled", "eligible",
             lambda r: (r["pauses_intruded"], r["n_pauses"]), counts=True),
        Spec("intrusion_s_per_pause_s", "pooled", "eligible",
             lambda r: (to_us(r["covered_s"]), to_us(r["pause_s"]))),
        Spec("inside_pause_onset_rate", "share", "eligible", lambda r: r["inside_pause_onset"]),
        Spec("pre_pause_speech_rate", "share", "eligible", lambda r: r["pre_pause_speech"]),
        Spec("carry_in_rate", "share", "eligible", lambda r: r["carry_in"]),
        Spec("any_speech_rate", "share", "eligible", lambda r: r["any_speech"]),
    ],
    "smooth_turn_taking": [
        Spec("early_start_rate", "share", "eligible", lambda r: r["outcome"] == "early_start"),
        Spec("response_rate_1s", "share", "eligible", _within(1)),
        Spec("response_rate_2s", "share", "eligible", _within(2)),
        Spec("response_rate_5s", "share", "eligible", _within(5)),
        Spec("no_response_rate", "share", "eligible", lambda r: r["outcome"] == "no_response"),
        Spec("response_latency_s", "quantile", "eligible", _latency),
    ],
    "user_interruption": [
        Spec("exercised_rate", "share", "eligible", lambda r: r["exercised"]),
        Spec("speaking_at_end_rate", "share", "exercised", lambda r: r["outcome"] == "speaking_at_end"),
        Spec("response_rate_1s", "share", "exercised", _within(1)),
        Spec("response_rate_2s", "share", "exercised", _within(2)),
        Spec("response_rate_5s", "share", "exercised", _within(5)),
        Spec("no_response_rate", "share", "exercised", lambda r: r["outcome"] == "no_response"),
        Spec("response_latency_s", "quantile", "exercised", _latency),
        Spec("stop_latency_s", "quantile", "exercised", lambda r: _us(r["stop_s"])),
        Spec("speech_s_per_interruption_s", "pooled", "exercised",
             lambda r: (to_us(r["speech_in_interruption_s"]), to_us(r["interruption_s"]))),
        Spec("restart_rate", "share", "exercised", lambda r: r["restarts"] > 0),
    ],
    "backchannel": [],
}


def population(rows: list[dict], which: str) -> list[dict]:
    elig = [r for r in rows if r["eligible"]]
    return elig if which == "eligible" else [r for r in elig if r["exercised"]]


def _q(us: int | None) -> tuple[float | None, str]:
    if us is None:
        return None, "empty"
    if us >= INF:
        return None, "not_reached"
    return us / 1e6, "ok"


def share_entry(k: int, n: int, unknown: int, selected: int) -> dict:
    return {"kind": "share", "value": k / n if n else None, "interval": stats.wilson(k, n),
            "count": k, "n": n,
            "selected_bounds": [k / selected, (k + unknown) / selected] if selected else None}


def pooled_entry(pairs: list[tuple[int, int]], counts: bool, idx=None) -> dict:
    num = [p[0] for p in pairs]
    den = [p[1] for p in pairs]
    tn, td = sum(num), sum(den)
    scale = 1 if counts else 1e6
    return {"kind": "pooled", "value": tn / td if td else None,
            "interval": stats.bootstrap_ratio(num, den, idx) if td else None,
            "count": tn if counts else None, "n": len(pairs),
            "numerator": tn / scale if not counts else tn,
            "denominator": td / scale if not counts else td,
            "selected_bounds": None}


def quantile_entry(values: list[int], idx=None) -> dict:
    med, status = _q(stats.quantile(values, stats.MEDIAN))
    p90, p90_status = _q(stats.quantile(values, stats.P90))
    iv = stats.bootstrap_quantile(values, stats.MEDIAN, idx)
    interval = None if iv is None else [None if x >= INF else x / 1e6 for x in iv]
    return {"kind": "quantile", "value": med, "status": status, "interval": interval,
            "p90": p90, "p90_status": p90_status,
            "count": sum(1 for v in values if v < INF), "n": len(values),
            "selected_bounds": None}


def metric(spec: Spec, rows: list[dict]) -> dict:
    pop = population(rows, spec.population)
    selected = len(rows)
    if spec.kind == "share":
        k = sum(1 for r in pop if spec.fn(r))
        return share_entry(k, len(pop), selected - len(pop), selected)
    if spec.kind == "pooled":
        return pooled_entry([spec.fn(r) for r in pop], spec.counts)
    return quantile_entry([spec.fn(r) for r in pop])


def unified_metrics(task: str, rows: list[dict]) -> dict:
    return {spec.name: metric(spec, rows) for spec in SPECS[task]}


def counts(task: str, rows: list[dict], base_only: bool = False) -> dict:
    elig = [r for r in rows if r["eligible"]]
    reasons = Counter(x for r in rows for x in r["reasons"])
    c = {"selected": len(rows), "declared": len(rows), "eligible": len(elig),
         "ineligible": len(rows) - len(elig), "ineligible_reasons": dict(sorted(reasons.items()))}
    if base_only:
        return c
    if task == "pause_handling":
        c["pauses"] = sum(r["n_pauses"] for r in elig)
        c["pause_s"] = sum(to_us(r["pause_s"]) for r in elig) / 1e6
    if task in ("smooth_turn_taking", "user_interruption"):
        names = (["early_start", "response", "no_response"] if task == "smooth_turn_taking"
                 else ["not_exercised", "speaking_at_end", "response", "no_response"])
        got = Counter(r["outcome"] for r in elig)
        c["outcomes"] = {n: got.get(n, 0) for n in names}
    if task == "user_interruption":
        c["exercised"] = sum(1 for r in elig if r["exercised"])
    return c


def min_observable_s(rows: list[dict]) -> float | None:
    vals = [to_us(r["observable_s"]) for r in rows if r["eligible"] and "observable_s" in r]
    return min(vals) / 1e6 if vals else None
