"""Control runners: silence is zeros; fixed-latency speaks exactly delay_s after E (streaming, at the
input's own rate, from what it has heard); always-talk covers the whole output."""

import numpy as np
import pytest

from duplexeval_common import schemas
from duplexeval_runner.events import EventLog
from duplexeval_runner.harness import render
from duplexeval_runner_controls.always_talk import AlwaysTalkRunner
from duplexeval_runner_controls.fixed_latency import FixedLatencyRunner
from duplexeval_runner_controls.silence import SilenceRunner

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
    out, session = render(SilenceRunner(), user, sr, EventLog())
    assert len(out) == len(user) and not out.any()
    assert session.stats["replies"] == 0


@pytest.mark.parametrize("sr,delay", [(16000, 1.0), (24000, 1.0), (44100, 0.7), (48000, 1.0)])
def test_fixed_latency_onset_is_end_plus_delay(speech, fixed, sr, delay):
    s = speech(USER, sr)
    user = np.concatenate([zeros(0.5, sr), s, zeros(5.0, sr)])
    end = int(round(0.5 * sr)) + len(s)                  # E, known by construction
    runner = fixed if delay == 1.0 else FixedLatencyRunner(delay_s=delay)
    log = EventLog()
    out, _ = render(runner, user, sr, log)
    assert len(out) == len(user)
    onset = first_audible(out)
    assert abs(onset - (end + delay * sr)) <= 0.001 * sr  # within 1 ms (in fact exact)
    assert onset == end + round(delay * sr)
    (vad_end,) = log.of_type("vad_end")
    assert vad_end["t"] == pytest.approx(end / sr, abs=1e-6)
    assert vad_end["detected_t"] > vad_end["t"] + 0.3     # detected after min silence
    (speak,) = log.of_type("speak")
    assert speak["decided_t"] >= vad_end["detected_t"]     # decided once the VAD knew, not before
    assert speak["t"] == pytest.approx(end / sr + delay, abs=1e-6)
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
    out, session = render(fixed, user, sr, log)
    phrase = fixed.phrase(sr)
    assert first_audible(out) == e1 + sr
    assert np.array_equal(out[e1 + sr:s2_at], phrase[:s2_at - e1 - sr])
    assert not out[s2_at:e2 + sr].any()                  # cut exactly at the user's restart
    assert first_audible(out[e2:]) == sr                  # and speaks again after the second turn
    assert [r["type"] for r in log.rows if r["type"] in ("interrupt", "truncate")] == ["interrupt", "truncate"]
    assert log.of_type("interrupt")[0]["t"] == pytest.approx(s2_at / sr, abs=1e-6)
    assert {k: log.stats[k] for k in ("replies", "interrupts")} == {"replies": 2, "interrupts": 1}


def test_fixed_latency_drops_a_reply_the_user_talks_over(speech, fixed):
    sr = 16000
    s1, s2 = speech(USER, sr), speech(AGAIN, sr)
    user = np.concatenate([s1, zeros(0.6, sr), s2, zeros(0.5, sr)])  # restart before delay_s
    out, _ = render(fixed, user, sr, EventLog())
    assert not out.any()


def test_fixed_latency_is_deterministic(speech, fixed):
    sr = 24000
    user = np.concatenate([zeros(0.2, sr), speech(USER, sr), zeros(4.5, sr)])
    a, _ = render(fixed, user, sr, EventLog())
    b, _ = render(FixedLatencyRunner(), user, sr, EventLog())   # a fresh voice, a fresh synthesis
    assert np.array_equal(a, b) and a.any()


def test_no_user_speech_no_reply(fixed):
    out, _ = render(fixed, np.zeros(48000, dtype=np.float32), 48000, EventLog())
    assert not out.any()


