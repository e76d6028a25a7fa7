"""Silero VAD: the model files, the audio fed to the model, and segmentation from probabilities.

Speech probabilities (one per 512-sample window at 16 kHz) are computed once per file and
cached (see vadcache.py); every segmentation both columns need is derived from them here by
a re-implementation of silero-vad's get_speech_timestamps post-processing (verified equal to
silero's own function in tests/aggregator/test_vad.py).

Nothing here imports torch: a rescore with a warm cache never loads the model.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
from functools import lru_cache
from math import gcd
from pathlib import Path

import numpy as np

SR = 16000
WINDOW = 512  # samples per probability at 16 kHz
MODEL_FILES = {"onnx": "silero_vad.onnx", "jit": "silero_vad.jit"}
# silero-vad's "sequence" export of the same 16 kHz network (silero_vad.sequence_vad): one
# ONNX call runs a block of windows, the LSTM inside the graph. Where its probabilities are
# bit-equal to MODEL_FILES["onnx"]'s (checked at each worker's start, vadcache.py) it runs in
# its place; the probabilities, the cache and the record stay those of MODEL_FILES["onnx"].
SEQUENCE_FILE = "silero_vad_16k_sequence.onnx"

# eval_backchannel.py: get_speech_timestamps(wav, model, return_seconds=True), library
# defaults, no sampling_rate (so every file is taken as 16 kHz).
OFFICIAL_SETTINGS = {"threshold": 0.5, "min_speech_duration_ms": 250, "min_silence_duration_ms": 100,
                     "speech_pad_ms": 30, "return_seconds": True, "time_resolution": 1,
                     "sampling_rate_passed": False}
# Unified column ("sglang-omni unified duplex metrics", speech detection): silero defaults
# without padding, at the file's true rate.
UNIFIED_SETTINGS = {"threshold": 0.5, "min_speech_duration_ms": 250, "min_silence_duration_ms": 100,
                    "speech_pad_ms": 0, "neg_threshold": 0.35}
FEED_OFFICIAL = "as16000"  # the file's samples, unchanged, told to be 16 kHz


def _data_dir() -> Path:
    spec = importlib.util.find_spec("silero_vad")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("silero-vad is not installed: pip install silero-vad==6.2.3")
    return Path(list(spec.submodule_search_locations)[0]) / "data"


@lru_cache(maxsize=None)
def model_info(backend: str) -> dict:
    path = _data_dir() / MODEL_FILES[backend]
    h = hashlib.sha256(path.read_bytes()).hexdigest()
    info = {"package": "silero-vad", "version": importlib.metadata.version("silero-vad"),
            "backend": backend, "model_file": MODEL_FILES[backend], "model_sha256": h,
            "path": str(path)}
    seq = path.parent / SEQUENCE_FILE
    if backend == "onnx" and seq.is_file():
        info["sequence_model"] = {"file": SEQUENCE_FILE,
                                  "sha256": hashlib.sha256(seq.read_bytes()).hexdigest(),
                                  "used": "where bit-equal to model_file (checked at worker start)"}
    return info


def unified_feed(sr: int, channels: int) -> str:
    """How a file is turned into 16 kHz mono for the unified column (part of the cache key)."""
    mix = "" if channels == 1 else f"mean{channels}-"
    if sr == SR:
        return f"{mix}as16000" if mix else FEED_OFFICIAL
    if sr > SR and sr % SR == 0:
        return f"{mix}decimate{sr // SR}"  # what silero itself does when told a multiple of 16 kHz
    g = gcd(SR, sr)
    return f"{mix}resample_poly{SR // g}/{sr // g}"


def feed_audio(data: np.ndarray, feed: str) -> np.ndarray:
    """data: (frames, channels) float32 as soundfile reads it; returns the 1-D model input."""
    if feed.startswith("mean"):
        mono = data.mean(axis=1, dtype=np.float64).astype(np.float32)
        feed = feed.split("-", 1)[1]
    else:
        if data.shape[1] != 1:
            raise ValueError("more than one channel")
        mono = data[:, 0]
    if feed == FEED_OFFICIAL:
        return np.ascontiguousarray(mono, dtype=np.float32)
    if feed.startswith("decimate"):
        return np.ascontiguousarray(mono[::int(feed[len("decimate"):])], dtype=np.float32)
    if feed.startswith("resample_poly"):
        from .polyphase import resample_poly  # scipy.signal.resample_poly's numbers
        up, down = (int(x) for x in feed[len("resample_poly"):].split("/"))
        return np.ascontiguousarray(resample_poly(mono.astype(np.float64), up, down), dtype=np.float32)
    raise ValueError(f"unknown feed {feed!r}")


def segments_from_probs(probs, audio_length_samples: int, sampling_rate: int = SR,
                        threshold: float = 0.5, min_speech_duration_ms: int = 250,
                        min_silence_duration_ms: int = 100, speech_pad_ms: int = 30,
                        return_seconds: bool = False, time_resolution: int = 1,
                        neg_threshold: float | None = None) -> list[dict]:
    """silero-vad get_speech_timestamps' post-processing, for max_speech_duration_s = inf.

    With no maximum speech length the max-speech cut never fires, so only the hysteresis
    (threshold / neg_threshold), the minimum silence and speech, the padding and the
    seconds conversion remain; each follows silero 6.2.3 step for step.
    """
    window = 512 if sampling_rate == 16000 else 256
    min_speech = sampling_rate * min_speech_duration_ms / 1000
    pad = sampling_rate * speech_pad_ms / 1000
    min_silence = sampling_rate * min_silence_duration_ms / 1000
    if neg_threshold is None:
        neg_threshold = max(threshold - 0.15, 0.01)

    triggered = False
    speeches: list[dict] = []
    current: dict = {}
    temp_end = 0
    for i, p in enumerate(probs):
        cur = window * i
        if p >= threshold and temp_end:
            temp_end = 0
        if p >= threshold and not triggered:
            triggered = True
            current["start"] = cur
            continue
        if p < neg_threshold and triggered:
            if not temp_end:
                temp_end = cur
            if cur - temp_end < min_silence:
                continue
            current["end"] = temp_end
            if current["end"] - current["start"] > min_speech:
                speeches.append(current)
            current = {}
            temp_end = 0
            triggered = False
    if current and audio_length_samples - current["start"] > min_speech:
        current["end"] = audio_length_samples
        speeches.append(current)

    last = len(speeches) - 1
    for i, sp in enumerate(speeches):
        if i == 0:
            sp["start"] = int(max(0, sp["start"] - pad))
        if i != last:
            gap = speeches[i + 1]["start"] - sp["end"]
            if gap < 2 * pad:
                sp["end"] += int(gap // 2)
                speeches[i + 1]["start"] = int(max(0, speeches[i + 1]["start"] - gap // 2))
            else:
                sp["end"] = int(min(audio_length_samples, sp["end"] + pad))
                speeches[i + 1]["start"] = int(max(0, speeches[i + 1]["start"] - pad))
        else:
            sp["end"] = int(min(audio_length_samples, sp["end"] + pad))

    if return_seconds:
        length_s = audio_length_samples / sampling_rate
        for sp in speeches:
            sp["start"] = max(round(sp["start"] / sampling_rate, time_resolution), 0)
            sp["end"] = min(round(sp["end"] / sampling_rate, time_resolution), length_s)
    return speeches


def official_segments(probs, n: int) -> list[dict]:
    """Segments in seconds exactly as eval_backchannel.py gets them."""
    return segments_from_probs(probs, n, threshold=0.5, min_speech_duration_ms=250,
                               min_silence_duration_ms=100, speech_pad_ms=30,
                               return_seconds=True, time_resolution=1)


def unified_segments(probs, n: int) -> list[tuple[int, int, bool]]:
    """Segments as (start, end) 16 kHz sample indices and whether the segment runs to the end."""
    segs = segments_from_probs(probs, n, threshold=0.5, min_speech_duration_ms=250,
                               min_silence_duration_ms=100, speech_pad_ms=0)
    return [(s["start"], s["end"], s["end"] >= n) for s in segs]
