from fractions import Fraction

import numpy as np
import pytest

from duplexeval_common import stats
from duplexeval_common.timebase import INF, to_us


def test_microsecond_rounding_removes_float_noise():
    assert to_us(6.32000000000005) == to_us(6.32) == 6_320_000
    assert to_us(0.0000005) == 0 and to_us(0.0000015) == 2  # half to even on the decimal form
    assert to_us(3) == 3_000_000


def test_wilson_exact_at_zero_and_n():
    for n in (1, 2, 7, 119, 200):
        lo, hi = stats.wilson(0, n)
        assert lo == 0.0 and 0 < hi < 1
        lo, hi = stats.wilson(n, n)
        assert hi == 1.0 and 0 < lo < 1
    assert stats.wilson(0, 0) is None


def test_wilson_known_value():
    lo, hi = stats.wilson(5, 10)
    assert lo == pytest.approx(0.236593, abs=1e-6) and hi == pytest.approx(0.763407, abs=1e-6)


def test_rank_is_exact_ceil():
    assert stats.rank(Fraction(9, 10), 70) == 63  # 0.9 * 70 is 63.00000000000001 in floats
    assert stats.rank(Fraction(9, 10), 10) == 9
    assert stats.rank(Fraction(1, 2), 7) == 4
    assert stats.rank(Fraction(1, 2), 8) == 4
    assert stats.rank(Fraction(1, 40), 2000) == 50 and stats.rank(Fraction(39, 40), 2000) == 1950


def test_quantile_no_interpolation_and_not_reached():
    assert stats.quantile([4, 1, 3, 2], stats.MEDIAN) == 2
    assert stats.quantile([1, 2, INF], stats.MEDIAN) == 2
    assert stats.quantile([1, INF, INF], stats.MEDIAN) == INF  # falls on a non-response
    assert stats.quantile([5] * 9 + [INF], stats.P90) == 5
    assert stats.quantile([5] * 8 + [INF] * 2, stats.P90) == INF
    assert stats.quantile([], stats.MEDIAN) is None


def test_quantiles_and_rates_are_one_curve():
    rng = np.random.default_rng(3)
    for _ in range(200):
        n = int(rng.integers(1, 30))
        vals = [INF if rng.random() < 0.3 else int(rng.integers(0, 6)) * 500_000 for _ in range(n)]
        for q in (stats.MEDIAN, stats.P90, Fraction(1, 3)):
            Q = stats.quantile(vals, q)
            for k in (0, 500_000, 1_000_000, 2_000_000):
                F = Fraction(sum(v <= k for v in vals), n)
                assert (Q <= k) == (F >= q)


def test_bootstrap_is_deterministic_and_skips_empty_denominators():
    num, den = [1, 0, 3, 0], [2, 0, 4, 0]
    a = stats.bootstrap_ratio(num, den)
    assert a == stats.bootstrap_ratio(num, den)
    assert 0 <= a[0] <= a[1] <= 1
    assert stats.bootstrap_ratio([0, 0], [0, 0]) is None
    iv = stats.bootstrap_quantile([1, 2, 3, INF, INF])
    assert iv[1] == INF and iv[0] in (1, 2, 3)
    idx = stats.resample_indices(5)
    assert idx.shape == (2000, 5) and (idx == stats.resample_indices(5)).all()
