"""The harness and the step clock: exact output length at any rate, one resample each way, frames
handed over in order and never ahead of the clock, contract checks."""

import numpy as np
import pytest

from duplexeval_runner.events import EventLog
from duplexeval_runner.harness import RunnerFailed, render
from duplexeval_runner.protocol import StepRunner
from duplexeval_runner_controls.silence import SilenceRunner

RATES = [16000, 22050, 24000, 44100, 48000]


class ToneRunner(StepRunner):
    """16 kHz in, 24 kHz out, 80 ms frames, and a last frame a few samples too long (as models do)."""
    name, clock, in_sr, out_sr, frame_ms = "tone", "lockstep", 16000, 24000, 80.0

    def open(self, session):
        self.info = session.info
        self.got = 0

    def step(self, frame, session):
        self.got += len(frame)
        n = 1920 + (7 if self.got >= self.info.n_samples else 0)
        return (0.1 * np.sin(np.arange(n) * 0.05)).astype(np.float32)


@pytest.mark.parametrize("sr", RATES)
@pytest.mark.parametrize("seconds", [1.0, 2.3456789])
def test_output_length_equals_input_length(sr, seconds):
    user = np.random.default_rng(0).uniform(-0.1, 0.1, int(seconds * sr) + 3).astype(np.float32)
    for runner in (ToneRunner(), SilenceRunner()):
        log = EventLog()
        out, session = render(runner, user, sr, log)
        assert out.dtype == np.float32 and out.shape == user.shape
        assert log.rows[0]["type"] == "session_start" and log.rows[-1]["type"] == "end"
        assert log.rows[-1]["t"] == pytest.approx(len(user) / sr, abs=1e-6)
        assert session.info.duration_s == pytest.approx(len(user) / sr)


def test_runner_gets_its_own_rate():
    r = ToneRunner()
    render(r, np.zeros(44100, dtype=np.float32), 44100, EventLog())
    assert r.info.sr == 16000 and r.info.n_samples == 16000
    assert r.got == 13 * 1280                       # 12.5 frames of 80 ms: the last one zero-padded


class Probe(StepRunner):
    """Records, at each step, how much input it has received and the session's clock; writes into
    every frame it gets (which must not reach the input or a later frame)."""
    name, clock, frame_ms = "probe", "simulated", 20.0

    def open(self, session):
        self.rows, self.frames, self.total = [], [], 0
        self.at_open = session.now()

    def step(self, frame, session):
        self.total += len(frame)
        self.rows.append((self.total, session.now()))
        self.frames.append(frame.copy())
        self.bases = getattr(self, "bases", []) + [frame.base]
        frame[:] = 99.0                              # a runner scribbling on its frame
        return None

    def close(self, session):
        self.at_close = session.now()


def test_a_step_runner_cannot_read_ahead_of_its_clock():
    sr, F = 16000, 320
    user = np.random.default_rng(3).uniform(-0.5, 0.5, 10 * F + 17).astype(np.float32)
    keep = user.copy()
    p = Probe()
    out, session = render(p, user, sr, EventLog())
    assert p.at_open == 0.0
    assert len(p.rows) == 11
    for k, (total, now) in enumerate(p.rows):
        assert total == (k + 1) * F                  # frame k arrives alone, once, in order
        assert now == pytest.approx((k + 1) * F / sr, abs=1e-12)
    assert p.at_close == pytest.approx(11 * F / sr)
    assert np.array_equal(user, keep)                # frames are copies: the input is untouched
    assert all(b is None or not np.shares_memory(b, user) for b in p.bases)
    got = np.concatenate(p.frames)
    assert np.array_equal(got[:len(user)], user) and not got[len(user):].any()   # zero-padded tail
    assert session.stats["steps"] == 11


class Broken(StepRunner):
    name, frame_ms = "broken", 10.0

    def __init__(self, out, at=2):
        self.out, self.at, self.k = out, at, 0

    def open(self, session):
        self.k = 0

    def step(self, frame, session):
        self.k += 1
        return self.out if self.k == self.at + 1 else None


@pytest.mark.parametrize("out,msg", [(np.full(10, np.nan), "runner 'broken' returned non-finite audio at step 2"),
                                     (np.zeros((2, 10)), r"runner 'broken' returned audio at step 2 of shape \(2, 10\), "
                                                         "expected mono")])
def test_bad_step_output_is_a_one_line_failure(out, msg):
    with pytest.raises(RunnerFailed, match=msg) as info:
        render(Broken(out), np.zeros(1600, dtype=np.float32), 16000, EventLog())
    assert "\n" not in str(info.value)


def test_a_frame_that_is_not_whole_samples_is_a_one_line_error():
    from duplexeval_common.errors import DuplexEvalError

    class Odd(StepRunner):
        name, frame_ms = "odd", 32.0

        def step(self, frame, session):
            return None

    with pytest.raises(DuplexEvalError, match="frame_ms 32.0 is not a whole number of samples at 44100 Hz"):
        render(Odd(), np.zeros(44100, dtype=np.float32), 44100, EventLog())
