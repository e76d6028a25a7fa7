"""Polyphase resampling equal, bit for bit, to `scipy.signal.resample_poly(x, up, down)` on 1-D
float64 input with its defaults (a Kaiser-windowed sinc low-pass, beta 5, half length 10 times
the larger rate; zero padding), without importing `scipy.signal`. Other real input is converted
to float64 first, as every caller here does; complex input and rates that are not integers are
refused.

Why: importing `scipy.signal` costs about 1.4 s of CPU (SciPy 1.17 imports scipy.stats,
interpolate and optimize with it), paid by every process that resamples once: each tts-synth
worker (Piper voices at 22,050 Hz), each runner that speaks phrases, the VAD's feeds. This module
imports only `scipy.special` (0.4 s), for the Bessel function I0 of the window, so that the
filter's taps are SciPy's own numbers.

Every number is computed as SciPy computes it, in the same order, so the floating-point results
are the same bits (tests/common/test_polyphase.py compares both on many rate pairs, lengths and
signals):
- the filter is `firwin(2 * half_len + 1, 1 / max(up, down), window=("kaiser", 5.0))` times `up`:
  numpy's sinc times the Kaiser window (scipy.signal.windows.kaiser's expression), divided by the
  sum of its taps (numpy's pairwise sum), as scipy.signal.firwin scales a low-pass at 0 Hz;
- the filter is zero-padded in front by `down - half_len % down` taps and behind until the output
  is long enough (resample_poly's own loop);
- each output sample is the sum, in order of the input index, of input times flipped polyphase
  tap, starting from 0.0: the loop of SciPy's `_upfirdn_apply._apply_impl` with zero padding
  (a term outside the input is 0 and adding it changes nothing: the sum is never -0.0). Numpy does
  the same multiply and add per term, each rounded once, for many outputs at once (all of them
  per tap for a short signal, all of one filter phase per tap for a long one).
"""

from __future__ import annotations

import functools
import math

import numpy as np

__all__ = ["resample_poly"]

KAISER_BETA = 5.0
COMB_MIN = 256  # outputs per filter phase from which the strided (comb) loop is the faster one


@functools.lru_cache(maxsize=32)
def _filter(up: int, down: int) -> tuple[np.ndarray, int, int]:
    """(h, half_len, n_pre_pad): resample_poly's filter before its post-padding (read-only)."""
    from scipy.special import i0  # the window's I0, SciPy's own (0.4 s; scipy.signal: 1.4 s)
    max_rate = max(up, down)
    half_len = 10 * max_rate
    numtaps = 2 * half_len + 1
    cutoff = np.float64(1.0 / max_rate)  # firwin: the cutoff relative to Nyquist (fs 2)
    alpha = 0.5 * (numtaps - 1)
    m = np.arange(0, numtaps, dtype=np.float64) - alpha
    h = 0
    h += cutoff * np.sinc(cutoff * m)          # the band [0, cutoff]: right edge ...
    h -= np.float64(0.0) * np.sinc(np.float64(0.0) * m)  # ... minus the left edge, 0
    n = np.arange(0, numtaps, dtype=np.float64)  # the symmetric Kaiser window of numtaps points
    a = (numtaps - 1) / 2.0
    win = i0(KAISER_BETA * np.sqrt(1 - ((n - a) / a) ** 2.0)) / i0(np.asarray(KAISER_BETA, dtype=np.float64))
    h *= win
    c = np.cos(np.pi * m * 0.0)  # scaled to unit gain at 0 Hz
    s = np.sum(h * c)
    h /= s
    h *= up
    n_pre_pad = down - half_len % down
    h.setflags(write=False)
    return h, half_len, n_pre_pad


def _output_len(len_h: int, in_len: int, up: int, down: int) -> int:
    """The length of upfirdn's output (SciPy's _output_len)."""
    nt = (in_len + (len_h + (-len_h % up)) // up - 1) * up
    return nt // down + (1 if nt % down else 0)


def resample_poly(x: np.ndarray, up: int, down: int) -> np.ndarray:
    """scipy.signal.resample_poly(x, up, down) of a 1-D real signal, computed in float64 (the
    same bytes as SciPy's for float64 input; every caller here passes float64)."""
    if isinstance(up, bool) or isinstance(down, bool) or int(up) != up or int(down) != down:
        raise ValueError("up and down must be integers")
    x = np.asarray(x)
    if x.ndim != 1:
        raise ValueError("resample_poly: a 1-D signal is expected")
    if np.iscomplexobj(x):
        raise ValueError("resample_poly: a real signal is expected")
    x = x.astype(np.float64, copy=False)
    up, down = int(up), int(down)
    if up < 1 or down < 1:
        raise ValueError("up and down must be >= 1")
    g = math.gcd(up, down)
    up, down = up // g, down // g
    if up == down == 1:
        return x.copy()
    n_in = len(x)
    n_out = n_in * up
    n_out = n_out // down + bool(n_out % down)
    h0, half_len, n_pre_pad = _filter(up, down)
    n_post_pad = 0
    n_pre_remove = (half_len + n_pre_pad) // down
    while _output_len(len(h0) + n_pre_pad + n_post_pad, n_in, up, down) < n_out + n_pre_remove:
        n_post_pad += 1
    h = np.concatenate((np.zeros(n_pre_pad), h0, np.zeros(n_post_pad)))
    # upfirdn's transposed, flipped arrangement: phase p's taps, last first, h_per_phase each
    h_full = np.zeros(len(h) + (-len(h) % up))
    h_full[:len(h)] = h
    flipped = np.ascontiguousarray(h_full.reshape(-1, up).T[:, ::-1])  # (up, h_per_phase)
    per_phase = flipped.shape[1]
    # The outputs resample_poly keeps are y = n_pre_remove + i for i in [0, n_out). Output y reads
    # inputs x_idx - per_phase + 1 ... x_idx with phase `phase` of the filter, where
    # x_idx, phase = divmod(y * down, up); `padded` has per_phase zeros in front of the input (and
    # zeros after it), so tap k of output y reads padded[x_idx + 1 + k].
    rows = (per_phase + n_in + per_phase) // down + 2
    padded = np.zeros(rows * down)  # 0 outside the input
    padded[per_phase:per_phase + n_in] = x
    if n_out < COMB_MIN * up:
        # Few outputs per phase (a short signal, or up in the hundreds: 22,050 or 44,100 Hz to
        # 16 kHz): every output at once, one gather per tap (per_phase numpy calls in all).
        x_idx, phase = np.divmod((np.arange(n_out, dtype=np.int64) + n_pre_remove) * down, up)
        out = np.zeros(n_out)
        for k in range(per_phase):
            out += padded[x_idx + 1 + k] * flipped[phase, k]
        return out
    # Many outputs per phase: outputs i, i + up, i + 2 up, ... share their phase and step `down`
    # inputs at a time; with the input laid out as `columns` (columns[c, r] is padded[r * down + c])
    # each tap's terms of such a comb are one contiguous run of a row (no gathers).
    columns = np.ascontiguousarray(padded.reshape(rows, down).T)
    out = np.empty(n_out)
    for p in range(min(up, n_out)):
        count = (n_out - p + up - 1) // up
        x_idx, phase = divmod((n_pre_remove + p) * down, up)
        taps = flipped[phase]
        acc, term = np.zeros(count), np.empty(count)
        for k in range(per_phase):
            r, c = divmod(x_idx + 1 + k, down)  # tap k's input in `padded`
            np.multiply(columns[c, r:r + count], taps[k], out=term)
            acc += term
        out[p::up] = acc
    return out
