"""MTR success rules at their boundaries, under the paper's definitions and the released code's."""

from __future__ import annotations

import pytest

from duplexeval_mtr.score import rules
from duplexeval_mtr.score.rules import seg

SMOOTH = {"user_start": 1.0, "user_end": 5.0, "model_start": 5.0, "model_end": 12.0}
INTER = {"interruption_start": 10.0, "interruption_end": 14.0, "model_start": 14.0, "model_end": 20.0}
PAUSE = {"user_start": 1.0, "user_end": 8.0, "pause_start": 3.0, "pause_end": 5.0,
         "model_start": 8.0, "model_end": 14.0}
BG = {"user_start": 1.0, "user_end": 5.0, "model_start": 5.0, "model_end": 15.0,
      "background_start": 8.0, "background_end": 10.0}


def words(start, n, dur=0.3, gap=0.1):
    out, t = [], start
    for _ in range(n):
        out.append((round(t, 3), round(t + dur, 3)))
        t += dur + gap
    return out


def reply(start=5.5, n=10):
    w = words(start, n)
    return seg(start, w[-1][1], " ".join(["word"] * n), w)


def both(segs, feats, ts):
    r = rules.score_round(segs, feats, ts)
    return r["paper"]["success"], r["code"]["success"]


# -- backchannel: under 1 s AND fewer than 2 words (paper); speak(): >= 1 s or > 3 words (code)

@pytest.mark.parametrize("end,n_words,paper_bc", [
    (2.99, 1, True),    # 0.99 s, 1 word: a backchannel
    (3.00, 1, False),   # 1.00 s: not (duration)
    (2.50, 2, False),   # 0.5 s but 2 words: not (words)
    (2.50, 1, True),
])
def test_paper_backchannel_boundaries(end, n_words, paper_bc):
    ws = [(2.0, end)] if n_words == 1 else [(2.0, 2.2), (2.3, end)]
    s = seg(2.0, end, "x", ws)
    assert rules.is_backchannel(s) is paper_bc
    assert rules.takeover([s], 1.0, 5.0) == (0 if paper_bc else 1)


@pytest.mark.parametrize("end,n_words,paper_ok,code_ok", [
    (2.99, 1, 1, 1),   # a 0.99 s word during the user's turn: both allow it
    (3.00, 1, 0, 0),   # 1.00 s: both count it as speech
    (2.50, 2, 0, 1),   # two words in 0.5 s: paper takeover (2 words), code not (<= 3 words, < 1 s)
    (3.20, 4, 0, 0),   # four short words: code's > 3 words
    (2.90, 3, 0, 1),   # three words in 0.9 s: paper takeover, code not
])
def test_smooth_during_user_turn(end, n_words, paper_ok, code_ok):
    ws = [(2.0, end)] if n_words == 1 else [(round(2.0 + i * (end - 2.0) / n_words, 3),
                                             round(2.0 + (i + 1) * (end - 2.0) / n_words - 0.01, 3))
                                            for i in range(n_words)]
    if n_words == 1:
        ws = [(2.0, end)]
    s = seg(2.0, end, " ".join(["w"] * n_words), ws)
    assert both([s, reply()], ("S",), SMOOTH) == (paper_ok, code_ok)


def test_smooth_needs_a_reply_after_the_user_turn():
    assert both([], ("S",), SMOOTH) == (0, 0)
    # a 0.9 s one-word reply: a backchannel for the paper, < 1 s and 1 word for the code
    assert both([seg(6.0, 6.9, "sure", [(6.0, 6.9)])], ("S",), SMOOTH) == (0, 0)
    # a 1.00 s one-word reply: a takeover for both
    assert both([seg(6.0, 7.0, "sure", [(6.0, 7.0)])], ("S",), SMOOTH) == (1, 1)


def test_code_speak_is_per_segment_not_summed():
    two = [seg(1.5, 2.1, "a", [(1.5, 2.1)]), seg(3.0, 3.6, "b", [(3.0, 3.6)])]
    assert rules.code_speak(two, 1.0, 5.0) == 0          # 0.6 s + 0.6 s, each under 1 s
    assert rules.code_speak([seg(1.5, 3.6, "a b", [(1.5, 2.1), (3.0, 3.6)])], 1.0, 5.0) == 1


