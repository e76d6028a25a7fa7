"""The unified column of Full-Duplex-Bench v1.5 (in the spirit of the sglang-omni unified duplex
metrics): timing from the overlap window, checked against the clean run.

Times are integers of microseconds on the input timeline [0, T] (duplexeval_common.timebase),
T = input.wav's length; the overlap window [S, E] is metadata.json `timestamps`
(`checks.overlap_window`). Model speech is Silero VAD on output.wav and on clean_output.wav
(the run on clean_input.wav, the same input without the overlap event) with the v1.0 unified
settings (threshold 0.5, release below 0.35, minimum speech 250 ms, minimum silence 100 ms,
no padding; `duplexeval_common.vad.unified_segments`), clipped to T.

Per sample (`row`):

- **stop** (only where the model was speaking at S: `exercised`, a segment with start <= S <
  end): `stop_s` = end of that segment - S; a segment running to the end of the file is an
  unobserved stop (never). `stop_in_clean`: the clean run was silent at S, or its segment
  covering S had ended by the time the overlap run stopped (clean end <= S + stop_s): the
  model stops there anyway, so the stop is not credited to the overlap. `credited_stop` =
  an observed stop not in the clean run.
- **response** to the end of the user's turn E: `speaking_at_end` when a segment starts before
  E and ends after it (no onset to time: the speech may just go on); else `response` when a
  segment starts at or after E (latency = its start - E); else `no_response`.
  `response_in_clean`: the clean run also starts speaking in [E, onset] (a clean segment
  starting at or after E and no later than the overlap run's onset), so the model would have
  started talking by then anyway (speech the clean run merely continues is no onset);
  `credited_response` = a response not in the clean run.
- **speech during the overlap**: model speech seconds inside [S, E] in both runs;
  `yielded_s` = clean - overlap (how much less the model spoke during the overlap than it did
  at the same time without it).

Summaries (`summary`) give shares with 95% Wilson intervals and bounds over the selected
samples, quantiles (median with bootstrap interval, p90) with the never-values at infinity, and
paired clean-vs-overlap mean differences with a 95% paired bootstrap interval (2000 resamples
of whole samples, numpy default_rng(0), duplexeval_common.stats).
"""

from __future__ import annotations

import math

import numpy as np

from duplexeval_common import stats
from duplexeval_common.timebase import INF, to_us
from duplexeval_common.vad import SR, unified_segments

from .significance import ZERO_IS_MISSING

DEFINITIONS = "fdb-v1.5-unified-1"
RESPONSE_WITHIN_S = (1, 2, 5)


def segments_us(probs, n: int, T_us: int) -> list[tuple[int, int, bool]]:
    """Unified VAD segments of one file as (start_us, end_us, runs_to_end), clipped to T."""
    return [(min(to_us(a / SR), T_us), min(to_us(b / SR), T_us), o) for a, b, o in unified_segments(probs, n)]


def _covering(segs, t):
    return next(((a, b, o) for a, b, o in segs if a <= t < b), None)


def _inside(segs, lo, hi) -> int:
    return sum(max(0, min(b, hi) - max(a, lo)) for a, b, _ in segs)


def row(window_s: tuple[float, float], T_s: float, segs: list[tuple[int, int, bool]],
        clean_segs: list[tuple[int, int, bool]]) -> dict:
    """One eligible sample's unified quantities (see the module doc). segs, clean_segs: from
    `segments_us` on output.wav and clean_output.wav."""
    S, E, T = to_us(window_s[0]), to_us(window_s[1]), to_us(T_s)
    cov = _covering(segs, S)
    ccov = _covering(clean_segs, S)
    stop = None if cov is None else (INF if cov[2] else cov[1] - S)
    cstop = None if ccov is None else (INF if ccov[2] else ccov[1] - S)
    observed = stop is not None and stop < INF
    stop_in_clean = None
    if observed:
        stop_in_clean = ccov is None or (not ccov[2] and ccov[1] <= S + stop)
    at_end = any(a < E < b for a, b, _ in segs)
    onsets = [a for a, _, _ in segs if a >= E]
    onset = min(onsets) if onsets and not at_end else None
    outcome = "speaking_at_end" if at_end else "response" if onset is not None else "no_response"
    in_clean = None if onset is None else any(E <= a <= onset for a, _, _ in clean_segs)
    speech, cspeech = _inside(segs, S, E), _inside(clean_segs, S, E)
    s = lambda us: None if us is None else (None if us >= INF else us / 1e6)  # noqa: E731
    return {
        "S_s": S / 1e6, "E_s": E / 1e6, "overlap_s": (E - S) / 1e6, "observable_s": (T - E) / 1e6,
        "exercised": cov is not None,
        "stop_s": s(stop), "stop_observed": None if stop is None else observed,
        "clean_speaking_at_onset": ccov is not None, "clean_stop_s": s(cstop),
        "clean_stop_observed": None if cstop is None else cstop < INF,
        "stop_in_clean": stop_in_clean, "credited_stop": bool(observed and not stop_in_clean),
        "outcome": outcome, "latency_s": None if onset is None else (onset - E) / 1e6,
        "response_in_clean": in_clean, "credited_response": bool(onset is not None and not in_clean),
        "speech_in_overlap_s": speech / 1e6, "clean_speech_in_overlap_s": cspeech / 1e6,
        "yielded_s": (cspeech - speech) / 1e6,
        "segments": [[a / 1e6, b / 1e6] for a, b, _ in segs],
        "clean_segments": [[a / 1e6, b / 1e6] for a, b, _ in clean_segs],
    }


# ---- metric entries ----