def test_bad_runner_args_are_one_line_errors():
    from duplexeval_common.errors import DuplexEvalError
    with pytest.raises(DuplexEvalError, match="unknown runner_args dealy_s"):
        FixedLatencyRunner(dealy_s=1.0)
    with pytest.raises(DuplexEvalError, match="delay_s"):
        FixedLatencyRunner(delay_s=-1)
    with pytest.raises(DuplexEvalError, match="min_silence_ms must be a number > 0"):
        FixedLatencyRunner(min_silence_ms=0)
    with pytest.raises(DuplexEvalError, match="unknown runner_args volume"):
        AlwaysTalkRunner(volume=1)
    with pytest.raises(DuplexEvalError, match="phrase must be a non-empty string"):
        AlwaysTalkRunner(phrase=" ")


def test_fixed_latency_streams_what_the_whole_input_gave(speech, fixed):
    """The streamed VAD sees what the VAD over the whole input (resampled at once) saw: the same
    events, to the sample, at a rate that needs resampling and at 16 kHz."""
    from duplexeval_common.wavio import resample
    from duplexeval_runner_controls import vad
    for sr in (44100, 16000):
        s1, s2 = speech(USER, sr), speech(AGAIN, sr)
        user = np.concatenate([zeros(0.3, sr), s1, zeros(0.8, sr), s2, zeros(1.3, sr)])
        log = EventLog()
        render(fixed, user, sr, log)
        whole = [(e.kind, e.at, e.detected) for e in vad.endpoints(fixed._vad, resample(user, sr, vad.SR))]
        got = [("start" if r["type"] == "vad_start" else "end", r["vad_t"], r["detected_t"])
               for r in log.rows if r["type"] in ("vad_start", "vad_end")]
        assert len(whole) == 4 and got == [(k, pytest.approx(a, abs=1e-6), pytest.approx(d, abs=1e-6))
                                           for k, a, d in whole]


def test_a_delay_shorter_than_the_vad_lag_is_placed_in_the_past_on_purpose(speech):
    """delay_s 0.3 with min_silence_ms 300: the VAD knows E about 0.33 s after it, later than
    E + delay_s. The control is simulated: the phrase still starts at E + delay_s, and the
    speak event says when it was decided."""
    sr = 16000
    s = speech(USER, sr)
    user = np.concatenate([zeros(0.5, sr), s, zeros(2.0, sr)])
    end = int(round(0.5 * sr)) + len(s)
    log = EventLog()
    out, _ = render(FixedLatencyRunner(delay_s=0.3), user, sr, log)
    assert first_audible(out) == end + round(0.3 * sr)
    (speak,) = log.of_type("speak")
    assert speak["decided_t"] > speak["t"]


@pytest.fixture(scope="module")
def talker():
    r = AlwaysTalkRunner()
    r.setup()
    return r


@pytest.mark.parametrize("sr", [16000, 44100])
def test_always_talk_covers_the_whole_output(speech, talker, sr):
    user = np.concatenate([zeros(0.4, sr), speech(USER, sr), zeros(0.3, sr), speech(AGAIN, sr), zeros(3.2, sr)])
    log = EventLog()
    out, session = render(talker, user, sr, log)
    phrase = talker.phrase(sr)
    reps = -(-len(user) // len(phrase))
    assert reps >= 2                                       # the phrase is said again, back to back
    assert np.array_equal(out, np.tile(phrase, reps)[:len(user)])
    assert first_audible(out) == 0 and np.abs(out[-sr // 10:]).max() > 0.01   # from t=0 to the end
    # No pause anywhere longer than Piper's own between words: it never stops for the user.
    loud = np.flatnonzero(np.abs(out) > 1e-3)
    assert np.diff(loud).max() < 0.5 * sr and len(out) - 1 - loud[-1] < 0.5 * sr
    assert not log.of_type("interrupt")
    assert session.stats["replies"] == reps and session.stats["interrupts"] == 0
    again, _ = render(AlwaysTalkRunner(), user, sr, EventLog())
    assert np.array_equal(out, again)                       # deterministic