def test_code_speak_counts_only_words_fully_inside():
    assert rules.code_speak([seg(4.5, 6.0, "a", [(4.5, 5.5)])], 1.0, 5.0) == 0
    assert rules.code_speak([seg(4.0, 5.0, "a", [(4.0, 5.0)])], 1.0, 5.0) == 1
    # the paper counts the overlapping segment itself (1.5 s: not a backchannel)
    assert rules.takeover([seg(4.5, 6.0, "a", [(4.5, 5.5)])], 1.0, 5.0) == 1


def test_code_reads_0_as_missing():
    ts = {**SMOOTH, "model_start": 0.0}
    assert rules.code_round([reply()], ("S",), ts) == {"success": 0, "latency_s": 0, "backchannel_freq": 0}
    assert rules.paper_round([reply()], ("S",), ts)["success"] == 1


# -- interruption: the paper's window starts tau = 2 s after the cut-in; the code has no tau

def inter_case(extra):
    return [seg(6.0, 10.0, "w", words(6.0, 10)), *extra, seg(14.6, 18.6, "w", words(14.6, 10))]


@pytest.mark.parametrize("s,e,paper_ok,code_ok", [
    (10.5, 12.00, 1, 0),   # ends exactly at interruption_start + tau: paper window untouched
    (10.5, 12.01, 0, 0),   # 0.01 s into the paper window, 1.51 s of words
    (12.5, 13.80, 0, 0),   # after tau: both fail
    (10.2, 11.10, 1, 1),   # 0.9 s one word inside tau: neither counts it
])
def test_interruption_tau_edge(s, e, paper_ok, code_ok):
    extra = [seg(s, e, "x", [(s, e)])]
    assert both(inter_case(extra), ("I",), INTER) == (paper_ok, code_ok)


def test_interruption_needs_a_reply():
    assert both([seg(6.0, 10.0, "w", words(6.0, 10))], ("I",), INTER) == (0, 0)
    assert rules.paper_interruption([seg(6.0, 10.0, "w", words(6.0, 10))], INTER, tau=0.0) == 0


def test_interruption_tau_parameter():
    segs = inter_case([seg(10.5, 12.0, "x", [(10.5, 12.0)])])
    assert rules.paper_interruption(segs, INTER) == 1
    assert rules.paper_interruption(segs, INTER, tau=0.0) == 0


# -- pause: the paper's pause window; the code's [pause_start, pause_end + 1.0]

def test_pause_windows():
    after = seg(8.4, 12.4, "w", words(8.4, 10))
    assert both([after], ("P",), PAUSE) == (1, 1)
    talk = seg(3.5, 5.0, "w", words(3.5, 4))             # 4 words, 1.2 s, inside the pause
    assert both([talk, after], ("P",), PAUSE) == (0, 0)
    tail = seg(5.1, 5.9, "so okay now then", [(5.1, 5.3), (5.3, 5.5), (5.5, 5.7), (5.7, 5.9)])
    # four words after the pause, inside the code's +1 s tail
    assert both([tail, after], ("P",), PAUSE) == (1, 0)
    edge = seg(5.0, 6.0, "okay", [(5.0, 6.0)])           # starts exactly at pause_end
    assert both([edge, after], ("P",), PAUSE) == (1, 0)
    edge2 = seg(5.0, 6.01, "okay", [(5.0, 6.01)])        # ends 0.01 s after the code's window
    assert both([edge2, after], ("P",), PAUSE) == (1, 1)
    mm = seg(3.5, 4.0, "mm", [(3.5, 4.0)])               # a backchannel during the pause
    assert both([mm, after], ("P",), PAUSE) == (1, 1)


def test_pause_without_pause_times_uses_user_turn():
    ts = {k: v for k, v in PAUSE.items() if not k.startswith("pause")}
    talk = seg(6.0, 7.5, "w", words(6.0, 4))
    assert both([talk], ("P",), ts) == (0, 0)
    assert both([talk], ("P",), {**ts, "pause_start": 0.0, "pause_end": 0.0}) == (0, 0)
    assert rules.pause_window({**ts, "pause_start": 0.0, "pause_end": 0.0}) == (1.0, 8.0)


# -- background: the model keeps talking around it

