"""Silero VAD as the v1.5 rules use it: the settings of each rule, the 16 kHz feed upstream's
scripts build, and speech probabilities through duplexeval_common's model (ONNX or the JIT model,
one thread; never a download).

Speech probabilities (one per 512-sample window at 16 kHz, the model's state carried across
windows) come from `duplexeval_common.vadcache`: per file and cached (`vadcache.ensure`, the
16 kHz mono feed "as16000"), or for an array here (`speech_probs`). Segments are derived from
them by `duplexeval_common.vad.segments_from_probs`, silero-vad 6.2.3's get_speech_timestamps
post-processing (tests/common/test_vad.py checks it equal to silero's).
"""

from __future__ import annotations

import math

import numpy as np

from duplexeval_common.errors import InputError
from duplexeval_common.vad import SR, UNIFIED_SETTINGS, segments_from_probs

# get_timing.py: get_speech_timestamps(wav, model, sampling_rate=16000), library defaults.
TIMING_SETTINGS = {"threshold": 0.5, "min_speech_duration_ms": 250, "min_silence_duration_ms": 100,
                   "speech_pad_ms": 30}
# eval_general_before_after.py, trim_mode "silero" with its defaults (evaluate.py sets none):
# threshold 0.5, min speech 60 ms, min silence 50 ms, the library's 30 ms padding.
TRIM_SETTINGS = {"threshold": 0.5, "min_speech_duration_ms": 60, "min_silence_duration_ms": 50,
                 "speech_pad_ms": 30}
# The unified column: silero defaults without padding (duplexeval_common.vad.UNIFIED_SETTINGS,
# the same speech detection as the v1.0 unified column).
UNIFIED = dict(UNIFIED_SETTINGS)


def segments(probs, n: int, settings: dict) -> list[tuple[int, int]]:
    """Speech segments as (start, end) 16 kHz sample indices, end exclusive."""
    return [(int(s["start"]), int(s["end"])) for s in segments_from_probs(probs, n, sampling_rate=SR, **settings)]


def speech_probs(audio: np.ndarray, backend: str = "onnx") -> np.ndarray:
    """Probabilities of a 16 kHz mono float32 array, computed in this process with one thread
    (the model is loaded once; `backend` "onnx" or "jit", silero-vad's own model files)."""
    from duplexeval_common import vadcache
    if vadcache._MODEL is None or vadcache._MODEL[0] != backend:
        vadcache._init_worker(backend)
    return vadcache.speech_probs(np.ascontiguousarray(audio, dtype=np.float32))


# ---- the feed upstream's scripts give the model ----

def _sinc_kernel(orig: int, new: int, width_zeros: int = 6, rolloff: float = 0.99):
    """The windowed-sinc (Hann) kernels of torchaudio.functional.resample's default method, in
    float32 as torchaudio builds them for a float32 waveform. orig, new: reduced by their gcd."""
    base = min(orig, new) * rolloff
    width = math.ceil(width_zeros * orig / base)
    f32 = np.float32
    idx = np.arange(-width, width + orig, dtype=f32)[None, :] / f32(orig)
    t = np.arange(0, -new, -1, dtype=f32)[:, None] / f32(new) + idx
    t = t * f32(base)
    t = np.clip(t, -width_zeros, width_zeros).astype(f32)
    window = np.cos(t * f32(math.pi) / f32(width_zeros) / f32(2)) ** 2
    t = t * f32(math.pi)
    with np.errstate(invalid="ignore", divide="ignore"):
        k = np.where(t == 0, f32(1.0), np.sin(t) / t).astype(f32)
    k = k * (window * f32(base / orig))
    return k.astype(f32), width


def torchaudio_resample(x: np.ndarray, orig: int, new: int) -> np.ndarray:
    """torchaudio.functional.resample(x, orig, new) with its defaults (sinc_interp_hann, 6 zero
    crossings, rolloff 0.99) for a 1-D float32 signal, in numpy: the same kernel and the same
    strided convolution. Equal to torchaudio's up to float32 summation order (about 1e-7)."""
    x = np.asarray(x, dtype=np.float32)
    if orig == new:
        return x.copy()
    g = math.gcd(int(orig), int(new))
    o, n = int(orig) // g, int(new) // g
    kernel, width = _sinc_kernel(o, n)
    length = len(x)
    padded = np.concatenate([np.zeros(width, np.float32), x, np.zeros(width + o, np.float32)])
    K = kernel.shape[1]
    steps = (len(padded) - K) // o + 1
    frames = np.lib.stride_tricks.as_strided(padded, shape=(steps, K),
                                             strides=(padded.strides[0] * o, padded.strides[0]))
    out = (frames @ kernel.T).reshape(-1)
    target = math.ceil(n * length / o)
    return np.ascontiguousarray(out[:target], dtype=np.float32)


def timing_feed(data: np.ndarray, rate: int, sample: str = "-", name: str = "output.wav") -> np.ndarray:
    """The 1-D 16 kHz signal get_timing.py gives silero for a file read as (frames, channels)
    float32: torchaudio.load, torchaudio's resampler to 16 kHz when the rate differs. A file
    with more than one channel stops upstream's script (silero takes one), so it is an error
    here too."""
    data = np.asarray(data, dtype=np.float32)
    if data.ndim == 2:
        if data.shape[1] != 1:
            raise InputError(sample, f"{name} has {data.shape[1]} channels: upstream's get_timing.py "
                                     "takes one (the official timing column needs mono)", "official-channels")
        data = data[:, 0]
    return torchaudio_resample(data, int(rate), SR) if rate != SR else np.ascontiguousarray(data)


def adaptation_feed(data: np.ndarray, rate: int) -> np.ndarray:
    """(channels, frames) float32 at 16 kHz as eval_general_before_after.py loads a file:
    torchaudio.load, each channel resampled to 16 kHz when the rate differs."""
    data = np.asarray(data, dtype=np.float32)
    chans = data.T if data.ndim == 2 else data[None, :]
    if rate == SR:
        return np.ascontiguousarray(chans)
    return np.stack([torchaudio_resample(c, int(rate), SR) for c in chans])
