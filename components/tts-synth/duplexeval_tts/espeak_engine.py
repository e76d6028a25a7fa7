"""The espeak-ng binary as a TTS engine (formant synthesis; deterministic)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import soundfile as sf

from duplexeval_common.errors import DuplexEvalError, MissingDependency

DEFAULT_VOICE = "en-us"


class EspeakEngine:
    name = "espeak-ng"
    model_sha256 = None

    def __init__(self, voice: str = DEFAULT_VOICE, speed_wpm: int = 160):
        self.binary = shutil.which("espeak-ng")
        if self.binary is None:
            raise MissingDependency("tts engine 'espeak-ng' (binary not on PATH)", "apt-get install espeak-ng")
        self.voice, self.speed = voice, int(speed_wpm)
        version = subprocess.run([self.binary, "--version"], capture_output=True, text=True).stdout.strip()
        self.settings = {"espeak_ng": version, "speed_wpm": self.speed}
        self.sample_rate = self._run("a")[1]  # fails early on an unknown voice

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