@pytest.mark.parametrize("segs,paper_ok,code_ok", [
    ([seg(5.4, 12.0, "w", words(5.4, 17))], 1, 1),                                  # fully inside
    ([seg(5.4, 9.8, "w", words(5.4, 11))], 0, 0),                                   # ends inside it
    ([seg(8.0, 12.0, "w", words(8.0, 10))], 1, 0),     # starts at t^b_s; code: 8.3 s falls between words
    ([seg(8.2, 12.0, "w", words(8.2, 10))], 0, 1),     # paper: starts after t^b_s; code: +0.3 s
    ([seg(5.4, 8.5, "w", words(5.4, 8)), seg(11.0, 13.0, "w", words(11.0, 5))], 1, 0),  # paused across it
    ([seg(10.5, 14.0, "w", words(10.5, 9))], 0, 0),                                 # fully after it
    ([], 0, 0),
])
def test_background(segs, paper_ok, code_ok):
    assert both(segs, ("B",), BG) == (paper_ok, code_ok)


def test_background_code_word_gap_and_tolerance():
    gap20 = [seg(5.0, 12.0, "a b", [(5.0, 8.0), (10.0, 12.0)])]
    gap25 = [seg(5.0, 12.0, "a b", [(5.0, 7.5), (10.0, 12.0)])]
    assert rules.code_in_ipu(7.5, 10.5, gap20) == 1
    assert rules.code_in_ipu(7.5, 10.5, gap25) == 0
    # a segment ending within the 0.1 s tolerance of the range end counts; one ending earlier does not
    assert rules.code_in_ipu(8.3, 10.0, [seg(5.0, 10.1, "w", words(5.0, 13))]) == 1
    assert rules.code_in_ipu(8.3, 10.0, [seg(5.0, 10.05, "w", words(5.0, 13))]) == 0


def test_mix_rounds():
    ts = {**BG, "pause_start": 2.0, "pause_end": 3.0}
    kept = [seg(5.4, 12.0, "w", words(5.4, 17))]
    assert both(kept, ("S", "P", "B"), ts) == (1, 1)
    # talking in the pause: the paper fails the round, the code checks no pause window in a mix
    talk = seg(2.0, 2.9, "a b c", [(2.0, 2.3), (2.3, 2.6), (2.6, 2.9)])
    assert both([talk] + kept, ("S", "P"), ts) == (0, 1)
    # S+B (no released function handles it): base rule AND the background range
    stopped = [seg(5.4, 8.5, "w", words(5.4, 8)), seg(11.0, 13.0, "w", words(11.0, 5))]
    assert both(stopped, ("S", "B"), BG) == (1, 0)
    assert both(kept, ("S", "B"), BG) == (1, 1)


# -- latency and backchannel frequency

def test_latency_definitions():
    bc = seg(5.2, 5.6, "yeah", [(5.2, 5.6)])
    r = rules.score_round([bc, reply(7.0)], ("S",), SMOOTH)
    assert r["code"]["latency_s"] == pytest.approx(0.2)   # any segment ending after user_end
    assert r["paper"]["latency_s"] == pytest.approx(2.0)  # the takeover, backchannels skipped
    silent = rules.score_round([], ("S",), SMOOTH)
    assert silent["code"]["latency_s"] == 0 and silent["paper"]["latency_s"] is None
    early = rules.score_round([seg(4.0, 8.0, "w", words(4.0, 10))], ("S",), SMOOTH)
    assert early["code"]["latency_s"] == 0 and early["paper"]["latency_s"] == 0.0
    it = rules.score_round(inter_case([]), ("I",), INTER)
    assert it["paper"]["latency_s"] == pytest.approx(0.6)  # from interruption_end


def test_backchannel_frequency_definitions():
    segs = [seg(5.0, 5.4, "Yeah.", [(5.0, 5.4)]),                   # both
            seg(6.0, 8.9, "uh, huh!", [(6.0, 7.0), (7.0, 8.9)]),    # code only (2.9 s, 2 words)
            seg(9.0, 12.0, "a b c d e f g", words(9.0, 7))]
    total = 0.4 + 2.9 + 3.0
    assert rules.code_frequency(segs) == pytest.approx(2 / total)
    assert rules.paper_bc_frequency(segs) == pytest.approx(1 / total)
    assert rules.paper_bc_frequency([]) == 0.0 and rules.code_frequency([]) == 0
