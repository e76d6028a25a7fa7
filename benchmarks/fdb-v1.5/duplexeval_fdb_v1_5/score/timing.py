"""Official stop and response latency: get_timing.py's rules (Full-Duplex-Bench @ d7336bd).

Per sample, upstream runs Silero VAD (library defaults, 16 kHz) on input.wav (the user, with the
overlap) and on output.wav (the model), merges the user's segments across gaps of at most 0.6 s
and the model's across gaps of at most 0.5 s (the code's numbers; its comments say 300 ms and
50 ms), and writes latency_intervals.json:

- `latency_stop_list`: every nonempty intersection of a user segment with a model segment,
  found by walking both lists in time order; where several end at the same millisecond
  (the end rounded to 1 ms) the shortest is kept; each [start, end] rounded to 3 decimals,
  sorted by end. Stop latency is end - start.
- `latency_resp_list`: for each user segment, the first model segment start strictly after the
  user segment's end; where several user segments lead to the same model start (rounded to
  1 ms) the one with the later (rounded) end is kept; [user end, model start] rounded to 3
  decimals, sorted by the model start. Response latency is start - end.

Upstream ships no aggregation of these lists. `summary` gives ours, labelled as such.

Inputs here are segments as (start, end) 16 kHz sample indices (`vad.segments(probs, n,
vad.TIMING_SETTINGS)` on `vad.timing_feed(...)`), or already in seconds for the list functions.
"""

from __future__ import annotations

from duplexeval_common.vad import SR

USER_MERGE_GAP_S = 0.6
MODEL_MERGE_GAP_S = 0.5
AGGREGATION_LABEL = "our aggregation of upstream lists"


def merge(segments: list[tuple[float, float]], gap_s: float) -> list[tuple[float, float]]:
    """Sorted segments with every gap of at most gap_s closed (start - previous end <= gap_s)."""
    out: list[tuple[float, float]] = []
    for s, e in sorted(segments):
        if out and s - out[-1][1] <= gap_s:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def seconds(segments_samples: list[tuple[int, int]], gap_s: float) -> list[tuple[float, float]]:
    """VAD segments in 16 kHz samples -> merged segments in seconds, as get_timing.py's seg_sec."""
    return merge([(s / SR, e / SR) for s, e in segments_samples], gap_s)


def _ms(t: float) -> int:
    return int(round(t * 1000))


def stop_list(user: list[tuple[float, float]], model: list[tuple[float, float]]) -> list[list[float]]:
    """latency_stop_list of merged user and model segments (seconds)."""
    found: list[tuple[float, float]] = []
    i = j = 0
    while i < len(user) and j < len(model):
        lo = max(user[i][0], model[j][0])
        hi = min(user[i][1], model[j][1])
        if hi > lo:
            found.append((lo, hi))
        if user[i][1] < model[j][1]:
            i += 1
        else:
            j += 1
    shortest: dict[int, tuple[float, float]] = {}
    for lo, hi in found:
        k = _ms(hi)
        if k not in shortest or hi - lo < shortest[k][1] - shortest[k][0]:
            shortest[k] = (lo, hi)
    return [[round(lo, 3), round(hi, 3)] for lo, hi in sorted(shortest.values(), key=lambda iv: iv[1])]


def response_list(user: list[tuple[float, float]], model: list[tuple[float, float]]) -> list[list[float]]:
    """latency_resp_list of merged user and model segments (seconds)."""
    starts = [s for s, _ in model]
    latest: dict[int, list[float]] = {}
    for _, u_end in user:
        nxt = next((s for s in starts if s > u_end), None)
        if nxt is None:
            continue
        k = _ms(nxt)
        pair = [round(u_end, 3), round(nxt, 3)]
        if k not in latest or pair[0] > latest[k][0]:
            latest[k] = pair
    return sorted(latest.values(), key=lambda p: p[1])


def latency_intervals(user_samples: list[tuple[int, int]], model_samples: list[tuple[int, int]]) -> dict:
    """latency_intervals.json of one sample from the raw VAD segments (16 kHz samples) of
    input.wav (user) and output.wav (model)."""
    user = seconds(user_samples, USER_MERGE_GAP_S)
    model = seconds(model_samples, MODEL_MERGE_GAP_S)
    return {"latency_stop_list": stop_list(user, model), "latency_resp_list": response_list(user, model)}


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def summary(per_sample: dict[str, dict]) -> dict:
    """Our aggregation of upstream's lists over samples ({sample_id: latency_intervals dict}),
    for the stop latency (end - start of each latency_stop_list entry) and the response latency
    (model start - user end of each latency_resp_list entry):

    - `mean`: the mean over samples of each sample's mean interval, over the samples with at
      least one interval (`n_samples`); the samples without one are counted in `n_empty`;
    - `pooled_mean`: the mean over every interval of every sample (`n_intervals`).
    Samples are taken in sorted id order (the sums are then reproducible to the bit).
    """
    out = {"label": AGGREGATION_LABEL}
    for name, key in (("stop_latency_s", "latency_stop_list"), ("response_latency_s", "latency_resp_list")):
        per, pooled, empty = [], [], 0
        for sid in sorted(per_sample):
            vals = [b - a for a, b in per_sample[sid].get(key, [])]
            if vals:
                per.append(_mean(vals))
                pooled.extend(vals)
            else:
                empty += 1
        out[name] = {"mean": _mean(per), "n_samples": len(per), "n_empty": empty,
                     "pooled_mean": _mean(pooled), "n_intervals": len(pooled)}
    return out
