"""The linearity check of tests/scaling.py fails on quadratic work (its retries cannot hide a
regression) and passes on linear work."""

from __future__ import annotations

import pytest

from tests.scaling import assert_linear

# run alone, after the parallel tests (make test): it times work at n and 4n
pytestmark = pytest.mark.serial


def _quadratic(xs: list[int]) -> int:
    # list.count per element: the shape of the duplicate-key check that tests/common/test_jsonio_linear.py guards
    return sum(xs.count(x) for x in xs)


def test_quadratic_work_fails_on_every_try():
    with pytest.raises(AssertionError, match="not linear on 2 tries"):
        assert_linear(_quadratic, lambda n: list(range(n)), 3_000, tries=2)


def test_linear_work_passes():
    assert_linear(lambda xs: sorted(set(xs)), lambda n: list(range(n)), 200_000)
