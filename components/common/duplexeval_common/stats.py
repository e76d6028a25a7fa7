"""Wilson intervals, the ceil(qN) quantile rule, the cluster bootstrap (2000 resamples, seed 0),
the mean paired difference with its bootstrap interval and the exact McNemar test of paired
yes/no outcomes."""

from __future__ import annotations

import math
import numbers
from fractions import Fraction

import numpy as np

from .timebase import INF

Z95 = 1.959963984540054  # standard normal 0.975 quantile
RESAMPLES = 2000
SEED = 0
MEDIAN = Fraction(1, 2)
P90 = Fraction(9, 10)
LOWER = Fraction(1, 40)   # 0.025
UPPER = Fraction(39, 40)  # 0.975


def wilson(k: int, n: int, z: float = Z95) -> list[float] | None:
    """95% Wilson score interval; exactly 0 at k = 0 and exactly 1 at k = n; None when n = 0."""
    if n <= 0:
        return None
    p = k / n
    z2 = z * z
    denom = 1 + z2 / n
    center = (p + z2 / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    lo = 0.0 if k == 0 else max(0.0, center - half)
    hi = 1.0 if k == n else min(1.0, center + half)
    return [lo, hi]


def rank(q: Fraction, n: int) -> int:
    """ceil(q n) in exact arithmetic, at least 1: the 1-based rank of the q-quantile."""
    return max(1, -((-q.numerator * n) // q.denominator))


def quantile(values, q: Fraction) -> int | None:
    """Q(q) = inf{t : F(t) >= q}: the ceil(qN)-th smallest value, no interpolation.

    Values are integers (microseconds) with INF for "never"; the result is INF when the
    quantile falls on one of those, None when there are no values.
    """
    vals = sorted(values)
    if not vals:
        return None
    return vals[rank(q, len(vals)) - 1]


def resample_indices(n: int, resamples: int = RESAMPLES, seed: int = SEED) -> np.ndarray:
    """Indices of whole samples drawn with replacement: one row per resample."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, n, size=(resamples, n))


def _endpoints(stat: np.ndarray) -> list:
    """Percentile interval endpoints of bootstrap statistics by the same ceil(qN) rule."""
    stat = np.sort(stat)
    m = len(stat)
    return [stat[rank(LOWER, m) - 1].item(), stat[rank(UPPER, m) - 1].item()]


def bootstrap_quantile(values_us: list[int], q: Fraction = MEDIAN,
                       idx: np.ndarray | None = None) -> list[int] | None:
    """Percentile interval of the resampled q-quantile; endpoints may be INF (not reached)."""
    n = len(values_us)
    if n == 0:
        return None
    if idx is None:
        idx = resample_indices(n)
    arr = np.asarray(values_us, dtype=np.int64)[idx]
    k = rank(q, n) - 1
    stat = np.partition(arr, k, axis=1)[:, k]
    return [int(x) for x in _endpoints(stat)]


def bootstrap_ratio(num, den, idx: np.ndarray | None = None) -> list[float] | None:
    """Percentile interval of sum(num)/sum(den) over resampled samples.

    A resample whose denominator is 0 has no ratio and is skipped. Integer inputs are
    summed exactly.
    """
    num = np.asarray(num)
    den = np.asarray(den)
    n = len(num)
    if n == 0:
        return None
    if idx is None:
        idx = resample_indices(n)
    d = den[idx].sum(axis=1)
    keep = d > 0
    if not keep.any():
        return None
    r = num[idx].sum(axis=1)[keep] / d[keep]
    return [float(x) for x in _endpoints(r)]


def bootstrap_diff(stat_a, stat_b) -> list[float] | None:
    """Interval of paired differences b - a over resamples where both statistics exist."""
    a = np.asarray(stat_a, dtype=float)
    b = np.asarray(stat_b, dtype=float)
    ok = np.isfinite(a) & np.isfinite(b)
    if not ok.any():
        return None
    return [float(x) for x in _endpoints(b[ok] - a[ok])]


def paired_difference(diffs, idx: np.ndarray | None = None) -> dict:
    """The mean of per-sample paired differences (e.g. a run minus its counterfactual twin) and its
    percentile bootstrap interval over resampled samples: {"n", "mean", "interval"} (None values
    when there are no pairs)."""
    d = np.asarray(list(diffs), dtype=float)
    n = len(d)
    if n == 0:
        return {"n": 0, "mean": None, "interval": None}
    if idx is None:
        idx = resample_indices(n)
    return {"n": n, "mean": float(d.mean()), "interval": [float(x) for x in _endpoints(d[idx].mean(axis=1))]}


def mcnemar_exact(b: int, c: int) -> float:
    """Exact two-sided McNemar p-value of b and c discordant pairs (b: yes in A and no in B; c: no
    in A and yes in B): under the null each discordant pair is either kind with probability 1/2,
    so p = 2 P(X <= min(b, c)) for X ~ Binomial(b + c, 1/2), capped at 1; 1 when b + c = 0.

    Summed in integers and divided once (Fraction), so the value is the exact one rounded once
    to the nearest float."""
    if any(isinstance(x, bool) or not isinstance(x, numbers.Integral) or x < 0 for x in (b, c)):
        raise ValueError(f"discordant counts must be non-negative integers, got b={b!r}, c={c!r}")
    b, c = int(b), int(c)
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1))
    return float(min(Fraction(1), Fraction(2 * tail, 2 ** n)))


def is_inf(us: int) -> bool:
    return us >= INF
