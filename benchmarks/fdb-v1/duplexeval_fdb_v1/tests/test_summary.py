"""Subset metrics from rows: denominators, bounds, quantiles."""

from duplexeval_fdb_v1.score import summary, unified_interrupt, unified_turns

from .helpers import mk, us


def turn_rows():
    rows = [unified_turns.row(mk("smooth_turn_taking", words=[(2.5, 3)], E=2.0)),      # 0.5 s
            unified_turns.row(mk("smooth_turn_taking", words=[(3.5, 4)], E=2.0)),      # 1.5 s
            unified_turns.row(mk("smooth_turn_taking", words=[(1.0, 4)], E=2.0)),      # early
            unified_turns.row(mk("smooth_turn_taking", words=[], E=2.0)),              # none
            unified_turns.row(mk("smooth_turn_taking", reasons=["missing:output.wav"]))]
    return rows


def test_share_bounds_count_the_ineligible_sample():
    m = summary.unified_metrics("smooth_turn_taking", turn_rows())
    r1 = m["response_rate_1s"]
    assert (r1["count"], r1["n"], r1["value"]) == (1, 4, 0.25)
    assert r1["selected_bounds"] == [1 / 5, 2 / 5]
    assert m["response_rate_2s"]["count"] == 2
    assert m["early_start_rate"]["selected_bounds"] == [0.2, 0.4]
    c = summary.counts("smooth_turn_taking", turn_rows())
    assert c["ineligible"] == 1 and c["ineligible_reasons"] == {"missing:output.wav": 1}
    assert c["outcomes"] == {"early_start": 1, "response": 2, "no_response": 1}


def test_latency_median_falls_on_a_non_response():
    m = summary.unified_metrics("smooth_turn_taking", turn_rows())["response_latency_s"]
    # N = 4: the median is the 2nd smallest (1.5 s), p90 the 4th: a non-response
    assert m["value"] == 1.5 and m["status"] == "ok"
    assert m["p90"] is None and m["p90_status"] == "not_reached"
    assert m["count"] == 2 and m["n"] == 4
    rows = turn_rows()[2:]
    m = summary.unified_metrics("smooth_turn_taking", rows)["response_latency_s"]
    assert m["value"] is None and m["status"] == "not_reached" and m["interval"] == [None, None]


def test_interruption_not_exercised_is_unknown_in_the_bounds():
    S, R = 10.0, 12.0
    rows = [
        unified_interrupt.row(mk("user_interruption", T=30, words=[(12.5, 13)], S=S, R=R),
                              [(us(9), us(11), False)]),                       # response 0.5 s
        unified_interrupt.row(mk("user_interruption", T=30, words=[], S=S, R=R), []),  # not exercised
        unified_interrupt.row(mk("user_interruption", T=30, reasons=["failed:duplex-runner"]), None),
    ]
    m = summary.unified_metrics("user_interruption", rows)
    ex = m["exercised_rate"]
    assert (ex["count"], ex["n"]) == (1, 2) and ex["selected_bounds"] == [1 / 3, 2 / 3]
    r = m["response_rate_1s"]
    assert (r["count"], r["n"], r["value"]) == (1, 1, 1.0) and r["interval"][1] == 1.0
    assert r["selected_bounds"] == [1 / 3, 1.0]
    assert m["speech_s_per_interruption_s"]["value"] == 0.5
    assert summary.min_observable_s(rows) == 18.0
