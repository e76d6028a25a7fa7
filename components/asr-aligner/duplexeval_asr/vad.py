"""Speech segments of output.wav (vad.json), and the flag for words said in silence.

Silero VAD from the silero-vad pip package (its bundled ONNX model, one onnxruntime
thread: silero's own session options), run on the same 16 kHz channel the ASR hears, with
silero's get_speech_timestamps defaults (threshold 0.5, min speech 250 ms, min silence
100 ms, pad 30 ms), as the official eval_backchannel.py uses them, but at the true rate.
Every setting is recorded in vad.json (schemas/vad.schema.json), so the aggregator, the
report and the sensitivity command can read one record instead of recomputing.

The probabilities come from duplexeval_common.vadcache (silero's OnnxWrapper inputs, or its
sequence export of the same network where a start-up check finds it bit-equal) and the
segments from duplexeval_common.vad.segments_from_probs (silero 6.2.3's post-processing, step
for step): the same numbers as silero's get_speech_timestamps, without importing torch, which
silero's own functions need (tests/asr_aligner/test_vad.py compares the two).

A word whose span holds no VAD speech is flagged `no_speech: true` in transcript.json (a
likely hallucination in silence); it is kept, not dropped.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from functools import lru_cache
from pathlib import Path

import numpy as np

from duplexeval_common import optional
from duplexeval_common.hashing import sha256_file
from duplexeval_common.settings import Setting, Spec

from .backends import ASR_RATE, Word

SILERO_HINT = "pip install silero-vad==6.2.3 onnxruntime==1.32.0"
# The stage's `vad` block (schemas/config-asr-aligner.schema.json says the same; a test compares them)
SETTINGS = Spec(
    Setting("threshold", float, 0.5, "speech probability threshold", ge=0, le=1),
    Setting("min_speech_duration_ms", int, 250, "the shortest speech segment, in ms", ge=0),
    Setting("min_silence_duration_ms", int, 100, "the shortest silence that ends a segment, in ms", ge=0),
    Setting("speech_pad_ms", int, 30, "padding added to each side of a segment, in ms", ge=0))
DEFAULTS = SETTINGS.defaults()
_ROUND = 3  # ms: segment bounds are multiples of one sample at 16 kHz anyway
WINDOW = 512  # samples per speech probability at 16 kHz (silero's window)


def settings(overrides: dict | None = None) -> dict:
    """The vad block's settings, defaults filled in; one line for an unknown name or a bad value."""
    SETTINGS.check("asr-aligner", dict(overrides or {}), where="vad.", noun="vad settings")
    return {**DEFAULTS, **(overrides or {})}


def _model_file() -> Path:
    spec = importlib.util.find_spec("silero_vad")
    return Path(list(spec.submodule_search_locations)[0]) / "data" / "silero_vad.onnx"


class SileroVad:
    """One loaded ONNX Silero model; `segments(audio16k)` -> [(start_s, end_s)]."""

    def __init__(self, overrides: dict | None = None):
        optional.require("Silero VAD", ["silero_vad", "onnxruntime"], {"silero_vad": SILERO_HINT,
                                                                        "onnxruntime": SILERO_HINT})
        self.settings = settings(overrides)

    def _load(self) -> None:
        from duplexeval_common import vadcache
        vadcache.load_model("onnx")

    def record_head(self) -> dict:
        return {"model": "silero-vad " + importlib.metadata.version("silero-vad") + " (silero_vad.onnx)",
                "model_sha256": _model_sha256(str(_model_file())),
                "settings": {**self.settings, "backend": "onnx", "threads": 1,
                             "onnxruntime": importlib.metadata.version("onnxruntime")},
                "sample_rate": ASR_RATE}

    def segments(self, audio: np.ndarray) -> list[tuple[float, float]]:
        return self.segments_and_probs(audio)[0]

    def segments_and_probs(self, audio: np.ndarray) -> tuple[list[tuple[float, float]], np.ndarray]:
        """The speech segments of `audio` (seconds) and the speech probability of each
        WINDOW-sample window (the last one zero-padded), from one pass of the model: silero's
        get_speech_timestamps is exactly this (reset, each window through the model, then its
        post-processing on the probabilities)."""
        if len(audio) < 512 or not np.any(audio):
            return [], np.zeros(-(-len(audio) // WINDOW), dtype=np.float32)
        from duplexeval_common.vad import segments_from_probs
        from duplexeval_common import vadcache
        self._load()
        x = np.ascontiguousarray(audio, dtype=np.float32)
        probs = vadcache.speech_probs(x)
        ts = segments_from_probs([float(p) for p in probs], len(x), sampling_rate=ASR_RATE,
                                 return_seconds=False, **self.settings)
        return [(round(t["start"] / ASR_RATE, _ROUND), round(t["end"] / ASR_RATE, _ROUND)) for t in ts], probs


@lru_cache(maxsize=None)
def _model_sha256(path: str) -> str:
    return sha256_file(Path(path))


def vad_record(vad: SileroVad, audio: np.ndarray, channel: str, offset: float | None = None,
               total: int | None = None, segments: list[tuple[float, float]] | None = None) -> dict:
    """vad.json of `audio`. A crop (MTR rounds): `audio` starts `offset` seconds into a file of
    `total` samples; the segments are shifted by offset (the file's timeline), duration_s is
    the whole file's and offset_s is recorded. `segments`: vad.segments(audio) when the caller
    has them already (segments_and_probs)."""
    head = vad.record_head()
    head["settings"] = {**head["settings"], "channel": channel}
    shift = offset or 0.0
    record = {**head, "duration_s": round((len(audio) if total is None else total) / ASR_RATE, 6)}
    if offset is not None:
        record["offset_s"] = offset
    record["segments"] = [{"start": round(s + shift, 6), "end": round(e + shift, 6)}
                          for s, e in (vad.segments(audio) if segments is None else segments)]
    return record


def in_silence(word: Word, segments: list[tuple[float, float]]) -> bool:
    """True when no speech segment overlaps the word's span ([start, end], or the start alone
    when end is null)."""
    start = word.start
    end = start if word.end is None else max(word.end, start)
    for s, e in segments:
        if (s < end and e > start) if end > start else (s <= start <= e):
            return False
    return True
