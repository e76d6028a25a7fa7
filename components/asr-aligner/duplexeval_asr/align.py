"""Per-sample transcription into the official output.json, our transcript.json and vad.json.

What is transcribed, and where listening starts, is the benchmark's rule (its `asr` hook: a list
of duplexeval_common.benchmarks.AsrTarget per sample; the stage's settings name the benchmark):
by default output.wav, whole, into output.json, transcript.json and vad.json. A target may start
listening `offset` seconds in (the ASR hears the audio from there and every word time gets the
offset back, as upstream scorers crop; e.g. Full-Duplex-Bench's interruption end, a multi-round
sample's round start), with the VAD hearing the same crop (`vad_crop`: vad.json's segments are the
crop's, shifted back, with `offset_s` recorded; its duration_s stays the whole file's) or the whole
file.

Stereo files: `channel` picks what the ASR and the VAD hear: "mix" (the mean of the channels,
as the official asr.py averages to mono), "left" or "right". A mono file is used as it is whatever
the setting (recorded as "mono").

The file is resampled to 16 kHz once; the VAD runs on it and writes the target's VAD record; the
ASR runs on the same samples, cropped at the offset. Digital silence is not sent to the ASR (an
empty transcript). Words are kept as the backend gives them, a null end included (null in
transcript.json and, as upstream, in output.json); a word whose span holds no VAD speech gets
`"no_speech": true` in transcript.json.
"""

from __future__ import annotations

import numpy as np

from duplexeval_common import benchmarks, wavio
from duplexeval_common.benchmarks import AsrTarget
from duplexeval_common.errors import DuplexEvalError, SampleError
from duplexeval_common.stage import SampleContext

from .backends import ASR_RATE, Backend, Word
from .vad import SileroVad, in_silence, vad_record

_ROUND = 6  # microseconds: removes float noise from adding the crop offset
CHANNELS = ("mix", "left", "right")


def targets_of(ctx: SampleContext) -> list[AsrTarget]:
    """The benchmark's targets for this sample (its `asr` hook), else output.wav whole (also
    when the settings name no benchmark: the command run by hand)."""
    if not ctx.config.get("benchmark"):
        return [AsrTarget()]
    bench = benchmarks.of_config(ctx.config, "asr-aligner")
    if not bench.has("asr"):
        return [AsrTarget()]
    out = bench.hook("asr")(ctx)
    if not out or not all(isinstance(t, AsrTarget) for t in out):
        raise SampleError(ctx.id, f"benchmark {bench.name}'s asr hook gave no AsrTarget list")
    return out


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


def load_audio(ctx: SampleContext, channel: str, name: str = "output.wav") -> tuple[np.ndarray, str]:
    data, sr = ctx.read_wav(name, channels=None, mono=False)
    mono, used = select_channel(data, channel, ctx.id)
    return wavio.resample(mono, sr, ASR_RATE), used


def transcribe_sample(ctx: SampleContext, backend: Backend, vad: SileroVad | None = None,
                      channel: str = "mix") -> None:
    for target in targets_of(ctx):
        transcribe_target(ctx, target, backend, vad, channel)


def transcribe_target(ctx: SampleContext, target: AsrTarget, backend: Backend, vad: SileroVad | None,
                      channel: str) -> None:
    offset = target.offset
    provenance = None
    audio16 = None
    used = None
    from_inputs = getattr(backend, "from_inputs", False)
    if ctx.has_input(target.audio) or not from_inputs:
        audio16, used = load_audio(ctx, channel, target.audio)
        duration = len(audio16) / ASR_RATE
        if not 0.0 <= offset <= duration:
            raise SampleError(ctx.id, f"{target.what or 'offset'} {offset} s lies outside {target.audio} "
                                      f"[0, {duration:.3f}] s")
    start = int(offset * ASR_RATE)  # as the official asr.py crops
    if from_inputs:
        words, provenance = backend.words_for(ctx, target)
        if provenance.get("offset_s") is not None:
            offset = float(provenance["offset_s"])
    else:
        part = audio16[start:]
        words = shift(backend.transcribe(part), offset) if np.any(part) else []
    segments = None
    if vad is not None and audio16 is not None:
        if target.vad_crop:
            record = vad_record(vad, audio16[start:], used, offset=target.offset, total=len(audio16))
        else:
            record = vad_record(vad, audio16, used)
        ctx.write_json(target.vad, record, "vad")
        segments = [(s["start"], s["end"]) for s in record["segments"]]
    ctx.write_json(target.official, official_output(words), "output")
    transcript = transcript_record(backend, words, offset, used or channel, segments)
    if provenance is not None:
        transcript["precomputed"] = provenance
    ctx.write_json(target.transcript, transcript, "transcript")


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
