"""WAV reading with the checks every stage needs, and atomic WAV writing.

Audio is float32 mono in [-1, 1] inside the harness and 16-bit PCM on disk.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import soundfile as sf

from .errors import SampleError
from .jsonio import atomic_write_bytes


def read_wav(path: Path, sample: str = "-", rate: int | None = None,
             channels: int | None = 1, mono: bool = True) -> tuple[np.ndarray, int]:
    """Read a WAV file as float32; reject anything a metric could misread.

    Raises SampleError naming the sample for a missing, corrupt, empty or
    non-finite file, or one of an unexpected rate or channel count.
    """
    path = Path(path)
    name = path.name
    if not path.is_file():
        raise SampleError(sample, f"{name} is missing")
    try:
        data, sr = sf.read(str(path), dtype="float32", always_2d=True)
    except Exception as exc:  # soundfile raises several types for bad files
        raise SampleError(sample, f"{name} is not a readable WAV file ({exc})") from None
    if data.shape[0] == 0:
        raise SampleError(sample, f"{name} is empty")
    if channels is not None and data.shape[1] != channels:
        raise SampleError(sample, f"{name} has {data.shape[1]} channels, expected {channels}")
    if rate is not None and sr != rate:
        raise SampleError(sample, f"{name} has rate {sr} Hz, expected {rate} Hz")
    if not np.isfinite(data).all():
        raise SampleError(sample, f"{name} contains non-finite samples")
    audio = data.mean(axis=1) if mono else data
    return np.ascontiguousarray(audio, dtype=np.float32), int(sr)


def wav_bytes(audio: np.ndarray, sr: int) -> bytes:
    """16-bit PCM WAV bytes; clipping (not wrapping) at full scale."""
    audio = np.asarray(audio, dtype=np.float64)
    if not np.isfinite(audio).all():
        raise ValueError("audio contains non-finite samples")
    pcm = np.clip(np.round(audio * 32767.0), -32768, 32767).astype("<i2")
    buf = io.BytesIO()
    sf.write(buf, pcm, sr, subtype="PCM_16", format="WAV")
    return buf.getvalue()


def write_wav(path: Path, audio: np.ndarray, sr: int) -> None:
    atomic_write_bytes(Path(path), wav_bytes(audio, sr))


def duration_s(path: Path) -> float:
    info = sf.info(str(path))
    return info.frames / info.samplerate


def resample(audio: np.ndarray, sr_in: int, sr_out: int) -> np.ndarray:
    """Band-limited polyphase resampling (scipy.signal.resample_poly's numbers, polyphase.py),
    exact output length."""
    if sr_in == sr_out:
        return np.asarray(audio, dtype=np.float32)
    from math import gcd

    from .polyphase import resample_poly
    g = gcd(sr_in, sr_out)
    out = resample_poly(np.asarray(audio, dtype=np.float64), sr_out // g, sr_in // g)
    n = int(round(len(audio) * sr_out / sr_in))
    out = out[:n] if len(out) >= n else np.pad(out, (0, n - len(out)))
    return out.astype(np.float32)


def fit_length(audio: np.ndarray, n: int) -> np.ndarray:
    """Pad with silence or trim to exactly n samples."""
    audio = np.asarray(audio, dtype=np.float32)
    if len(audio) >= n:
        return audio[:n]
    return np.concatenate([audio, np.zeros(n - len(audio), dtype=np.float32)])