def share(k: int, n: int, unknown: int, selected: int) -> dict:
    return {"kind": "share", "value": k / n if n else None, "interval": stats.wilson(k, n), "count": k, "n": n,
            "selected_bounds": [k / selected, (k + unknown) / selected] if selected else None}


def _q(us):
    if us is None:
        return None, "empty"
    return (None, "not_reached") if us >= INF else (us / 1e6, "ok")


def quantile(values_us: list[int]) -> dict:
    """Median (bootstrap interval) and p90 of microsecond values, INF meaning never."""
    med, st = _q(stats.quantile(values_us, stats.MEDIAN))
    p90, p90st = _q(stats.quantile(values_us, stats.P90))
    iv = stats.bootstrap_quantile(values_us, stats.MEDIAN)
    return {"kind": "quantile", "value": med, "status": st,
            "interval": None if iv is None else [None if x >= INF else x / 1e6 for x in iv],
            "p90": p90, "p90_status": p90st, "count": sum(1 for v in values_us if v < INF), "n": len(values_us),
            "selected_bounds": None}


def paired_difference(a: list[float], b: list[float]) -> dict:
    """Mean of b - a over paired samples (both finite) with the 95% paired bootstrap interval
    (duplexeval_common.stats.paired_difference: 2000 resamples of whole samples, seed 0), and
    the two means."""
    pairs = [(x, y) for x, y in zip(a, b) if x is not None and y is not None
             and math.isfinite(x) and math.isfinite(y)]
    d = stats.paired_difference([y - x for x, y in pairs])
    return {"kind": "paired_difference", "value": d["mean"], "interval": d["interval"], "n": d["n"],
            "mean_a": float(np.mean([p[0] for p in pairs])) if pairs else None,
            "mean_b": float(np.mean([p[1] for p in pairs])) if pairs else None}


def _us(x):
    return INF if x is None else to_us(x)


def summary(rows: list[dict]) -> dict:
    """Metrics over one subset's rows: each row is `row(...)` plus "eligible" (bool); an
    ineligible row may hold nothing else."""
    selected = len(rows)
    elig = [r for r in rows if r.get("eligible")]
    ex = [r for r in elig if r["exercised"]]
    obs = [r for r in ex if r["stop_observed"]]
    resp = [r for r in elig if r["outcome"] == "response"]
    unk_e = selected - len(elig)             # unknown for shares over eligible samples
    unk_x = selected - len(ex)               # ... over exercised ones
    m = {
        "exercised_rate": share(len(ex), len(elig), unk_e, selected),
        "stop_latency_s": quantile([_us(r["stop_s"]) if r["stop_observed"] else INF for r in ex]),
        "credited_stop_rate": share(sum(r["credited_stop"] for r in ex), len(ex), unk_x, selected),
        "stop_in_clean_rate": share(sum(bool(r["stop_in_clean"]) for r in obs), len(obs), selected - len(obs),
                                    selected),
        "stop_vs_clean_s": paired_difference([r["clean_stop_s"] for r in obs], [r["stop_s"] for r in obs]),
        "speaking_at_end_rate": share(sum(r["outcome"] == "speaking_at_end" for r in elig), len(elig), unk_e, selected),
        "no_response_rate": share(sum(r["outcome"] == "no_response" for r in elig), len(elig), unk_e, selected),
        "response_latency_s": quantile([_us(r["latency_s"]) if r["outcome"] == "response" else INF for r in elig]),
        "response_in_clean_rate": share(sum(bool(r["response_in_clean"]) for r in resp), len(resp),
                                        selected - len(resp), selected),
        "credited_response_rate": share(sum(r["credited_response"] for r in elig), len(elig), unk_e, selected),
        "yielded_s": paired_difference([r["speech_in_overlap_s"] for r in elig],
                                       [r["clean_speech_in_overlap_s"] for r in elig]),
    }
    for k in RESPONSE_WITHIN_S:
        hit = sum(1 for r in elig if r["outcome"] == "response" and to_us(r["latency_s"]) <= k * 1_000_000)
        m[f"response_rate_{k}s"] = share(hit, len(elig), unk_e, selected)
    counts = {"selected": selected, "eligible": len(elig), "ineligible": selected - len(elig),
              "exercised": len(ex), "stops_observed": len(obs),
              "stops_in_clean": sum(bool(r["stop_in_clean"]) for r in obs),
              "responses": len(resp), "responses_in_clean": sum(bool(r["response_in_clean"]) for r in resp),
              "outcomes": {o: sum(r["outcome"] == o for r in elig)
                           for o in ("speaking_at_end", "response", "no_response")}}
    obs_s = [to_us(r["observable_s"]) for r in elig]
    return {"definitions": DEFINITIONS, "metrics": dict(sorted(m.items())), "counts": counts,
            "coverage": len(elig) / selected if selected else None,
            "min_observable_s": min(obs_s) / 1e6 if obs_s else None}


def adaptation_pairs(rows: list[dict], feature: str) -> dict:
    """Paired difference of one feature: the overlap run's post-split segment minus the clean
    run's same window ({"post": {...}, "clean_post": {...}} per row, from
    `adaptation.window_features`), over the rows where both have it."""
    def value(side: dict | None):
        # a window without speech (no words: speech_dur_s 0) has no features to compare, and the
        # rule of the official t-tests holds here too: a 0 is missing for the rates, pitches and
        # spreads, an intensity of -190 dB or below is missing
        side = side or {}
        v = side.get(feature)
        if v is None or not side.get("speech_dur_s"):
            return None
        if feature in ZERO_IS_MISSING and v == 0:
            return None
        if feature == "mean_intensity" and v <= -190:
            return None
        return v
    a = [value(r.get("clean_post")) for r in rows]
    b = [value(r.get("post")) for r in rows]
    return paired_difference(a, b)
