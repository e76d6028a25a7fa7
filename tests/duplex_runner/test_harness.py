"""The harness: exact output length at any rate, one resample each way, contract checks."""

import numpy as np
import pytest

from duplexeval_runner.events import EventLog
from duplexeval_runner.harness import RunnerFailed, render
from duplexeval_runner.protocol import BaseRunner
from duplexeval_runner.runners.silence import SilenceRunner

RATES = [16000, 22050, 24000, 44100, 48000]


class ToneRunner(BaseRunner):
    """16 kHz in, 24 kHz out, and a reply a few samples too long (as models do)."""
    name, clock, in_sr, out_sr = "tone", "lockstep", 16000, 24000

    def run(self, user, sr, *, log):
        assert sr == 16000
        self.got = len(user)
        n = int(round(len(user) * 24000 / 16000)) + 7
        return (0.1 * np.sin(np.arange(n) * 0.05)).astype(np.float32)


@pytest.mark.parametrize("sr", RATES)
@pytest.mark.parametrize("seconds", [1.0, 2.3456789])
def test_output_length_equals_input_length(sr, seconds):
    user = np.random.default_rng(0).uniform(-0.1, 0.1, int(seconds * sr) + 3).astype(np.float32)
    for runner in (ToneRunner(), SilenceRunner()):
        log = EventLog()
        out = render(runner, user, sr, log)
        assert out.dtype == np.float32 and out.shape == user.shape
        assert log.rows[0]["type"] == "session_start" and log.rows[-1]["type"] == "end"
        assert log.rows[-1]["t"] == pytest.approx(len(user) / sr, abs=1e-6)


def test_runner_gets_its_own_rate():
    r = ToneRunner()
    render(r, np.zeros(44100, dtype=np.float32), 44100, EventLog())
    assert r.got == 16000


class Broken(BaseRunner):
    name, in_sr, out_sr = "broken", None, None

    def __init__(self, out):
        self.out = out

    def run(self, user, sr, *, log):
        return self.out


@pytest.mark.parametrize("out,msg", [(np.full(10, np.nan), "non-finite"),
                                     (np.zeros((2, 10)), "mono")])
def test_bad_runner_output_is_a_one_line_failure(out, msg):
    with pytest.raises(RunnerFailed, match=msg):
        render(Broken(out), np.zeros(100, dtype=np.float32), 16000, EventLog())
