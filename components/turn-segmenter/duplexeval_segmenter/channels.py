"""A dialogue's two channel transcripts: reading, checking, and what the segmenters use of them.

Layout (schemas/turn-segmenter-channel.schema.json): each dialogue is a sample folder
`samples/<subset>/<id>/` holding `user.json` (the user channel: the left channel of an
MTR-DuplexBench stereo file) and `model.json` (the model channel: the right one). Each is the
asr-aligner's transcript.json for that channel (words with start and end in seconds of the
dialogue), optionally with
  segments       ASR segments [{start, end, text}] (e.g. whisper-timestamped's), the lines of the
                 LLM's transcript when given (else made from the words, see `asr_segments`)
  vad_segments   speech [{start, end}] of that channel (vad.json's segments)
  duration_s     the channel's length (the dialogue's end, for the last response window)
  vad_probs      {window_s, threshold, values}: the VAD's speech probability per window (the
                 asr-aligner's dialogue mode), which the offline rule gap-v2 reads for turn ends
A word with a null end counts as a point at its start.
"""

from __future__ import annotations

from dataclasses import dataclass

from duplexeval_common.errors import SampleError
from duplexeval_common.hashing import sha256_file
from duplexeval_common.ipus import group_words
from duplexeval_common.stage import SampleContext

from .voting import finite

ROLES = ("user", "model")
SCHEMA = "turn-segmenter-channel"


@dataclass(frozen=True)
class Segment:
    start: float
    end: float
    text: str


@dataclass(frozen=True)
class Probs:
    """The VAD's speech probability per window of a channel (vad_probs): window k spans
    [k window_s, (k + 1) window_s); threshold is the one its segments used."""
    window_s: float
    threshold: float
    values: tuple[float, ...]


@dataclass
class Channel:
    role: str
    file: str
    sha256: str
    words: list[Segment]            # time-sorted (stable)
    segments: list[Segment] | None  # as given, time-sorted (stable); None when absent
    vad: list[tuple[float, float]] | None
    duration_s: float | None
    probs: Probs | None = None      # vad_probs, when given


def _spans(rows: list, what: str, key: str, need_text: bool, allow_null_end: bool) -> list[Segment]:
    out = []
    for i, r in enumerate(rows):
        s, e = r.get("start"), r.get("end")
        if e is None and allow_null_end:
            e = s
        if not finite(s) or not finite(e):
            raise SampleError(key, f"{what}[{i}] has a start or end that is not a finite number")
        if s < 0 or e < s:
            raise SampleError(key, f"{what}[{i}] spans ({s}, {e}) s: times must be >= 0 with start <= end")
        text = r.get("text", "")
        if need_text and not isinstance(text, str):
            raise SampleError(key, f"{what}[{i}] has no text")
        out.append(Segment(float(s), float(e), text.strip() if isinstance(text, str) else ""))
    return sorted(out, key=lambda x: x.start)


def read_channel(ctx: SampleContext, role: str) -> Channel:
    name = f"{role}.json"
    if not ctx.has_input(name):
        raise SampleError(ctx.id, f"{name} is missing (the {role} channel's transcript; "
                                  "see schemas/turn-segmenter-channel.schema.json)")
    obj = ctx.read_json(name, SCHEMA)
    words = _spans(obj.get("words") or [], f"{name}: words", ctx.id, True, True)
    segs = obj.get("segments")
    segments = None if segs is None else _spans(segs, f"{name}: segments", ctx.id, True, False)
    vad = obj.get("vad_segments")
    vad_spans = None if vad is None else [(s.start, s.end) for s in
                                          _spans(vad, f"{name}: vad_segments", ctx.id, False, False)]
    dur = obj.get("duration_s")
    if dur is not None and (not finite(dur) or dur < 0):
        raise SampleError(ctx.id, f"{name}: duration_s must be a number >= 0, got {dur!r}")
    probs = obj.get("vad_probs")
    if probs is not None:
        values = probs["values"]
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 1 for v in values):
            raise SampleError(ctx.id, f"{name}: vad_probs values must be numbers from 0 to 1")
        probs = Probs(float(probs["window_s"]), float(probs["threshold"]), tuple(float(v) for v in values))
        covered = len(probs.values) * probs.window_s
        if dur is not None and abs(covered - dur) > probs.window_s:
            raise SampleError(ctx.id, f"{name}: vad_probs cover {covered:.3f} s ({len(probs.values)} windows of "
                                      f"{probs.window_s} s), not the channel's duration_s {dur} s")
    return Channel(role, name, sha256_file(ctx.input_path(name)), words, segments, vad_spans,
                   None if dur is None else float(dur), probs)


def asr_segments(ch: Channel, max_word_gap_s: float) -> tuple[list[Segment], str]:
    """The ASR segments the LLM reads: the channel's own `segments` when given, else its words
    grouped by duplexeval_common.ipus.group_words (a line ends after a word that ends a sentence,
    `.`, `!` or `?` possibly followed by a closing quote or bracket, or at a gap to the next word
    over max_word_gap_s; words with empty text are left out)."""
    if ch.segments is not None:
        return [s for s in ch.segments if s.text], "segments"
    rows = [{"text": w.text, "start": w.start, "end": w.end, "word": w} for w in ch.words]
    return [_join([r["word"] for r in run]) for run in group_words(rows, max_word_gap_s)], "words"


def _join(words: list[Segment]) -> Segment:
    return Segment(words[0].start, max(w.end for w in words), " ".join(w.text for w in words))


def speech(ch: Channel, source: str, key: str = "-") -> tuple[list[tuple[float, float]], str]:
    """The channel's speech as sorted, merged intervals: VAD segments (source "vad", or "auto"
    when the file has them), else the ASR words' spans (else its segments)."""
    if source in ("vad", "auto") and ch.vad is not None:
        spans, used = list(ch.vad), "vad_segments"
    elif source == "vad":
        raise SampleError(key, f"{ch.file} has no vad_segments (speech_source is vad)")
    elif ch.words:
        spans, used = [(w.start, w.end) for w in ch.words], "words"
    else:
        spans, used = [(s.start, s.end) for s in (ch.segments or [])], "segments"
    return merge_intervals(spans), used


def merge_intervals(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[list[float]] = []
    for s, e in sorted(spans):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def overlap(a: tuple[float, float], spans: list[tuple[float, float]]) -> float:
    """Seconds of `spans` (disjoint) inside a."""
    return sum(max(0.0, min(a[1], e) - max(a[0], s)) for s, e in spans)
