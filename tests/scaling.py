"""How a test shows that something takes linear time without timing it against the clock of a
busy machine: the time at n and at 4n, each the best of three runs, must grow by less than 8
(linear work grows by 4, quadratic by 16), and neither may pass a generous cap (a hang is still a
failure). Speed targets themselves are measured by the scripts under perf/."""

from __future__ import annotations

import gc
import time
from typing import Any, Callable

RATIO = 8.0


def best_of(fn: Callable[[Any], Any], arg: Any, runs: int = 3) -> float:
    """The best of `runs` times, the cyclic garbage collector paused (its passes over every live
    object make building many small objects look superlinear; the algorithm is what is tested)."""
    best = float("inf")
    for _ in range(runs):
        gc.collect()
        gc.disable()
        try:
            t0 = time.perf_counter()
            fn(arg)
            best = min(best, time.perf_counter() - t0)
        finally:
            gc.enable()
    return best


def assert_linear(fn: Callable[[Any], Any], make: Callable[[int], Any], n: int, cap_s: float = 60.0,
                  floor_s: float = 0.05, tries: int = 3) -> None:
    """fn(make(4n)) takes under RATIO times fn(make(n)) (times below floor_s count as floor_s, so
    timer noise on tiny runs decides nothing). A ratio past RATIO is measured again, up to `tries`
    times in all, before it fails: a busy machine (an image build beside the tests) can stall one
    measurement, while quadratic work is past RATIO on every try."""
    small, large = make(n), make(4 * n)
    seen = []
    for _ in range(tries):
        a, b = best_of(fn, small), best_of(fn, large, runs=2)
        assert b < cap_s, f"{b:.2f} s at 4n = {4 * n}: past the {cap_s} s cap"
        if b / max(a, floor_s) < RATIO:
            return
        seen.append(f"{a:.3f} s at n = {n}, {b:.3f} s at 4n")
    raise AssertionError(f"not linear on {tries} tries: " + "; ".join(seen))
