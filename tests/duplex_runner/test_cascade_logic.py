"""The cascade's turn logic with stand-in models (fast): placement, queueing, barge-in."""

import numpy as np
import pytest

from duplexeval_common import schemas
from duplexeval_runner import vad
from duplexeval_runner.events import EventLog
from duplexeval_runner.harness import render
from duplexeval_runner.runners.cascade import CascadeRunner

from .conftest import zeros

OUT_SR = 22050


class FakeASR:
    def __init__(self):
        self.calls = []

    def transcribe(self, audio):
        self.calls.append(len(audio))
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
    out = render(r, user, sr, log)
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
    assert log.stats == {"turns": 2, "replies": 2, "interrupts": 1}


def test_each_sample_is_a_new_session(speech):
    sr = 16000
    r = cascade(clock="fixed", fixed_compute_s=0.2)
    user = np.concatenate([speech("Hello there.", sr), zeros(3.0, sr)])
    outs = [render(r, user, sr, EventLog()) for _ in range(2)]
    assert np.array_equal(outs[0], outs[1]) and outs[0].any()
    assert r.llm.histories == [["hello"], ["hello"]]


def two_quick_turns(speech, monkeypatch, **args):
    """Two short turns 0.8 s apart, each timed step "taking" 1.5 s (ASR + LLM + TTS = 4.5 s)."""
    sr = 16000
    r = cascade(clock="measured", **args)
    ticks = iter(np.arange(0, 1000, 1.5))
    monkeypatch.setattr("duplexeval_runner.runners.cascade.time.perf_counter", lambda: next(ticks))
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
