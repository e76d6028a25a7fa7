"""The flite binary (CMU Flite) as a TTS engine; deterministic.

A voice is one the binary lists with `flite -lv` (the Debian flite 2.2: kal, awb_time, kal16,
awb, rms, slt) or a path to a `.flitevox` file. flite falls back to its default voice on a
name it does not know, so names are checked against that list first. rate r sets the
duration stretch to 1/r (`--setf duration_stretch=...`); r = 1.0 is flite's own timing.
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
from duplexeval_common.hashing import sha256_file
from duplexeval_common.settings import Spec

from .engines import RATE, voice_setting

DEFAULT_VOICE = "slt"
HINT = "apt-get install flite"


def _binary() -> str:
    binary = shutil.which("flite")
    if binary is None:
        raise MissingDependency("tts engine 'flite' (binary not on PATH)", HINT)
    return binary


@functools.lru_cache(maxsize=1)
def _listed() -> list[str]:
    out = subprocess.run([_binary(), "-lv"], capture_output=True, text=True).stdout
    _, _, names = out.partition(":")
    return names.split()


@functools.lru_cache(maxsize=1)
def _version() -> str:
    out = subprocess.run([_binary(), "--version"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if "version:" in line:
            return line.split("version:", 1)[1].strip()
    return "unknown"


class FliteEngine:
    name = "flite"
    SETTINGS = Spec(voice_setting(DEFAULT_VOICE, "a flite voice, or a .flitevox file"), RATE)
    deterministic = True

    @staticmethod
    def available_voices() -> list[str]:
        return _listed()

    def __init__(self, voice: str | None = None, rate: float = 1.0):
        from .engines import check_rate, unknown_voice
        self.rate = check_rate(self.name, rate)
        self.binary = _binary()
        self.voice = DEFAULT_VOICE if voice is None else voice
        self.model_sha256 = None
        if self.voice.endswith(".flitevox"):
            if not Path(self.voice).is_file():
                raise DuplexEvalError(f"tts engine 'flite': voice file {self.voice} not found")
            self.model_sha256 = sha256_file(Path(self.voice))
        elif self.voice not in _listed():
            raise unknown_voice(self.name, self.voice, _listed(), " or a path to a .flitevox file")
        self.stretch = repr(1.0 / self.rate)
        self.settings = {"flite": _version(), "duration_stretch": self.stretch}
        self.sample_rate = self._run("a")[1]

    def _run(self, text: str) -> tuple[np.ndarray, int]:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "out.wav"
            # text goes through a file, so a text that starts with "-" is never an option
            src = Path(tmp) / "in.txt"
            src.write_text(text, encoding="utf-8")
            r = subprocess.run([self.binary, "-voice", self.voice, "--setf", f"duration_stretch={self.stretch}",
                                "-f", str(src), "-o", str(out)], capture_output=True, text=True)
            if r.returncode != 0 or not out.is_file() or out.stat().st_size <= 44:
                msg = (r.stderr or r.stdout).strip().splitlines()
                raise DuplexEvalError(f"flite failed (voice {self.voice!r}): {msg[0] if msg else 'no audio'}")
            audio, sr = sf.read(str(out), dtype="float32", always_2d=True)
        return audio.mean(axis=1), int(sr)

    def synthesize(self, text: str) -> np.ndarray:
        return self._run(text)[0]
