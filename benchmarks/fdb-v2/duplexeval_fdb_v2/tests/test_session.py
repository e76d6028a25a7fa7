"""session.py on intervals known by construction: which turns are answered, the latencies, the
overlap, talk-overs, censoring at the end of the recording, goals and an early end."""

from __future__ import annotations

import pytest

from duplexeval_fdb_v2.score.session import SessionError, session_metrics

from .conftest import examiner_doc, turn

GOALS = ["T1", "T2", "T3"]


def three_turns():
    return [turn(0, "opening", 0.5, 2.5, "T1"), turn(1, "follow_up", 10.0, 12.0, "T2"),
            turn(2, "scripted", 20.0, 22.0, "T3"), turn(3, "end", 30.0, 31.0)]


def test_answered_turns_latency_and_no_overlap():
    model = [(3.0, 6.0), (13.5, 15.0)]          # answers turn 0 after 0.5 s, turn 1 after 1.5 s; not turn 2
    m = session_metrics(examiner_doc(three_turns(), ["T1", "T2"]), model, 40.0, 5.0, GOALS)
    assert [r["answered"] for r in m["turns"]] == [True, True, False]
    assert m["latencies_s"] == [0.5, 1.5] and m["response_latency_s"] == pytest.approx(1.0)
    assert m["response_rate"] == pytest.approx(2 / 3)
    assert m["overlap_s"] == 0 and m["overlap_rate"] == 0
    assert m["model_talk_over"] == 0 and m["turns_completed"] == 4
    assert m["goals_reached_share"] == pytest.approx(2 / 3) and not m["examiner_ended_early"]


def test_speech_after_the_window_or_during_the_turn_does_not_answer():
    model = [(8.0, 9.0),                         # 5.5 s after turn 0: outside a 5 s window
             (11.0, 12.5)]                       # starts inside turn 1: a talk-over, not an answer
    m = session_metrics(examiner_doc(three_turns()), model, 40.0, 5.0, GOALS)
    assert m["answered"] == 0 and m["response_rate"] == 0 and m["response_latency_s"] is None
    assert m["model_talk_over"] == 1
    # overlap: 1 s of turn 1 ([11, 12]) over 2 + 2 + 2 + 1 = 7 s of examiner speech
    assert m["overlap_rate"] == pytest.approx(1 / 7)


def test_no_model_speech():
    m = session_metrics(examiner_doc(three_turns()), [], 40.0, 5.0, GOALS)
    assert m["response_rate"] == 0 and m["response_latency_s"] is None and m["latencies_s"] == []
    assert m["overlap_rate"] == 0


def test_model_speech_everywhere():
    m = session_metrics(examiner_doc(three_turns()), [(0.0, 40.0)], 40.0, 5.0, GOALS)
    assert m["overlap_rate"] == pytest.approx(1.0) and m["response_rate"] == 0


def test_the_next_turn_closes_the_window_and_the_end_of_the_recording_censors():
    turns = [turn(0, "opening", 0.5, 2.5, "T1"), turn(1, "follow_up", 3.5, 5.0, "T2"),
             turn(2, "scripted", 8.0, 9.0, "T3")]
    model = [(4.0, 4.5)]                         # after turn 1 started: not an answer to turn 0
    m = session_metrics(examiner_doc(turns, reason="duration"), model, 11.0, 5.0, GOALS)
    assert [r["answered"] for r in m["turns"]] == [False, False, False]
    assert [r["censored"] for r in m["turns"]] == [False, False, True]   # turn 2's window runs past 11 s
    assert m["answerable"] == 2 and m["response_rate"] == 0
    assert m["model_talk_over"] == 1


def test_ended_early_and_examiner_counts():
    turns = [turn(0, "opening", 0.5, 2.5, "T1"), turn(1, "follow_up", 5.0, 6.0, "T2", yielded=True),
             turn(2, "end", 9.0, 10.0)]
    m = session_metrics(examiner_doc(turns, ["T1"], talked_over=1), [], 40.0, 5.0, GOALS)
    assert m["examiner_ended_early"] and m["examiner_yielded"] == 1 and m["examiner_talk_over"] == 1
    assert m["goals_reached"] == 1 and m["goals"] == 3
    # the session ran out before T3: not an early end of the examiner's
    m = session_metrics(examiner_doc(turns[:2], reason="duration"), [], 40.0, 5.0, GOALS)
    assert not m["examiner_ended_early"]


@pytest.mark.parametrize("bad, message", [
    ({"format": "x"}, "format must be"),
    ({"turns": [turn(0, "opening", 3.0, 2.0)]}, "reversed"),
    ({"turns": [turn(0, "opening", 1.0, 50.0)]}, "outside the session"),
    ({"turns": [turn(0, "chat", 1.0, 2.0)]}, "kind must be"),
])
def test_bad_examiner_json(bad, message):
    doc = {**examiner_doc(three_turns()), **bad}
    with pytest.raises(SessionError, match=message):
        session_metrics(doc, [], 40.0, 5.0, GOALS)
