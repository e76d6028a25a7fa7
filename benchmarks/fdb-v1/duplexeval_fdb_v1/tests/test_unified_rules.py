"""Unified per-sample rules at their boundaries (seed 002)."""

from duplexeval_fdb_v1.score import unified_interrupt, unified_pause, unified_turns
from duplexeval_fdb_v1.score.unified_pause import covered_us

from .helpers import mk, us


def pause(words, pauses=((3.0, 4.0),), T=10.0):
    return unified_pause.row(mk("pause_handling", T=T, words=words, pauses=pauses))


def test_word_exactly_at_pause_start_intrudes_and_is_inside():
    r = pause([(3.0, 3.2)])
    assert r["pause_intrusion"] and r["inside_pause_onset"] and not r["pre_pause_speech"]
    assert r["intrusion_words"] == 1 and r["pauses_intruded"] == 1


def test_word_at_pause_end_is_intrusion_but_not_inside():
    r = pause([(4.0, 4.2)])
    assert r["pause_intrusion"] and not r["inside_pause_onset"]


def test_float_noise_at_the_boundary():
    # annotation 6.32000000000005 against a word at 6.32: the same microsecond
    r = pause([(6.32, 6.5)], pauses=((6.32000000000005, 7.0),))
    assert r["pause_intrusion"] and r["inside_pause_onset"] and not r["pre_pause_speech"]
    r = pause([(6.32000000000005, 6.5)], pauses=((6.32, 7.0),))
    assert r["pause_intrusion"] and r["inside_pause_onset"]


def test_pre_pause_speech_and_carry_in():
    r = pause([(2.0, 3.5)])
    assert r["pre_pause_speech"] and r["carry_in"] and not r["pause_intrusion"]
    assert r["covered_s"] == 0.5
    r = pause([(2.0, 3.0)])  # ends exactly at the pause start: no carry-in, no coverage
    assert r["pre_pause_speech"] and not r["carry_in"] and r["covered_s"] == 0.0


def test_zero_length_and_null_end_words():
    r = pause([(3.5, None), (3.6, 3.6)])
    assert r["pause_intrusion"] and r["inside_pause_onset"] and r["covered_s"] == 0.0
    assert r["intrusion_words"] == 2


def test_owned_intervals():
    pauses = ((2.0, 3.0), (5.0, 6.0))
    r = pause([(5.0, 5.1)], pauses=pauses)          # at the next pause start: owned by pause 2
    assert r["pauses_intruded"] == 1 and r["n_pauses"] == 2
    r = pause([(4.0, 4.1), (9.0, 9.1)], pauses=pauses)  # after pause 1 ends, and late in pause 2's
    assert r["pauses_intruded"] == 2 and not r["inside_pause_onset"]
    r = pause([(10.0, 10.0)], pauses=pauses)        # a word starting exactly at T
    assert r["pauses_intruded"] == 1 and r["pause_intrusion"]


def test_covered_union_of_overlapping_words():
    assert covered_us([(us(0.5), us(3.5)), (us(3.2), us(3.8))], us(3.0), us(4.0)) == us(0.8)


def test_turns_outcomes_at_E():
    at_E = unified_turns.row(mk("smooth_turn_taking", words=[(2.0, 2.4)], E=2.0))
    assert at_E["outcome"] == "response" and at_E["latency_s"] == 0.0
    early = unified_turns.row(mk("smooth_turn_taking", words=[(1.999999, 2.4), (2.5, 3.0)], E=2.0))
    assert early["outcome"] == "early_start" and early["latency_s"] is None
    noise = unified_turns.row(mk("smooth_turn_taking", words=[(1.9999999, 2.4)], E=2.0))
    assert noise["outcome"] == "response"  # below a microsecond: the same time as E
    none = unified_turns.row(mk("smooth_turn_taking", words=[], E=2.0, T=7.0))
    assert none["outcome"] == "no_response" and none["observable_s"] == 5.0


def irow(segments, words=(), S=10.0, R=12.0, T=30.0):
    segs = [(us(a), us(b), o) for a, b, o in segments]
    return unified_interrupt.row(mk("user_interruption", T=T, words=words, S=S, R=R), segs)


def test_segment_starting_exactly_at_S_is_speech_at_onset():
    r = irow([(10.0, 10.8, False)], words=[(13.0, 14.0)])
    assert r["speech_at_onset"] and r["exercised"] and r["restarts"] == 0
    assert r["outcome"] == "response" and r["latency_s"] == 1.0
    assert r["stop_s"] == 0.8 and r["speech_in_interruption_s"] == 0.8


def test_segment_ending_exactly_at_S_is_not_exercised():
    r = irow([(8.0, 10.0, False), (11.0, 13.0, False)], words=[(12.0, 13.0)])
    assert not r["speech_at_onset"] and r["outcome"] == "not_exercised"
    assert r["speech_at_end"] and r["speech_before_onset"] and r["stop_s"] is None


def test_reply_exactly_at_R_is_not_speech_at_end():
    r = irow([(9.0, 10.5, False), (12.0, 14.0, False)], words=[(12.0, 13.0)])
    assert not r["speech_at_end"] and r["outcome"] == "response" and r["latency_s"] == 0.0
    assert r["restarts"] == 0


def test_speaking_at_end_restart_and_no_response():
    r = irow([(9.0, 10.5, False), (11.0, 13.0, False)], words=[(12.0, 13.0)])
    assert r["outcome"] == "speaking_at_end" and r["restarts"] == 1 and r["latency_s"] is None
    assert r["speech_in_interruption_s"] == 1.5
    r = irow([(9.0, 11.0, False)])
    assert r["outcome"] == "no_response" and r["stop_s"] == 1.0


def test_segment_running_to_T_has_no_observed_stop():
    r = irow([(9.0, 30.0, True)], words=[(12.5, 13.0)])
    assert r["outcome"] == "speaking_at_end" and r["stop_s"] is None and r["stop_observed"] is False
