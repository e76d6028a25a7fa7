"""The cascade's turn logic with stand-in models (fast): placement, queueing, barge-in, and that it
hears the input frame by frame (never ahead of the clock)."""

import numpy as np
import pytest

from duplexeval_common import schemas
from duplexeval_runner.events import EventLog
from duplexeval_runner.harness import render
from duplexeval_runner_cascade.cascade import CascadeRunner
from duplexeval_runner_controls import vad

from .conftest import zeros

OUT_SR = 22050


class FakeASR:
    def __init__(self):
        self.calls = []

    def transcribe(self, audio):
        self.calls.append(audio.copy())
        return "hello"

    def settings(self):
        return {}

    def record(self):
        return {}


class FakeLLM:
    def __init__(self):
        self.histories = []

    def reply(self, history):
        self.histories.append([m["content"] for m in history])
        return f"reply {len(self.histories)}.", 3

    def settings(self):
        return {}

    def record(self):
        return {}


class FakeTTS:
    sr = OUT_SR

    def synthesize(self, text, reuse=False):
        return np.full(int(2.0 * OUT_SR), 0.5, dtype=np.float32)   # 2 s of "speech"

    def settings(self):
        return {}

    def record(self):
        return {}


def cascade(**args):
    r = CascadeRunner(**args)
    r.asr, r.llm, r.tts = FakeASR(), FakeLLM(), FakeTTS()
    r._load_vad()
    r._ready = True
    return r


def test_reply_is_placed_fixed_compute_after_the_endpoint_and_cut_by_barge_in(speech):
    sr = 16000
    r = cascade(clock="fixed", fixed_compute_s=0.7)
    u = speech("Can you tell me the capital of France?", sr)
    gap = 2.0                                  # reply starts ~1.3 s after E, then the user talks over it
    user = np.concatenate([zeros(0.3, sr), u, zeros(gap, sr), u, zeros(4.0, sr)])
    log = EventLog()
    out, session = render(r, user, sr, log)
    assert len(out) == len(user)
    assert all(schemas.problem("runner-event", e) is None for e in log.rows)
    ends = log.of_type("vad_end")
    speaks = log.of_type("speak")
    assert len(ends) == len(speaks) == 2
    for e, s in zip(ends, speaks):
        assert s["endpoint_t"] == e["detected_t"]
        assert s["t"] == pytest.approx(e["detected_t"] + 0.7, abs=1 / OUT_SR)
        assert e["detected_t"] - e["t"] >= 0.5          # min silence 500 ms
    (cut,) = log.of_type("interrupt")
    starts = log.of_type("vad_start")
    assert cut["t"] == starts[1]["detected_t"]         # cut when the VAD heard the user, not before
    a = int(round(speaks[0]["t"] * sr))
    b = int(round(cut["t"] * sr))
    assert np.abs(out[a + 20:b - 20] - 0.5).max() < 0.01
    assert np.abs(out[b + 20:int(speaks[1]["t"] * sr) - 20]).max() < 1e-3
    # The conversation is kept within the sample: the second prompt sees the first exchange.
    assert r.llm.histories == [["hello"], ["hello", "reply 1.", "hello"]]
    assert {k: log.stats[k] for k in ("turns", "replies", "interrupts")} == {"turns": 2, "replies": 2,
                                                                            "interrupts": 1}
    assert "compute_s" not in log.stats                 # the fixed clock: no wall time in the record
    assert cut["unheard"] is False and cut["speech_t"] == starts[1]["t"]
    # What the ASR got is the turn as heard, padded by asr_pad_ms on each side.
    e1 = ends[0]
    turn = r.asr.calls[0]
    lo, hi = int(round((starts[0]["t"] - 0.2) * sr)), int(round((e1["t"] + 0.2) * sr))
    assert np.array_equal(turn, user[max(lo, 0):hi])


