"""Per-sample transcription into the official output.json, our transcript.json and vad.json.

For user interruption the official ASR step transcribes only the audio from
the end of the interruption R on and adds R back to every word time; the
same is done here so official numbers stay comparable.

Stereo files: `channel` picks what the ASR and the VAD hear: "mix" (the mean of the channels,
as the official asr.py averages to mono), "left" or "right" (MTR-DuplexBench: left user,
right model). A mono file is used as it is whatever the setting (recorded as "mono").

The file is resampled to 16 kHz once; the VAD runs on the whole (channel-selected) file and
writes vad.json; the ASR runs on the same samples, cropped at R for user_interruption.
Digital silence is not sent to the ASR (an empty transcript). Words are kept as the backend
gives them, a null end included (null in transcript.json and, as upstream, in output.json);
a word whose span holds no VAD speech gets `"no_speech": true` in transcript.json.
"""

from __future__ import annotations

import numpy as np

from duplexeval_common import wavio
from duplexeval_common.errors import DuplexEvalError, SampleError
from duplexeval_common.stage import SampleContext

from .backends import ASR_RATE, Backend, Word
from .vad import SileroVad, in_silence, vad_record

_ROUND = 6  # microseconds: removes float noise from adding the crop offset
CHANNELS = ("mix", "left", "right")


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


def check_channel(channel: str) -> None:
    if channel not in CHANNELS:
        raise DuplexEvalError(f"asr-aligner: channel must be one of {', '.join(CHANNELS)}, not {channel!r}")


def select_channel(data: np.ndarray, channel: str, sample: str = "-") -> tuple[np.ndarray, str]:
    """data: (frames, channels). Returns (mono float32, what was used)."""
    n = data.shape[1]
    if n == 1:
        return np.ascontiguousarray(data[:, 0], dtype=np.float32), "mono"
    if channel == "mix":
        return data.mean(axis=1, dtype=np.float64).astype(np.float32), f"mix of {n}"
    if n != 2:
        raise SampleError(sample, f"output.wav has {n} channels; channel {channel!r} needs 2 (use mix)")
    return np.ascontiguousarray(data[:, 0 if channel == "left" else 1], dtype=np.float32), channel


def load_audio(ctx: SampleContext, channel: str) -> tuple[np.ndarray, str]:
    data, sr = ctx.read_wav("output.wav", channels=None, mono=False)
    mono, used = select_channel(data, channel, ctx.id)
    return wavio.resample(mono, sr, ASR_RATE), used


def transcribe_sample(ctx: SampleContext, backend: Backend, vad: SileroVad | None = None,
                      channel: str = "mix") -> None:
    offset = crop_offset(ctx)
    provenance = None
    audio16 = None
    used = None
    if ctx.has_input("output.wav") or not getattr(backend, "from_inputs", False):
        audio16, used = load_audio(ctx, channel)
        duration = len(audio16) / ASR_RATE
        if not 0.0 <= offset <= duration:
            raise SampleError(ctx.id, f"interruption end {offset} s lies outside output.wav "
                                      f"[0, {duration:.3f}] s")
    if getattr(backend, "from_inputs", False):
        words, provenance = backend.words_for(ctx)
        if provenance.get("offset_s") is not None:
            offset = float(provenance["offset_s"])
    else:
        crop = audio16[int(offset * ASR_RATE):]  # as the official asr.py crops
        words = shift(backend.transcribe(crop), offset) if np.any(crop) else []
    segments = None
    if vad is not None and audio16 is not None:
        record = vad_record(vad, audio16, used)
        ctx.write_json("vad.json", record, "vad")
        segments = [(s["start"], s["end"]) for s in record["segments"]]
    ctx.write_json("output.json", official_output(words), "output")
    rows = []
    for w in words:
        row = {"text": w.text, "start": w.start, "end": w.end, "probability": w.probability}
        if segments is not None:
            row["no_speech"] = in_silence(w, segments)
        rows.append(row)
    transcript = {
        "backend": backend.name, "model": backend.model, "model_sha256": backend.model_sha256,
        "settings": backend.settings, "text": " ".join(w.text for w in words), "offset_s": offset,
        "language": backend.settings.get("language"), "channel": used or channel, "words": rows}
    if provenance is not None:
        transcript["precomputed"] = provenance
    ctx.write_json("transcript.json", transcript, "transcript")
