"""One sample's two inputs and its overlap window, computed from the real lengths of its pieces.

Runs in tts-synth's worker processes (`build`, the stage's BUILDER). `speak(text, speaker)` gives
a speech piece as float32 at the dataset rate, scaled to peak PEAK (0.8) and trimmed to its first
and last sample above TRIM_THRESHOLD (0.01; tts-synth's rendering, with its edge trim).

The two tracks, sample for sample:

    context track: lead_s of zeros | the context (user) | zeros to the end
    event track:   zeros ...                   delay_s | the event | trailing_s of zeros

    clean_input.wav = the context track
    input.wav       = the context track + the event track

The event is processed before it is placed: low-passed when the entry says so (a windowed-sinc
FIR, zero phase), then scaled back to peak PEAK and trimmed again (tts-synth's edge trim of quiet
10 ms frames, then at TRIM_THRESHOLD), so it still starts and ends with a sample above the
threshold; then multiplied by its gain, 10^(level_db/20)
(level_db <= 0 relative to the user's speech, which is at peak PEAK: nothing clips). The event
track is zero outside the event, so input.wav and clean_input.wav are the same samples outside
the overlap window [start_sample, end_sample) by construction, and the window is exactly the
event's first to last sample above the threshold (before its gain). Because the context ends
delay_s before the event starts, clean_input.wav is digital silence inside the window, and with
level_db >= -40 the first and last samples of the window are non-zero in 16-bit PCM: they are
exactly the first and last samples where the two files differ.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from duplexeval_common.errors import DuplexEvalError

Speak = Callable[..., np.ndarray]

LOWPASS_TAPS_S = 0.0125   # FIR length in seconds (201 taps at 16 kHz): a transition band of about 450 Hz


@dataclass
class Built:
    clean: np.ndarray            # clean_input.wav: the context track
    audio: np.ndarray            # input.wav: the context track + the event track
    context: tuple[int, int]     # [start, end) samples of the context
    overlap: tuple[int, int]     # [start, end) samples of the event: the overlap window


def lowpass(x: np.ndarray, cutoff_hz: float, sr: int) -> np.ndarray:
    """A zero-phase low-pass: a Blackman-windowed sinc of odd length, centred on each sample
    (float64, deterministic), the output as long as the input."""
    taps = int(round(LOWPASS_TAPS_S * sr)) | 1
    half = taps // 2
    fc = cutoff_hz / sr
    n = np.arange(taps, dtype=np.float64) - half
    h = 2.0 * fc * np.sinc(2.0 * fc * n) * np.blackman(taps)
    h /= h.sum()
    return np.convolve(np.asarray(x, dtype=np.float64), h, mode="full")[half: half + len(x)]


def trim(x: np.ndarray, threshold: float) -> np.ndarray:
    loud = np.flatnonzero(np.abs(x) > threshold)
    return x[:0] if loud.size == 0 else x[loud[0]: loud[-1] + 1]


def edge_trim(x: np.ndarray, sr: int, frame_s: float, rel: float, threshold: float) -> np.ndarray:
    """tts-synth's edge trim (its `tight` rendering), again after a low-pass: leading and trailing
    frames of frame_s whose RMS (over the frame and its two neighbours) is under `rel` of the
    loudest frame's are dropped (a fricative the filter took away leaves a faint tail no speech
    detector counts), then the piece is trimmed at the threshold again."""
    frame = max(1, int(round(frame_s * sr)))
    n = len(x) // frame
    if n < 3:
        return x
    power = np.mean(np.square(x[:n * frame]).reshape(n, frame), axis=1)
    rms = np.sqrt(np.convolve(np.pad(power, 1, mode="edge"), np.ones(3) / 3, mode="valid"))
    loud = np.flatnonzero(rms >= rel * rms.max())
    first, last = loud[0] * frame, len(x) if loud[-1] == n - 1 else (loud[-1] + 1) * frame
    out = trim(x[first:last], threshold)
    return out if out.size else x


def event_piece(audio: np.ndarray, entry: dict, sr: int, payload: dict) -> np.ndarray:
    """The event as placed in input.wav (float64): low-passed, scaled back to the peak and
    trimmed again (the edge trim, then the threshold), then its gain."""
    x = np.asarray(audio, dtype=np.float64)
    peak, threshold = payload["peak"], payload["threshold"]
    if entry.get("lowpass_hz") is not None:
        if entry["lowpass_hz"] >= sr / 2:
            raise DuplexEvalError(f"lowpass_hz {entry['lowpass_hz']:g} is not below half the sample rate ({sr} Hz)")
        x = lowpass(x, entry["lowpass_hz"], sr)
        m = float(np.max(np.abs(x)))
        x = trim(x * (peak / m), threshold) if m > 0 else x[:0]
        if x.size == 0:
            raise DuplexEvalError("the low-passed event is silent")
        x = edge_trim(x, sr, payload["edge_frame_s"], payload["edge_rel"], threshold)
    return x * (10.0 ** (entry["level_db"] / 20.0))


def compose(entry: dict, timing: dict, speak: Speak, sr: int, payload: dict) -> Built:
    context = np.asarray(speak(entry["context"], "user"), dtype=np.float64)
    event = event_piece(speak(entry["event"], entry["speaker"]), entry, sr, payload)
    lead = int(round(timing["lead_s"] * sr))
    delay = int(round(entry["delay_s"] * sr))
    trailing = int(round(timing.get("trailing_s", entry["trailing_s"]) * sr))
    c0, c1 = lead, lead + len(context)
    s, e = c1 + delay, c1 + delay + len(event)
    total = e + trailing
    context_track = np.zeros(total, dtype=np.float64)
    context_track[c0:c1] = context
    event_track = np.zeros(total, dtype=np.float64)
    event_track[s:e] = event
    return Built(clean=context_track.astype(np.float32), audio=(context_track + event_track).astype(np.float32),
                 context=(c0, c1), overlap=(s, e))


def build(payload: dict, speak: Speak, sr: int) -> Built:
    """One sample from its parsed script entry: what tts-synth's worker runs (stage.BUILDER).
    A DuplexEvalError is the sample's one-line reason (tts-synth's worker returns it as such)."""
    return compose(payload["entry"], payload["timing"], speak, sr, payload)