def test_the_cascade_hears_each_frame_once_and_never_ahead(speech):
    """One 32 ms VAD chunk per step, at the clock's time; a turn's audio never reaches past now."""
    sr = 16000
    r = cascade(clock="fixed", fixed_compute_s=0.1, asr_pad_ms=800, min_silence_ms=300)
    pushed = []
    real_push = r._vad.push

    def push(chunk):
        pushed.append(chunk.copy())
        return real_push(chunk)
    r._vad.push = push
    u = speech("Hello there.", sr)
    user = np.concatenate([zeros(0.2, sr), u, zeros(1.0, sr)])
    user = np.concatenate([user, np.full(100, 0.01, np.float32)])     # a partial last chunk
    log = EventLog()
    render(r, user, sr, log)
    assert len(pushed) == len(user) // vad.CHUNK                       # the padded tail is not pushed
    assert np.array_equal(np.concatenate(pushed), user[:len(pushed) * vad.CHUNK])
    (end,) = log.of_type("vad_end")
    (turn,) = r.asr.calls
    # asr_pad_ms 800 > min_silence_ms 300: the pad is cut at what had been heard at detection.
    heard = int(round(end["detected_t"] * sr))
    assert len(turn) == heard - max(int(round((log.of_type("vad_start")[0]["t"] - 0.8) * sr)), 0)
    assert np.array_equal(turn, user[heard - len(turn):heard])


def test_each_sample_is_a_new_session(speech):
    sr = 16000
    r = cascade(clock="fixed", fixed_compute_s=0.2)
    user = np.concatenate([speech("Hello there.", sr), zeros(3.0, sr)])
    outs = [render(r, user, sr, EventLog())[0] for _ in range(2)]
    assert np.array_equal(outs[0], outs[1]) and outs[0].any()
    assert r.llm.histories == [["hello"], ["hello"]]


def two_quick_turns(speech, monkeypatch, **args):
    """Two short turns 0.8 s apart, each timed step "taking" 1.5 s (ASR + LLM + TTS = 4.5 s)."""
    sr = 16000
    r = cascade(clock="measured", **args)
    ticks = iter(np.arange(0, 1000, 1.5))
    monkeypatch.setattr("duplexeval_runner_cascade.cascade.time.perf_counter", lambda: next(ticks))
    short = speech("Yes.", sr)
    user = np.concatenate([short, zeros(0.8, sr), short, zeros(12.0, sr)])
    log = EventLog()
    render(r, user, sr, log)
    return r, log


def test_barge_in_abandons_a_reply_still_being_computed(speech, monkeypatch):
    r, log = two_quick_turns(speech, monkeypatch)
    s1, s2 = log.of_type("speak")
    e1, e2 = log.of_type("vad_end")
    assert s1["compute_s"] == pytest.approx(4.5) and s1["queued_s"] == 0
    assert s1["t"] == pytest.approx(e1["detected_t"] + 4.5, abs=1 / OUT_SR)
    (cut,) = log.of_type("interrupt")
    assert cut["t"] < s1["t"] and cut["unheard"] is True
    # Turn 2 starts computing at its own endpoint, and its prompt lacks the reply never heard.
    assert s2["queued_s"] == 0
    assert s2["t"] == pytest.approx(e2["detected_t"] + 4.5, abs=1 / OUT_SR)
    assert r.llm.histories == [["hello"], ["hello", "hello"]]
    assert log.stats["compute_s"]["latency"] == [pytest.approx(s1["t"] - e1["t"], abs=1e-3),
                                                 pytest.approx(s2["t"] - e2["t"], abs=1e-3)]


def test_without_barge_in_a_turn_waits_for_the_previous_compute(speech, monkeypatch):
    r, log = two_quick_turns(speech, monkeypatch, stop_on_user_speech=False)
    s1, s2 = log.of_type("speak")
    e2 = log.of_type("vad_end")[1]
    assert not log.of_type("interrupt")
    assert s2["queued_s"] == pytest.approx(s1["t"] - e2["detected_t"], abs=1e-3)   # one worker
    assert s2["t"] == pytest.approx(s1["t"] + 4.5, abs=1 / OUT_SR)
    assert r.llm.histories == [["hello"], ["hello", "reply 1.", "hello"]]
