"""Unified pause handling (sglang-omni unified duplex metrics): onsets at or after the first pause start intrude.

Each pause owns the time from its start to the next pause start; the last owns it to T.
Pause seconds covered by word spans are measured on the union of the spans.
"""

from __future__ import annotations

from .rows import base_row
from .tree import Sample


def covered_us(words: list[tuple[int, int]], a: int, b: int) -> int:
    """Microseconds of [a, b] covered by the union of the word spans."""
    total, reach = 0, a
    for s, e in sorted(words):
        lo, hi = max(s, reach), min(e, b)
        if hi > lo:
            total += hi - lo
            reach = hi
        if reach >= b:
            break
    return total


def owned_intervals(pauses: list[tuple[int, int]], T: int) -> list[tuple[int, int, bool]]:
    """(start, end, end_inclusive): pause i owns [a_i, a_i+1), the last owns [a_last, T]."""
    out = []
    for i, (a, _) in enumerate(pauses):
        if i + 1 < len(pauses):
            out.append((a, pauses[i + 1][0], False))
        else:
            out.append((a, T, True))
    return out


def row(s: Sample) -> dict:
    r = base_row(s)
    if not s.eligible:
        return r
    starts = [a for a, _ in s.words]
    first = s.pauses[0][0]
    intruded = 0
    for lo, hi, incl in owned_intervals(s.pauses, s.T_us):
        if any(lo <= w < hi or (incl and w == hi) for w in starts):
            intruded += 1
    pause_us = sum(b - a for a, b in s.pauses)
    cov = sum(covered_us(s.words, a, b) for a, b in s.pauses)
    r.update({
        "first_pause_s": first / 1e6,
        "n_pauses": len(s.pauses),
        "pauses_intruded": intruded,
        "pause_s": pause_us / 1e6,
        "covered_s": cov / 1e6,
        "intrusion_words": sum(1 for w in starts if w >= first),
        "pause_intrusion": any(w >= first for w in starts),
        "inside_pause_onset": any(a <= w < b for w in starts for a, b in s.pauses),
        "pre_pause_speech": any(w < first for w in starts),
        "carry_in": any(a < first < b for a, b in s.words),
        "any_speech": bool(starts),
    })
    return r
