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

MTR-DuplexBench rounds (a sample with round.json, docs/mtr.md): the model's turn starts at the
round's `start_s` (before it, output.wav holds the ground-truth history), so output.wav is
cropped there the same way (`offset_s` = start_s, word times shifted back onto the dialogue
timeline), and here the VAD hears the same crop: vad.json's segments are the crop's, shifted
by start_s, with `offset_s` recorded (its duration_s stays the whole file's).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from duplexeval_common import wavio
from duplexeval_common.errors import DuplexEvalError, SampleError
from duplexeval_common.stage import SampleContext

from .backends import ASR_RATE, Backend, Word
from .vad import SileroVad, in_silence, vad_record

_ROUND = 6  # microseconds: removes float noise from adding the crop offset
CHANNELS = ("mix", "left", "right")
ROUND_FILE = "round.json"


@dataclass(frozen=True)
class Crop:
    """Where the ASR starts listening in output.wav: `offset` seconds (0 = the whole file)."""
    offset: float
    what: str = ""        # names the offset in errors ("interruption end", "round start")
    vad: bool = False     # the VAD hears the crop too (rounds) instead of the whole file


def crop_offset(ctx: SampleContext) -> Crop:
    """The crop of a sample: a round (round.json) starts at its start_s; user_interruption at
    the end of the interruption R (as the official asr.py); anything else is not cropped."""
    if ctx.has_input(ROUND_FILE):
        return Crop(round_start(ctx), "round start", vad=True)
    if ctx.sample.task == "user_interruption":
        ann = ctx.read_json("interrupt.json", "interrupt")
        return Crop(float(ann[0]["timestamp"][1]), "interruption end")
    return Crop(0.0)


def round_start(ctx: SampleContext) -> float:
    """start_s of the sample's round.json (one line naming the sample when it cannot be read)."""
    rnd = ctx.read_json(ROUND_FILE)
    start = rnd.get("start_s") if isinstance(rnd, dict) else None
    if isinstance(start, bool) or not isinstance(start, (int, float)) or not math.isfinite(start):
        raise SampleError(ctx.id, f"{ROUND_FILE} has no numeric start_s (got {start!r})")
    return float(start)


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
    crop = crop_offset(ctx)
    offset = crop.offset
    provenance = None
    audio16 = None
    used = None
    if ctx.has_input("output.wav") or not getattr(backend, "from_inputs", False):
        audio16, used = load_audio(ctx, channel)
        duration = len(audio16) / ASR_RATE
        if not 0.0 <= offset <= duration:
            raise SampleError(ctx.id, f"{crop.what} {offset} s lies outside output.wav "
                                      f"[0, {duration:.3f}] s")
    start = int(offset * ASR_RATE)  # as the official asr.py crops
    if getattr(backend, "from_inputs", False):
        words, provenance = backend.words_for(ctx)
        if provenance.get("offset_s") is not None:
            offset = float(provenance["offset_s"])
    else:
        part = audio16[start:]
        words = shift(backend.transcribe(part), offset) if np.any(part) else []
    segments = None
    if vad is not None and audio16 is not None:
        if crop.vad:
            record = vad_record(vad, audio16[start:], used, offset=crop.offset, total=len(audio16))
        else:
            record = vad_record(vad, audio16, used)
        ctx.write_json("vad.json", record, "vad")
        segments = [(s["start"], s["end"]) for s in record["segments"]]
    ctx.write_json("output.json", official_output(words), "output")
    transcript = transcript_record(backend, words, offset, used or channel, segments)
    if provenance is not None:
        transcript["precomputed"] = provenance
    ctx.write_json("transcript.json", transcript, "transcript")


def transcript_record(backend: Backend, words: list[Word], offset: float, channel: str,
                      segments: list[tuple[float, float]] | None) -> dict:
    """transcript.json's fields (schemas/transcript.schema.json); `segments`: VAD speech for the
    no_speech flag (None: no VAD, no flag)."""
    rows = []
    for w in words:
        row = {"text": w.text, "start": w.start, "end": w.end, "probability": w.probability}
        if segments is not None:
            row["no_speech"] = in_silence(w, segments)
        rows.append(row)
    return {"backend": backend.name, "model": backend.model, "model_sha256": backend.model_sha256,
            "settings": backend.settings, "text": " ".join(w.text for w in words), "offset_s": offset,
            "language": backend.settings.get("language"), "channel": channel, "words": rows}
