"""The espeak-ng binary as a TTS engine (formant synthesis; deterministic).

rate r speaks at round(160 * r) words per minute (`-s`); r = 1.0 is 160 wpm, the
engine's output before rates existed. A voice is a language name of `espeak-ng --voices`
(en-us, en-gb, de, ...), optionally with a variant (`en-us+f3`).
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import soundfile as sf

from duplexeval_common.errors import DuplexEvalError, MissingDependency
from duplexeval_common.settings import Spec

from .engines import RATE, voice_setting

DEFAULT_VOICE = "en-us"
BASE_WPM = 160  # words per minute at rate 1.0
HINT = "apt-get install espeak-ng"


def _binary() -> str:
    binary = shutil.which("espeak-ng")
    if binary is None:
        raise MissingDependency("tts engine 'espeak-ng' (binary not on PATH)", HINT)
    return binary


@functools.lru_cache(maxsize=1)
def _voice_table() -> tuple[list[str], frozenset[str]]:
    """(the language names, every name -v accepts: languages, voice files and their basenames)."""
    out = subprocess.run([_binary(), "--voices"], capture_output=True, text=True).stdout
    languages, accepted = [], set()
    for line in out.splitlines()[1:]:
        cols = line.split()
        if len(cols) < 5:
            continue
        languages.append(cols[1])
        accepted.update({cols[1], cols[4], cols[4].rsplit("/", 1)[-1]})
    return sorted(set(languages)), frozenset(accepted)


class EspeakEngine:
    name = "espeak-ng"
    SETTINGS = Spec(voice_setting(DEFAULT_VOICE, "an espeak-ng voice (a variant after +)"), RATE)
    model_sha256 = None
    deterministic = True

    @staticmethod
    def available_voices() -> list[str]:
        return _voice_table()[0]

    def __init__(self, voice: str | None = None, rate: float = 1.0):
        from .engines import check_rate, unknown_voice
        self.rate = check_rate(self.name, rate)
        self.binary = _binary()
        self.voice = DEFAULT_VOICE if voice is None else voice
        known, accepted = _voice_table()
        if self.voice.split("+", 1)[0] not in accepted:
            raise unknown_voice(self.name, self.voice, known, " (a variant may follow, e.g. en-us+f3)")
        self.speed = int(round(BASE_WPM * self.rate))
        version = subprocess.run([self.binary, "--version"], capture_output=True, text=True).stdout.strip()
        self.settings = {"espeak_ng": version, "speed_wpm": self.speed}
        self.sample_rate = self._run("a")[1]  # fails early on a voice espeak-ng cannot load

    def _run(self, text: str) -> tuple[np.ndarray, int]:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "out.wav"
            r = subprocess.run([self.binary, "-v", self.voice, "-s", str(self.speed), "-w", str(out), "--", text],
                               capture_output=True, text=True)
            if r.returncode != 0 or not out.is_file():
                msg = (r.stderr or r.stdout).strip().splitlines()
                raise DuplexEvalError(f"espeak-ng failed (voice {self.voice!r}): {msg[0] if msg else r.returncode}")
            audio, sr = sf.read(str(out), dtype="float32", always_2d=True)
        return audio.mean(axis=1), int(sr)

    def synthesize(self, text: str) -> np.ndarray:
        return self._run(text)[0]
