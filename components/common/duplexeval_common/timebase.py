"""Microsecond time base: every unified comparison is on integers of microseconds.

A time from a file is rounded to the microsecond from its shortest decimal form (what the
file says), half to even, so 6.32000000000005 and 6.32 are both 6320000 us.
"""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal

US = 1_000_000
INF = 2**62  # "never": a non-response or an unobserved stop, sorts after every time


def to_us(seconds: float) -> int:
    return int(Decimal(repr(float(seconds))).scaleb(6).to_integral_value(ROUND_HALF_EVEN))


def to_s(us: int) -> float:
    return us / US


def is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and x == x and abs(x) != float("inf")
