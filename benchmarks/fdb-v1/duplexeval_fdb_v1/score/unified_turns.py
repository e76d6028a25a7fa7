"""Unified smooth turn-taking (sglang-omni unified duplex metrics): early_start, response or no_response around E."""

from __future__ import annotations

from .rows import base_row
from .tree import Sample


def row(s: Sample) -> dict:
    r = base_row(s)
    if not s.eligible:
        return r
    starts = [a for a, _ in s.words]
    latency = None
    if not starts:
        outcome = "no_response"
    elif min(starts) < s.E_us:
        outcome = "early_start"
    else:
        outcome = "response"
        latency = (min(starts) - s.E_us) / 1e6
    r.update({"E_s": s.E_us / 1e6, "outcome": outcome, "latency_s": latency,
              "observable_s": (s.T_us - s.E_us) / 1e6})
    return r
