"""Per-sample transcription into the official output.json and our transcript.json.

For user interruption the official ASR step transcribes only the audio from
the end of the interruption R on and adds R back to every word time; the
same is done here so official numbers stay comparable.
"""

from __future__ import annotations

from duplexeval_common import wavio
from duplexeval_common.errors import SampleError
from duplexeval_common.stage import SampleContext

from .backends import ASR_RATE, Backend, Word

_ROUND = 6  # microseconds: removes float noise from adding the crop offset


def crop_offset(ctx: SampleContext) -> float:
    if ctx.sample.task != "user_interruption":
        return 0.0
    ann = ctx.read_json("interrupt.json", "interrupt")
    return float(ann[0]["timestamp"][1])


def official_output(words: list[Word]) -> dict:
    return {"text": " ".join(w.text for w in words),
            "chunks": [{"text": w.text, "timestamp": [w.start, w.end]} for w in words]}


def shift(words: list[Word], offset: float) -> list[Word]:
    return [Word(w.text, round(w.start + offset, _ROUND),
                 None if w.end is None else round(w.end + offset, _ROUND),
                 None if w.probability is None else round(w.probability, 4)) for w in words]


def transcribe_sample(ctx: SampleContext, backend: Backend) -> None:
    audio, sr = ctx.read_wav("output.wav")
    offset = crop_offset(ctx)
    if not 0.0 <= offset <= len(audio) / sr:
        raise SampleError(ctx.id, f"interruption end {offset} s lies outside output.wav "
                                  f"[0, {len(audio) / sr:.3f}] s")
    start = int(offset * sr)  # as the official asr.py crops
    audio16 = wavio.resample(audio[start:], sr, ASR_RATE)
    words = shift(backend.transcribe(audio16), offset) if len(audio16) else []
    ctx.write_json("output.json", official_output(words), "output")
    ctx.write_json("transcript.json", {
        "backend": backend.name, "model": backend.model, "model_sha256": backend.model_sha256,
        "settings": backend.settings, "text": " ".join(w.text for w in words), "offset_s": offset,
        "language": backend.settings.get("language"),
        "words": [{"text": w.text, "start": w.start, "end": w.end, "probability": w.probability}
                  for w in words]}, "transcript")
