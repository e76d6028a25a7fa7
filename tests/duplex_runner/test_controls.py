"""Control runners: silence is zeros; fixed-latency speaks exactly delay_s after E."""

import numpy as np
import pytest

from duplexeval_common import schemas
from duplexeval_runner.events import EventLog
from duplexeval_runner.harness import render
from duplexeval_runner.runners.fixed_latency import FixedLatencyRunner
from duplexeval_runner.runners.silence import SilenceRunner

from .conftest import first_audible, zeros

USER = "Hello there. Can you tell me the capital of France?"
AGAIN = "Actually, wait a second."


@pytest.fixture(scope="module")
def fixed():
    r = FixedLatencyRunner()
    r.setup()
    return r


@pytest.mark.parametrize("sr", [16000, 24000, 44100, 48000])
def test_silence_gives_zeros(sr):
    user = np.random.default_rng(1).uniform(-0.5, 0.5, sr + 11).astype(np.float32)
    out = render(SilenceRunner(), user, sr, EventLog())
    assert len(out) == len(user) and not out.any()


@pytest.mark.parametrize("sr,delay", [(16000, 1.0), (24000, 1.0), (44100, 0.7), (48000, 1.0)])
def test_fixed_latency_onset_is_end_plus_delay(speech, fixed, sr, delay):
    s = speech(USER, sr)
    user = np.concatenate([zeros(0.5, sr), s, zeros(5.0, sr)])
    end = int(round(0.5 * sr)) + len(s)                  # E, known by construction
    runner = fixed if delay == 1.0 else FixedLatencyRunner(delay_s=delay)
    log = EventLog()
    out = render(runner, user, sr, log)
    assert len(out) == len(user)
    onset = first_audible(out)
    assert abs(onset - (end + delay * sr)) <= 0.001 * sr  # within 1 ms (in fact exact)
    assert onset == end + round(delay * sr)
    (vad_end,) = log.of_type("vad_end")
    assert vad_end["t"] == pytest.approx(end / sr, abs=1e-6)
    assert vad_end["detected_t"] > vad_end["t"] + 0.3     # detected after min silence
    for row in log.rows:
        assert schemas.problem("runner-event", row) is None


def test_fixed_latency_stops_when_the_user_speaks_again(speech, fixed):
    sr = 16000
    s1, s2 = speech(USER, sr), speech(AGAIN, sr)
    gap = 1.6                                             # the phrase starts 1.0 s in, then is cut
    user = np.concatenate([zeros(0.3, sr), s1, zeros(gap, sr), s2, zeros(4.0, sr)])
    e1 = int(round(0.3 * sr)) + len(s1)
    s2_at = e1 + int(round(gap * sr))
    e2 = s2_at + len(s2)
    log = EventLog()
    out = render(fixed, user, sr, log)
    phrase = fixed.phrase(sr)
    assert first_audible(out) == e1 + sr
    assert np.array_equal(out[e1 + sr:s2_at], phrase[:s2_at - e1 - sr])
    assert not out[s2_at:e2 + sr].any()                  # cut exactly at the user's restart
    assert first_audible(out[e2:]) == sr                  # and speaks again after the second turn
    assert [r["type"] for r in log.rows if r["type"] in ("interrupt", "truncate")] == ["interrupt", "truncate"]
    assert log.of_type("interrupt")[0]["t"] == pytest.approx(s2_at / sr, abs=1e-6)
    assert log.stats == {"replies": 2, "interrupts": 1}


def test_fixed_latency_drops_a_reply_the_user_talks_over(speech, fixed):
    sr = 16000
    s1, s2 = speech(USER, sr), speech(AGAIN, sr)
    user = np.concatenate([s1, zeros(0.6, sr), s2, zeros(0.5, sr)])  # restart before delay_s
    out = render(fixed, user, sr, EventLog())
    assert not out.any()


def test_fixed_latency_is_deterministic(speech, fixed):
    sr = 24000
    user = np.concatenate([zeros(0.2, sr), speech(USER, sr), zeros(4.5, sr)])
    a = render(fixed, user, sr, EventLog())
    b = render(FixedLatencyRunner(), user, sr, EventLog())   # a fresh voice, a fresh synthesis
    assert np.array_equal(a, b) and a.any()


def test_no_user_speech_no_reply(fixed):
    out = render(fixed, np.zeros(48000, dtype=np.float32), 48000, EventLog())
    assert not out.any()


def test_bad_runner_args_are_one_line_errors():
    from duplexeval_common.errors import DuplexEvalError
    with pytest.raises(DuplexEvalError, match="unknown runner_args dealy_s"):
        FixedLatencyRunner(dealy_s=1.0)
    with pytest.raises(DuplexEvalError, match="delay_s"):
        FixedLatencyRunner(delay_s=-1)
