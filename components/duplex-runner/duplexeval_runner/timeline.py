"""The playback buffer: model audio placed on the input timeline.

Every runner places what the model says the same way (the contract in
protocol.py): a chunk that arrives at input-timeline time t starts at
`max(round(t * sr), write_pos)`, i.e. when it arrives, or right after what is
already queued; an interrupt at t discards whatever was queued after
`round(t * sr)` (it has not played yet) and moves `write_pos` back there.
Full-Duplex-Bench's clients approximate this with fixed output ticks, e.g. a
`pending` buffer and a mute on `stop_tts` in
v1_v1.5/model_inference/freeze-omni/inference.py
(DanielLin94144/Full-Duplex-Bench @ d7336bd).
"""

from __future__ import annotations

import numpy as np


class TimelineBuffer:
    """Model audio keyed by input-timeline sample index at rate `sr`."""

    def __init__(self, sr: int, capacity: int = 0, limit: int | None = None):
        """limit: samples past this index are counted (write_pos) but not stored: the output is cut
        at the input's end, so a server streaming without end cannot grow memory without bound."""
        if sr <= 0:
            raise ValueError("sample rate must be positive")
        self.sr = int(sr)
        self.limit = limit
        self._buf = np.zeros(max(int(capacity), 0), dtype=np.float32)
        self.write_pos = 0  # one past the last queued sample
        self.segments: list[tuple[int, int]] = []  # [start, end) of each chunk as it stands now

    def index(self, t: float) -> int:
        """The sample index of input-timeline time t (never negative)."""
        return max(int(round(t * self.sr)), 0)

    def _grow(self, n: int) -> None:
        if n > len(self._buf):
            new = np.zeros(max(n, 2 * len(self._buf)), dtype=np.float32)
            new[:len(self._buf)] = self._buf
            self._buf = new

    def write(self, t: float, audio: np.ndarray) -> int:
        """Queue `audio` to play from time t (or after what is queued); return its start index."""
        audio = np.asarray(audio, dtype=np.float32).reshape(-1)
        start = max(self.index(t), self.write_pos)
        end = start + len(audio)
        stop = end if self.limit is None else min(end, self.limit)
        if stop > start:
            self._grow(stop)
            self._buf[start:stop] = audio[:stop - start]
        self.write_pos = max(self.write_pos, end)
        if len(audio):
            self.segments.append((start, end))
        return start

    def pending(self, t: float) -> int:
        """Audio samples queued after time t, i.e. not played by then."""
        cut = self.index(t)
        return sum(e - max(s, cut) for s, e in self.segments if e > cut)

    def playing(self, t: float) -> bool:
        return self.pending(t) > 0

    def interrupt(self, t: float) -> int:
        """Discard everything queued after time t; return how many audio samples were discarded."""
        cut = self.index(t)
        if self.write_pos <= cut:
            return 0
        discarded = sum(e - max(s, cut) for s, e in self.segments if e > cut)
        self.segments = [(s, min(e, cut)) for s, e in self.segments if s < cut]
        self._buf[cut:min(self.write_pos, len(self._buf))] = 0.0
        self.write_pos = cut
        return discarded

    def slice(self, a: int, b: int) -> np.ndarray:
        """Samples [a, b) as they stand now (a copy; silence where nothing is stored)."""
        a, b = max(int(a), 0), max(int(b), 0)
        out = np.zeros(max(b - a, 0), dtype=np.float32)
        m = min(b, len(self._buf))
        if m > a:
            out[:m - a] = self._buf[a:m]
        return out

    def audio(self, n: int) -> np.ndarray:
        """Exactly n samples from time 0: trimmed, or padded with silence."""
        out = np.zeros(int(n), dtype=np.float32)
        m = min(int(n), len(self._buf))
        out[:m] = self._buf[:m]
        return out
