"""SenseVoiceSmall (FunAudioLLM) through FunASR, from a local folder, as the Bailing assistant runs it.

Bailing (wwbin2017/bailing @ 0f74b4c, bailing/asr.py `FunASR`, config/config.yaml) builds
`funasr.AutoModel(model=<SenseVoiceSmall folder>, vad_kwargs={"max_single_segment_time": 30000},
disable_update=True)` and transcribes each turn with `generate(language="auto", use_itn=True,
batch_size_s=60)`, then `rich_transcription_postprocess` (which drops SenseVoice's language, emotion
and event tags). The same here, on the turn's 16 kHz samples instead of a temporary WAV file.
FunASR is not in the default environment (it brings torch, torchaudio and modelscope): without it,
one line says how to get it; the weights are never downloaded (`disable_update`, a local folder).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from pathlib import Path

import numpy as np

from duplexeval_common.errors import MissingDependency
from duplexeval_common.hashing import sha256_file
from duplexeval_common.settings import Setting, Spec

from duplexeval_runner import deps

DIR_ENV = "SENSEVOICE_DIR"
# funasr as MTR-DuplexBench's envs/bailing pins it
HINT = ("pip install funasr==1.2.7 (with torch==2.13.0 and torchaudio); weights: a copy of "
        f"FunAudioLLM/SenseVoiceSmall in ${DIR_ENV} or asr_args model")
LANGUAGES = ("auto", "zh", "en", "yue", "ja", "ko", "nospeech")


class SenseVoiceASR:
    SETTINGS = Spec(
        Setting("model", str, None, f"the local SenseVoiceSmall folder (null: ${DIR_ENV})", nonempty=True),
        Setting("language", str, "auto", "the language spoken, or auto", choices=LANGUAGES),
        Setting("use_itn", bool, True, "inverse text normalization (punctuation, numbers)"),
        Setting("device", str, "cpu", "torch device (cpu, cuda:0, ...)", nonempty=True))
    deterministic = True
    model_name = "sensevoice"

    def __init__(self, model: str | None = None, language: str = "auto", use_itn: bool = True,
                 device: str = "cpu"):
        value = model or os.environ.get(DIR_ENV, "")
        if not value:
            raise MissingDependency(f"SenseVoice (no model folder: ${DIR_ENV} is not set)", HINT)
        self.path = Path(value).expanduser()
        if not (self.path / "model.pt").is_file():
            raise MissingDependency(f"SenseVoice ({self.path} has no model.pt)", HINT)
        if importlib.util.find_spec("funasr") is None:  # found without importing it (torch loads then)
            raise MissingDependency("SenseVoice (funasr is not installed)", HINT)
        self.language, self.use_itn, self.device = language, bool(use_itn), device
        self._model = None

    def load(self) -> None:
        if self._model is None:
            funasr = _require_funasr()
            self._model = funasr.AutoModel(model=str(self.path), vad_kwargs={"max_single_segment_time": 30000},
                                           disable_update=True, device=self.device)

    def transcribe(self, audio16k: np.ndarray) -> str:
        self.load()
        from funasr.utils.postprocess_utils import rich_transcription_postprocess
        audio = np.asarray(audio16k, dtype=np.float32)
        if len(audio) == 0:
            return ""
        res = self._model.generate(input=audio, cache={}, language=self.language, use_itn=self.use_itn,
                                   batch_size_s=60)
        return " ".join(rich_transcription_postprocess(r.get("text", "")) for r in res).strip()

    def settings(self) -> dict:
        return {"backend": "sensevoice", "model": str(self.path), "language": self.language,
                "use_itn": self.use_itn, "device": self.device, "batch_size_s": 60,
                "max_single_segment_time_ms": 30000}

    def record(self) -> dict:
        return {"model": "SenseVoiceSmall", "path": str(self.path), "files": {"model.pt": sha256_file(self.path / "model.pt")},
                "engine": f"funasr {deps.version('funasr')}"}


def _require_funasr():
    try:
        return importlib.import_module("funasr")
    except ImportError:
        raise MissingDependency("SenseVoice (funasr is not installed)", HINT) from None
