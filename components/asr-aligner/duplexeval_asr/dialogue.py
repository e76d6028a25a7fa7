"""Dialogue mode (config `"source": "dialogue"`): both channels of a two-channel dialogue.

MTR-DuplexBench's dialogue-quality dialogues come as one stereo `dialogue.wav` per sample (left
the user, right the model, as the release's README says; benchmarks/mtr/README.md). This mode selects the
samples that have a dialogue.wav (the others are not this stage's), transcribes each channel on
its own and writes, per sample, `user.json` (left) and `model.json` (right) in the shape of
schemas/turn-segmenter-channel.schema.json, which the turn-segmenter reads:

- every transcript.json field of that channel (backend, model, model_sha256, settings, text,
  offset_s = 0, language, channel "left"/"right", words with their `no_speech` flag);
- `role` ("user"/"model"), `duration_s` (the channel's length), `vad_segments` (Silero VAD of
  that channel, exactly as vad.json's segments) and `vad` (the VAD model, its hash, settings);
- `vad_probs` {window_s, threshold, values}: the speech probability Silero gave each window of
  512 samples (0.032 s; the last one zero-padded), rounded to 3 decimals, from the same pass of
  the model as vad_segments, and the threshold those segments used. Silero ends a segment at
  the first window below its lower threshold (0.35), after the probability has decayed for a
  window or more past the speech, and pads it by 30 ms, so a segment ends 25-140 ms after the
  speech (mtr-mini's dialogue-quality dialogue); the probabilities let the turn-segmenter place a
  turn's end closer (its offline rule gap-v2);
- `segments` [{start, end, text}]: the ASR's own segments when the backend gives them
  (backends.words_and_segments: faster-whisper, whisper-timestamped, stable-ts); else absent.
  A segment is split where two of its words lie more than `segments_split_gap_s` (1.0 s,
  recorded) apart: faster-whisper's VAD filter joins the speech chunks before decoding, so one
  segment can otherwise span a long silence in which the other party takes a whole turn (the
  turn-segmenter's LLM reads each segment as one line). The pieces' text is their words joined.

Times are seconds of the dialogue (0 = its start). A dialogue.wav that is not stereo is a
one-line failure of that sample. A silent channel gives no words and no VAD segments.
"""

from __future__ import annotations

import numpy as np

from duplexeval_common import schemas, wavio
from duplexeval_common.errors import SampleError
from duplexeval_common.samples import Inputs, Sample
from duplexeval_common.stage import SampleContext

from .align import shift, transcript_record
from .backends import ASR_RATE, Backend, Segment, words_and_segments
from .vad import WINDOW, SileroVad, vad_record

DIALOGUE_FILE = "dialogue.wav"
# (file stem, channel index, what transcript.json calls the channel)
ROLES = (("user", 0, "left"), ("model", 1, "right"))
CHANNEL_SCHEMA = "turn-segmenter-channel"
SPLIT_GAP_S = 1.0
_ROUND = 6
PROB_DECIMALS = 3


def dialogue_samples(inputs: Inputs, _config: dict | None = None) -> list[Sample]:
    """The samples that have a dialogue.wav, in the inputs' order."""
    return [s for s in inputs.samples() if inputs.find(s, DIALOGUE_FILE) is not None]


def split_segments(segments: list[Segment], gap_s: float = SPLIT_GAP_S) -> list[Segment]:
    """Each segment, split between two consecutive words more than gap_s apart (a null end
    counts as the word's start); an unsplit segment keeps its text and times. A piece runs
    from its first word's start to its last word's end, except that the first piece keeps the
    segment's start and the last its end."""
    out: list[Segment] = []
    for seg in segments:
        groups: list[list] = []
        for w in seg.words:
            prev = groups[-1][-1] if groups else None
            if prev is None or w.start - (prev.start if prev.end is None else prev.end) > gap_s:
                groups.append([w])
            else:
                groups[-1].append(w)
        if len(groups) <= 1:
            out.append(seg)
            continue
        for i, g in enumerate(groups):
            start = seg.start if i == 0 else g[0].start
            last = g[-1].start if g[-1].end is None else g[-1].end
            end = seg.end if i == len(groups) - 1 else last
            out.append(Segment(" ".join(w.text for w in g), start, max(start, end), tuple(g)))
    return out


def channel_record(backend: Backend, vad_model: SileroVad, audio16: np.ndarray, role: str,
                   side: str) -> dict:
    """user.json / model.json of one channel (16 kHz mono samples of the dialogue)."""
    if np.any(audio16):
        words, segments = words_and_segments(backend, audio16)
    else:  # digital silence is not sent to the ASR
        words = []
        segments = [] if hasattr(backend, "transcribe_segments") else None
    words = shift(words, 0.0)  # the same rounding as transcript.json's words
    segs, probs = vad_model.segments_and_probs(audio16)
    vad = vad_record(vad_model, audio16, side, segments=segs)
    spans = [(s["start"], s["end"]) for s in vad["segments"]]
    record = transcript_record(backend, words, 0.0, side, spans)
    record["role"] = role
    record["duration_s"] = vad["duration_s"]
    record["vad_segments"] = vad["segments"]
    record["vad"] = {k: vad[k] for k in ("model", "model_sha256", "settings")}
    record["vad_probs"] = {"window_s": round(WINDOW / ASR_RATE, 6), "threshold": vad_model.settings["threshold"],
                           "values": [round(float(p), PROB_DECIMALS) for p in probs]}
    if segments is not None:
        record["segments"] = [{"start": round(s.start, _ROUND), "end": round(s.end, _ROUND), "text": s.text}
                              for s in split_segments(segments)]
        record["segments_split_gap_s"] = SPLIT_GAP_S
    return record


def transcribe_dialogue(ctx: SampleContext, backend: Backend, vad: SileroVad) -> None:
    data, sr = ctx.read_wav(DIALOGUE_FILE, channels=None, mono=False)
    if data.shape[1] != 2:
        raise SampleError(ctx.id, f"{DIALOGUE_FILE} has {data.shape[1]} channel(s); the dialogue mode needs "
                                  "a stereo file (left the user, right the model)")
    records = {}
    for role, index, side in ROLES:
        audio16 = wavio.resample(np.ascontiguousarray(data[:, index], dtype=np.float32), sr, ASR_RATE)
        records[role] = channel_record(backend, vad, audio16, role, side)
    for role, record in records.items():
        schemas.validate("transcript", record, ctx.id)  # a transcript.json of its channel, too
        ctx.write_json(f"{role}.json", record, CHANNEL_SCHEMA)
