"""A sample's audio and annotations, computed from the real segment lengths.

Every time is an integer sample count divided by the rate, so annotations
lie exactly on segment boundaries: silences are digital zeros and each
speech segment starts and ends with a sample above the trim threshold.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

Speak = Callable[[str], np.ndarray]  # text -> trimmed speech segment at the sample rate


@dataclass
class Built:
    audio: np.ndarray
    segments: list[dict]
    annotation: dict                      # task-specific keys of sample.json
    official: tuple[str, str, list]       # (file name, schema name, content)
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


def _segment(tl: Timeline, text: str, span: tuple[int, int], role: str | None = None) -> dict:
    seg = {"speaker": "user", "text": text, "start": tl.t(span[0]), "end": tl.t(span[1])}
    if role:
        seg["role"] = role
    return seg


def spoken_form(text: str, before_pause: bool) -> str:
    """Text sent to the engine: a piece that breaks off before a pause without punctuation gets a
    comma, so it is spoken with non-final (continuing) intonation instead of a falling sentence end."""
    return f"{text}," if before_pause and text[-1].isalnum() else text


def pause_handling(entry: dict, timing: dict, speak: Speak, sr: int) -> Built:
    tl = Timeline(sr)
    tl.silence(timing["lead_s"])
    segments, pauses = [], []
    items = entry["speech"]
    for i, item in enumerate(items):
        if isinstance(item, str):
            segments.append(_segment(tl, item, tl.speech(speak(spoken_form(item, i + 1 < len(items))))))
        else:
            a, b = tl.silence(item)
            pauses.append([tl.t(a), tl.t(b)])
    tl.silence(timing["trailing_s"])
    official = [{"text": "[PAUSE]", "timestamp": p} for p in pauses]
    return Built(tl.audio(), segments, {"pauses": pauses, "turn_end_s": segments[-1]["end"]},
                 ("pause.json", "pause", official))


def smooth_turn_taking(entry: dict, timing: dict, speak: Speak, sr: int) -> Built:
    tl = Timeline(sr)
    tl.silence(timing["lead_s"])
    span = tl.speech(speak(entry["text"]))
    tl.silence(timing["trailing_s"])
    end = span[1]
    # timestamp[1]: E + turn_end_margin_s (official example: about 0.4 s), capped at the window end.
    margin_end = min(end + int(round(timing["turn_end_margin_s"] * sr)), tl.n)
    official = [{"text": "[TURN-TAKING]", "timestamp": [tl.t(end), tl.t(margin_end)]}]
    return Built(tl.audio(), [_segment(tl, entry["text"], span)], {"turn_end_s": tl.t(end)},
                 ("turn_taking.json", "turn-taking", official))


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
}
