"""NVIDIA Parakeet-TDT (NeMo), as the official Full-Duplex-Bench asr.py uses it.

The official step loads nvidia/parakeet-tdt-0.6b-v2 with ASRModel.from_pretrained (a
download, and CUDA); here the model comes only from a local `.nemo` file given as `model`,
restored on the CPU. NeMo is an optional extra: without it, or without the file, the stage
stops with an install hint; nothing is downloaded. As in the official step, the audio goes
to NeMo as a temporary WAV file and the words are read from `timestamp["word"]`.
"""

from __future__ import annotations

import importlib.metadata
import os
import tempfile
from pathlib import Path

import numpy as np

from duplexeval_common import optional, wavio
from duplexeval_common.errors import MissingDependency
from duplexeval_common.hashing import sha256_file
from duplexeval_common.settings import Setting, Spec

from .backends import ASR_RATE, Word, cpu_threads

NEMO_HINT = ("NeMo is an optional extra, not in requirements.txt: pip install -c constraints.txt "
             "'nemo_toolkit[asr]' on a machine that has it")
MODEL_NAME = "parakeet-tdt-0.6b-v2"


class Parakeet:
    name = "parakeet"
    SETTINGS = Spec(
        Setting("model", str, None, f"the local {MODEL_NAME}.nemo file (nothing is downloaded)", nonempty=True),
        Setting("batch_size", int, 1, "files NeMo transcribes at once", ge=1, le=1024),
        cpu_threads(2))

    def __init__(self, model: str | None = None, batch_size: int = 1, cpu_threads: int = 2):
        if model is None or not Path(model).expanduser().is_file():
            raise MissingDependency(f"ASR backend 'parakeet' model ({model or 'no model given'})",
                                    f"give model=<local {MODEL_NAME}.nemo file> (nothing is downloaded); {NEMO_HINT}")
        asr = optional.import_optional("ASR backend 'parakeet'", "nemo.collections.asr", NEMO_HINT)  # after the file check
        import torch
        torch.set_num_threads(cpu_threads)
        path = Path(model).expanduser()
        self.model = str(path)
        self.model_sha256 = sha256_file(path)
        try:
            nemo_version = importlib.metadata.version("nemo_toolkit")
        except importlib.metadata.PackageNotFoundError:
            nemo_version = "unknown"
        self.settings = {"timestamps": "word", "batch_size": batch_size, "device": "cpu",
                         "cpu_threads": cpu_threads, "nemo_toolkit": nemo_version, "language": "en",
                         "input": "temporary 16 kHz WAV"}
        self._threads = cpu_threads
        self._model = asr.models.ASRModel.restore_from(str(path), map_location="cpu")
        self._model.eval()

    def transcribe(self, audio: np.ndarray) -> list[Word]:
        import torch
        torch.set_num_threads(self._threads)
        fd, tmp = tempfile.mkstemp(suffix=".wav")
        os.close(fd)
        try:
            wavio.write_wav(Path(tmp), audio, ASR_RATE)
            out = self._model.transcribe([tmp], timestamps=True, batch_size=self.settings["batch_size"])
        finally:
            os.remove(tmp)
        hyp = out[0][0] if isinstance(out, tuple) else out[0]
        words = []
        for w in (getattr(hyp, "timestamp", None) or {}).get("word", []):
            text = str(w.get("word", w.get("char", ""))).strip()
            if text:
                end = w.get("end")
                words.append(Word(text, float(w["start"]), None if end is None else float(end), None))
        return words
