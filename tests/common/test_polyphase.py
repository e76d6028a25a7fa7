"""duplexeval_common.polyphase.resample_poly gives scipy.signal.resample_poly's bytes: the rate pairs
the harness meets (Piper's 22,050 Hz, 24 kHz models, 16 kHz ASR and VAD, 44.1 and 48 kHz
imports) and odd ones, signals of every length from empty to a minute, noise, tones, quiet
float32-quantized speech-like input and exact zeros; and the modules that resample no longer
import scipy.signal."""

import subprocess
import sys
from math import gcd

import numpy as np
import pytest
from scipy.signal import resample_poly as scipy_resample_poly

from duplexeval_common.polyphase import resample_poly
from duplexeval_common.wavio import resample

RATES = [(22050, 16000), (22050, 24000), (24000, 16000), (16000, 24000), (16000, 48000), (48000, 16000),
         (44100, 16000), (8000, 16000), (16000, 8000), (16000, 22050), (24000, 22050), (11025, 16000),
         (32000, 16000), (16000, 44100), (48000, 24000), (96000, 16000), (16000, 16001), (3, 7), (7, 3),
         (1, 5), (5, 1), (2, 2)]
LENGTHS = [0, 1, 2, 3, 5, 17, 100, 1000, 4801, 22050]


def signals(n: int, rng) -> dict[str, np.ndarray]:
    t = np.arange(n)
    return {"noise": rng.standard_normal(n), "tone": 0.5 * np.sin(t * 0.031) * np.cos(t * 0.0007),
            "quiet float32": (rng.standard_normal(n) * 1e-3).astype(np.float32).astype(np.float64),
            "zeros": np.zeros(n), "clipped": np.clip(rng.standard_normal(n), -0.2, 0.2)}


@pytest.mark.parametrize("sr_in,sr_out", RATES)
def test_same_bytes_as_scipy(sr_in, sr_out):
    g = gcd(sr_in, sr_out)
    up, down = sr_out // g, sr_in // g
    rng = np.random.default_rng(sr_in * 7 + sr_out)
    for n in LENGTHS:
        for name, x in signals(n, rng).items():
            want = scipy_resample_poly(x, up, down)
            got = resample_poly(x, up, down)
            assert got.dtype == want.dtype and got.shape == want.shape, (sr_in, sr_out, n, name)
            assert got.tobytes() == want.tobytes(), (sr_in, sr_out, n, name, float(np.max(np.abs(got - want))))


def test_a_minute_of_piper_rate_audio_and_unreduced_factors():
    rng = np.random.default_rng(1)
    x = rng.standard_normal(22050 * 60) * 0.3
    assert resample_poly(x, 320, 441).tobytes() == scipy_resample_poly(x, 320, 441).tobytes()
    assert resample_poly(x, 640, 882).tobytes() == scipy_resample_poly(x, 640, 882).tobytes()  # gcd taken
    # wavio.resample: float32 of the same numbers, at the exact length
    y = resample(x.astype(np.float32), 22050, 16000)
    assert y.dtype == np.float32 and len(y) == 16000 * 60
    assert y.tobytes() == scipy_resample_poly(x.astype(np.float32).astype(np.float64), 320, 441)[:len(y)].astype(
        np.float32).tobytes()


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError):
        resample_poly(np.zeros((2, 3)), 2, 3)
    with pytest.raises(ValueError):
        resample_poly(np.zeros(3), 0, 3)
    with pytest.raises(ValueError, match="integers"):
        resample_poly(np.zeros(3), 1.5, 3)
    with pytest.raises(ValueError, match="real"):
        resample_poly(np.zeros(3, dtype=complex), 2, 3)


def test_both_loops_give_the_same_bytes(monkeypatch):
    """The gather loop (few outputs per filter phase) and the strided one (many) sum each output in
    the same order: forced either way on the same signals, the bytes agree, and agree with SciPy."""
    from duplexeval_common import polyphase
    rng = np.random.default_rng(7)
    for up, down in ((160, 441), (2, 3), (3, 1)):
        for n in (5, 1884, 30000):
            x = rng.standard_normal(n)
            got = {}
            for comb_min in (0, 10 ** 9):
                monkeypatch.setattr(polyphase, "COMB_MIN", comb_min)
                got[comb_min] = resample_poly(x, up, down).tobytes()
            assert got[0] == got[10 ** 9] == scipy_resample_poly(x, up, down).tobytes(), (up, down, n)


def test_resampling_does_not_import_scipy_signal():
    """What the saving is for: a stage process that resamples imports scipy.special only."""
    code = ("import sys, numpy as np\n"
            "from duplexeval_common.wavio import resample\n"
            "from duplexeval_common import vad\n"
            "resample(np.ones(2205, dtype=np.float32), 22050, 16000)\n"
            "f = vad.feed_audio(np.ones((2400, 1), dtype=np.float32), 'resample_poly2/3')\n"
            "assert len(f) == 1600\n"
            "print('scipy.signal' in sys.modules)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False"
