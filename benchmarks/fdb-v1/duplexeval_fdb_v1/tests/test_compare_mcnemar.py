"""The exact McNemar test of compare(): p-values known by hand, scipy's binomtest where installed, and
the discordant counts over the paired samples of two scored folders."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import pytest

from duplexeval_fdb_v1.score import DEFINITIONS
from duplexeval_fdb_v1.score.compare import compare, format_p, render
from duplexeval_common.stats import mcnemar_exact


@pytest.mark.parametrize("b, c, p", [
    (0, 5, 0.0625),           # 2 / 2^5
    (5, 0, 0.0625),
    (1, 9, 0.021484375),      # 2 (1 + 10) / 2^10
    (9, 1, 0.021484375),
    (0, 1, 1.0),              # 2 / 2 = 1
    (0, 0, 1.0),              # no discordant pair
    (3, 3, 1.0),
    (17, 17, 1.0),
    (4, 5, 1.0),              # 2 P(X <= 4) > 1: capped
    (2, 8, 0.109375),         # 2 (1 + 10 + 45) / 1024
    (0, 20, 2 / 2 ** 20),
])
def test_p_values_known_by_hand(b, c, p):
    assert mcnemar_exact(b, c) == p


def test_p_is_the_exact_value_rounded_once():
    # large counts: the binomial tail summed in integers, not in floats that underflow or drift
    b, c = 40, 160
    n = b + c
    exact = Fraction(2 * sum(math.comb(n, i) for i in range(b + 1)), 2 ** n)
    assert mcnemar_exact(b, c) == float(exact)
    assert 0 < mcnemar_exact(b, c) < 1e-17
    assert mcnemar_exact(0, 2000) == float(Fraction(2, 2 ** 2000))  # below float range: 0.0, not an error


@pytest.mark.parametrize("b, c", [(-1, 2), (1.0, 2), (True, 3), (2, "3"), (None, 0)])
def test_bad_counts_are_refused(b, c):
    with pytest.raises(ValueError, match="non-negative integers"):
        mcnemar_exact(b, c)


def test_numpy_integers_are_counts():
    np = pytest.importorskip("numpy")
    assert mcnemar_exact(np.int64(1), np.int32(9)) == 0.021484375


def test_agrees_with_scipy_binomtest():
    stats = pytest.importorskip("scipy.stats")
    for n in range(1, 41):
        for b in range(n + 1):
            want = min(1.0, stats.binomtest(b, n, 0.5, alternative="two-sided").pvalue)
            assert math.isclose(mcnemar_exact(b, n - b), want, rel_tol=1e-12, abs_tol=0), (b, n - b)


def test_format_p():
    assert format_p(1.0) == "1" and format_p(0.0625) == "0.0625" and format_p(0.021484375) == "0.02148"
    assert format_p(2 / 2 ** 20) == "1.907e-06"


# ---- in compare() ----------------------------------------------------------------------------

def _turn(sid: str, outcome: str, latency: float | None = None, eligible: bool = True) -> dict:
    return {"sample_id": f"synthetic_turn_taking/{sid}", "subset": "synthetic_turn_taking",
            "task": "smooth_turn_taking", "eligible": eligible, "reasons": [] if eligible else ["x"],
            "outcome": outcome, "latency_s": latency}


def _folder(d: Path, rows: list[dict]) -> Path:
    d.mkdir(parents=True)
    (d / "unified-samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    rev = {"official_revision": {"name": "d7336bd"}}
    (d / "unified.json").write_text(json.dumps({"definitions": DEFINITIONS, **rev}))
    (d / "metrics.json").write_text(json.dumps({"subsets": {}, **rev}))
    return d


def test_discordant_counts_over_the_paired_samples(tmp_path):
    # A responds within 1 s on s0..s5, B on s4..s9; s10 is ineligible in B (not paired), s11 only in A
    a_rows = [_turn(f"s{i}", "response", 0.5) if i < 6 else _turn(f"s{i}", "no_response") for i in range(10)]
    b_rows = [_turn(f"s{i}", "response", 0.5) if i >= 4 else _turn(f"s{i}", "no_response") for i in range(10)]
    a_rows += [_turn("s10", "response", 0.5), _turn("s11", "response", 0.5)]
    b_rows += [_turn("s10", "response", 0.5, eligible=False)]
    a = _folder(tmp_path / "a", a_rows)
    b = _folder(tmp_path / "b", b_rows)
    res = compare(a, b)
    s = res["subsets"]["synthetic_turn_taking"]
    assert s["pairs"]["eligible_in_both"] == 10 and s["pairs"]["eligible_only_a"] == 1
    assert s["pairs"]["only_in_a"] == 1
    m = s["metrics"]
    # response within 1 s: yes in A and no in B on s0..s3 (b = 4); no in A, yes in B on s6..s9 (c = 4)
    assert m["response_rate_1s"]["mcnemar"] == {"b": 4, "c": 4, "p": 1.0}
    assert m["no_response_rate"]["mcnemar"] == {"b": 4, "c": 4, "p": 1.0}
    assert m["early_start_rate"]["mcnemar"] == {"b": 0, "c": 0, "p": 1.0}
    assert "mcnemar" not in m["response_latency_s"]  # not a yes/no outcome
    assert s["order"] == ["early_start_rate", "response_rate_1s", "response_rate_2s", "response_rate_5s",
                          "no_response_rate", "response_latency_s"]
    # the bootstrap interval is still there, as before
    assert m["response_rate_1s"]["diff"] == 0.0 and m["response_rate_1s"]["interval"] is not None

    # B loses five responses A had and gains one: b = 5, c = 1, p = 2 (1 + 6) / 64
    b2_rows = [_turn(f"s{i}", "response", 0.5) if i in (5, 6) else _turn(f"s{i}", "no_response")
               for i in range(10)]
    res = compare(a, _folder(tmp_path / "b2", b2_rows))
    mc = res["subsets"]["synthetic_turn_taking"]["metrics"]["response_rate_1s"]["mcnemar"]
    assert mc == {"b": 5, "c": 1, "p": 14 / 64}
    text = render(res)
    line = next(x for x in text.splitlines() if x.split()[:1] == ["response_rate_1s"])
    assert line.endswith("McNemar b 5 c 1 p 0.2188")
    latency = next(x for x in text.splitlines() if x.split()[:1] == ["response_latency_s"])
    assert "McNemar" not in latency


def test_a_folder_compared_with_itself_has_no_discordant_pair(tmp_path):
    rows = [_turn(f"s{i}", ["response", "response", "no_response", "early_start"][i % 4], 0.4 + i / 10)
            for i in range(9)]
    a = _folder(tmp_path / "a", rows)
    res = compare(a, a)
    for m in res["subsets"]["synthetic_turn_taking"]["metrics"].values():
        assert m["diff"] == 0
        if "mcnemar" in m:
            assert m["mcnemar"] == {"b": 0, "c": 0, "p": 1.0}
