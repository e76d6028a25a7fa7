"""Unified user interruption (sglang-omni unified duplex metrics): outcomes from VAD at S and R and the words after R.

segments: (start_us, end_us, runs_to_end) on the input timeline, from Silero VAD on
output.wav with threshold 0.5, minimum speech 250 ms, minimum silence 100 ms, no padding.
"""

from __future__ import annotations

from .rows import base_row
from .tree import Sample


def row(s: Sample, segments: list[tuple[int, int, bool]] | None) -> dict:
    r = base_row(s)
    if not s.eligible:
        return r
    S, R = s.S_us, s.R_us
    covering = next(((a, b, o) for a, b, o in segments if a <= S < b), None)
    at_onset = covering is not None
    at_end = any(a < R < b for a, b, _ in segments)
    starts = [a for a, _ in s.words]
    latency = None
    if not at_onset:
        outcome = "not_exercised"
    elif at_end:
        outcome = "speaking_at_end"
    elif starts:
        outcome = "response"
        latency = (min(starts) - R) / 1e6
    else:
        outcome = "no_response"
    stop = None
    if covering is not None and not covering[2]:
        stop = (covering[1] - S) / 1e6
    r.update({
        "S_s": S / 1e6,
        "R_s": R / 1e6,
        "interruption_s": (R - S) / 1e6,
        "outcome": outcome,
        "exercised": at_onset,
        "speech_at_onset": at_onset,
        "speech_at_end": at_end,
        "speech_before_onset": any(a < S for a, _, _ in segments),
        "stop_s": stop,
        "stop_observed": None if covering is None else not covering[2],
        "speech_in_interruption_s": sum(max(0, min(b, R) - max(a, S)) for a, b, _ in segments) / 1e6,
        "restarts": sum(1 for a, _, _ in segments if S < a < R),
        "latency_s": latency,
        "observable_s": (s.T_us - R) / 1e6,
        "rating": s.rating,
        "segments": [[a / 1e6, b / 1e6] for a, b, _ in segments],
    })
    return r
