"""A sample's audio and annotations, computed from the real segment lengths.

Every time is an integer sample count divided by the rate, so annotations
lie exactly on segment boundaries: silences are digital zeros and each
speech segment starts and ends with a sample above the trim threshold.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

# (text[, speaker]) -> trimmed speech segment at the sample rate; speaker defaults to "user"
Speak = Callable[..., np.ndarray]

# Backchannel ground truth (icc_gt_distribution.json): a histogram over BIN_S bins of input.wav,
# from t = 0, of when a listener would backchannel: an equal-weight mixture of normal
# distributions, one per transition-relevance place (TRP), centred BC_DELAY_S after the end of
# the speech at the TRP, with standard deviation BC_SD_S; each bin holds the mixture's mass
# inside it plus BC_FLOOR, and the bins are normalised to sum to 1. The floor keeps every bin
# positive: the official evaluator interpolates the histogram linearly, and an exact zero next
# to a tiny value can come out as -1e-32, which makes its Jensen-Shannon distance infinite.
BIN_S = 0.2
BC_DELAY_S = 0.3
BC_SD_S = 0.25
BC_FLOOR = 1e-6


@dataclass
class Built:
    audio: np.ndarray
    segments: list[dict]
    annotation: dict                      # task-specific keys of sample.json
    official: tuple[str, str | None, list]  # (file name, schema name or None, content)
    extra_wavs: dict[str, np.ndarray] = field(default_factory=dict)


class Timeline:
    def __init__(self, sr: int):
        self.sr, self.parts, self.n = sr, [], 0

    def t(self, n: int) -> float:
        return n / self.sr

    def silence(self, seconds: float) -> tuple[int, int]:
        k = int(round(seconds * self.sr))
        return self._add(np.zeros(k, dtype=np.float32))

    def speech(self, audio: np.ndarray) -> tuple[int, int]:
        return self._add(np.asarray(audio, dtype=np.float32))

    def _add(self, audio: np.ndarray) -> tuple[int, int]:
        start = self.n
        self.parts.append(audio)
        self.n += len(audio)
        return start, self.n

    def audio(self) -> np.ndarray:
        return np.concatenate(self.parts).astype(np.float32)


def _segment(tl: Timeline, text: str, span: tuple[int, int], role: str | None = None,
             speaker: str = "user") -> dict:
    seg = {"speaker": speaker, "text": text, "start": tl.t(span[0]), "end": tl.t(span[1])}
    if role:
        seg["role"] = role
    return seg


def _prelude(tl: Timeline, entry: dict, speak: Speak) -> list[dict]:
    """A second speaker's turns before the user's (fdb-script/2 `prelude`), each with its gap."""
    segments = []
    for piece in entry.get("prelude", ()):
        span = tl.speech(speak(piece["text"], piece["speaker"]))
        segments.append(_segment(tl, piece["text"], span, speaker=piece["speaker"]))
        tl.silence(piece["gap_s"])
    return segments


def speakers_of(entry: dict) -> list[str]:
    """The speakers of an entry, the user first, then the others in order of appearance."""
    out = ["user"]
    for piece in entry.get("prelude", ()):
        if piece["speaker"] not in out:
            out.append(piece["speaker"])
    return out


def transcription(segments: list[dict]) -> list[dict]:
    """The official transcription.json: [{"speaker", "item": [{"text", "timestamp"}]}], one
    object per speaker turn (consecutive segments of one speaker), one item per segment (a text
    piece between silences: segment level, not word level)."""
    out: list[dict] = []
    for seg in segments:
        item = {"text": seg["text"], "timestamp": [seg["start"], seg["end"]]}
        if out and out[-1]["speaker"] == seg["speaker"]:
            out[-1]["item"].append(item)
        else:
            out.append({"speaker": seg["speaker"], "item": [item]})
    return out


def _user_end(segments: list[dict]) -> float:
    return [s for s in segments if s["speaker"] == "user"][-1]["end"]


def spoken_form(text: str, before_pause: bool) -> str:
    """Text sent to the engine: a piece that breaks off before a pause without punctuation gets a
    comma, so it is spoken with non-final (continuing) intonation instead of a falling sentence end."""
    return f"{text}," if before_pause and text[-1].isalnum() else text


def pause_handling(entry: dict, timing: dict, speak: Speak, sr: int) -> Built:
    tl = Timeline(sr)
    tl.silence(timing["lead_s"])
    segments, pauses = _prelude(tl, entry, speak), []
    items = entry["speech"]
    for i, item in enumerate(items):
        if isinstance(item, str):
            segments.append(_segment(tl, item, tl.speech(speak(spoken_form(item, i + 1 < len(items))))))
        else:
            a, b = tl.silence(item)
            pauses.append([tl.t(a), tl.t(b)])
    tl.silence(timing["trailing_s"])
    official = [{"text": "[PAUSE]", "timestamp": p} for p in pauses]
    return Built(tl.audio(), segments, {"pauses": pauses, "turn_end_s": _user_end(segments)},
                 ("pause.json", "pause", official))


def smooth_turn_taking(entry: dict, timing: dict, speak: Speak, sr: int) -> Built:
    tl = Timeline(sr)
    tl.silence(timing["lead_s"])
    segments = _prelude(tl, entry, speak)
    annotation: dict = {}
    if "speech" in entry:  # a turn with hesitations: ["text", pause, "text", ...]
        hesitations = []
        items = entry["speech"]
        for i, item in enumerate(items):
            if isinstance(item, str):
                span = tl.speech(speak(spoken_form(item, i + 1 < len(items))))
                segments.append(_segment(tl, item, span))
            else:
                a, b = tl.silence(item)
                hesitations.append([tl.t(a), tl.t(b)])
        annotation["hesitations"] = hesitations
    else:
        span = tl.speech(speak(entry["text"]))
        segments.append(_segment(tl, entry["text"], span))
    tl.silence(timing["trailing_s"])
    end = span[1]
    # timestamp[1]: E + turn_end_margin_s (official example: about 0.4 s), capped at the window end.
    margin_end = min(end + int(round(timing["turn_end_margin_s"] * sr)), tl.n)
    official = [{"text": "[TURN-TAKING]", "timestamp": [tl.t(end), tl.t(margin_end)]}]
    return Built(tl.audio(), segments, {"turn_end_s": tl.t(end), **annotation},
                 ("turn_taking.json", "turn-taking", official))


def backchannel(entry: dict, timing: dict, speak: Speak, sr: int) -> Built:
    """A long user monologue; TRPs are the ends of the speech pieces followed by {"trp": s}."""
    tl = Timeline(sr)
    tl.silence(timing["lead_s"])
    segments, trps, gaps = [], [], []
    items = entry["monologue"]
    for i, item in enumerate(items):
        if isinstance(item, str):
            span = tl.speech(speak(spoken_form(item, i + 1 < len(items) and not isinstance(items[i + 1], dict))))
            segments.append(_segment(tl, item, span))
        else:
            if isinstance(item, dict):
                trps.append(tl.n)
            a, b = tl.silence(item["trp"] if isinstance(item, dict) else item)
            if b > a:
                gaps.append([tl.t(a), tl.t(b)])
    tl.silence(timing["trailing_s"])
    annotation = {"turn_end_s": segments[-1]["end"], "gaps": gaps,
                  "backchannel": {"trps": [tl.t(n) for n in trps], "bin_s": BIN_S,
                                  "delay_s": BC_DELAY_S, "sd_s": BC_SD_S, "floor": BC_FLOOR}}
    return Built(tl.audio(), segments, annotation, ("transcription.json", None, transcription(segments)))


def backchannel_gt(trps: list[float], n_samples: int, sr: int,
                   delay_s: float = BC_DELAY_S, sd_s: float = BC_SD_S, bin_s: float = BIN_S,
                   floor: float = BC_FLOOR) -> list[float]:
    """The ground-truth histogram of one sample: int(T / bin_s) + 1 bins for T = n_samples / sr
    (the official evaluator's bin count for the input), each the mixture's mass in
    [i * bin_s, (i + 1) * bin_s) plus `floor` per TRP, normalised to sum to 1."""
    n_bins = int(n_samples / (sr * bin_s)) + 1
    edges = [i * bin_s for i in range(n_bins + 1)]
    mass = [floor * len(trps)] * n_bins
    for trp in trps:
        centre = trp + delay_s
        cdf = [0.5 * (1.0 + math.erf((e - centre) / (sd_s * math.sqrt(2.0)))) for e in edges]
        for i in range(n_bins):
            mass[i] += cdf[i + 1] - cdf[i]
    total = math.fsum(mass)
    if not trps or total <= 0:
        raise ValueError("no transition-relevance place inside the audio")
    return [m / total for m in mass]


def user_interruption(entry: dict, timing: dict, speak: Speak, sr: int) -> Built:
    """input.wav = context.wav + gap + interrupt.wav + trailing (the official structure)."""
    context, interrupt = speak(entry["context"]), speak(entry["interrupt"])
    tl = Timeline(sr)
    tl.silence(timing["lead_s"])
    c_span = tl.speech(context)
    context_wav = tl.audio()
    tl.silence(timing["gap_s"])
    s, r = tl.speech(interrupt)
    tl.silence(timing["trailing_s"])
    official = [{"context": entry["context"], "interrupt": entry["interrupt"],
                 "timestamp": [tl.t(s), tl.t(r)]}]
    segments = [_segment(tl, entry["context"], c_span, "context"),
                _segment(tl, entry["interrupt"], (s, r), "interrupt")]
    annotation = {"turn_end_s": tl.t(r),
                  "interrupt": {"start": tl.t(s), "end": tl.t(r),
                                "context": entry["context"], "interrupt": entry["interrupt"]}}
    return Built(tl.audio(), segments, annotation, ("interrupt.json", "interrupt", official),
                 {"context.wav": context_wav, "interrupt.wav": np.asarray(interrupt, dtype=np.float32)})


BUILDERS = {
    "pause_handling": pause_handling,
    "smooth_turn_taking": smooth_turn_taking,
    "user_interruption": user_interruption,
    "backchannel": backchannel,
}


def build(payload: dict, speak: Speak, sr: int) -> Built:
    """One sample from its parsed script entry: what tts-synth's worker runs (stage.BUILDER)."""
    return BUILDERS[payload["task"]](payload["entry"], payload["timing"], speak, sr)
