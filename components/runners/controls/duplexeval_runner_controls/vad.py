"""Streaming Silero VAD (ONNX, one thread) and endpointing.

The Silero ONNX model is driven directly with numpy in 32 ms chunks (512
samples at 16 kHz) with the same state, 64-sample context and hysteresis as
`silero_vad.VADIterator`: speech starts at a chunk whose probability reaches
`threshold`, and ends once the probability has stayed below
`threshold - 0.15` for `min_silence_ms`. Each event carries two times: `at`,
the speech boundary VADIterator reports, and `detected`, the end of the chunk
that decided it (what a live system could act on).

`refine_start`/`refine_end` sharpen a boundary to the sample when the audio
around it holds a run of true silence (digital zeros, a quiet studio), and
leave it unchanged in noise.

`StreamResampler` turns audio arriving frame by frame at any rate into 16 kHz
samples, each handed out as soon as the input it depends on has arrived, and
equal to the bit to what resampling the whole signal at once gives
(duplexeval_common.wavio.resample): a runner at the input's own rate streams
its VAD without reading ahead of its clock and without moving a boundary.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import gcd
from pathlib import Path

import numpy as np

from duplexeval_runner import deps
from duplexeval_runner.settings import Setting

SR = 16000
CHUNK = 512  # 32 ms
CONTEXT = 64


def endpointer_settings(min_silence_ms: float) -> tuple[Setting, ...]:
    """The Endpointer's settings as runner_args (fixed-latency and the cascade declare them so)."""
    return (
        Setting("min_silence_ms", float, min_silence_ms, "silence that ends a user turn, in ms", gt=0),
        # the end of speech is `threshold - 0.15`: at or below 0.15 speech would never end
        Setting("threshold", float, 0.5, "Silero VAD speech probability that starts speech (speech ends below "
                "it minus 0.15)", gt=0.15, le=1),
        Setting("speech_pad_ms", float, 0, "moves a detected start this much earlier, in ms", ge=0),
    )


def model_path() -> Path:
    return deps.package_dir("silero_vad") / "data" / "silero_vad.onnx"


class SileroOnnx:
    """The Silero VAD ONNX model on one thread; `prob(chunk)` per 512 samples."""

    def __init__(self, path: Path | None = None):
        deps.require("Silero VAD", ["onnxruntime", "silero_vad"])
        ort = deps.import_module("Silero VAD", "onnxruntime")
        self.path = Path(path) if path else model_path()
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(self.path), sess_options=opts,
                                            providers=["CPUExecutionProvider"])
        self._sr = np.array(SR, dtype=np.int64)
        self.reset()

    def reset(self) -> None:
        self._state = np.zeros((2, 1, 128), dtype=np.float32)
        self._context = np.zeros((1, CONTEXT), dtype=np.float32)

    def prob(self, chunk: np.ndarray) -> float:
        x = np.asarray(chunk, dtype=np.float32).reshape(1, CHUNK)
        x = np.concatenate([self._context, x], axis=1)
        out, self._state = self.session.run(None, {"input": x, "state": self._state, "sr": self._sr})
        self._context = x[:, -CONTEXT:]
        return float(out[0, 0])

    def record(self) -> dict:
        return deps.model_record("silero-vad", [self.path], backend="onnxruntime", threads=1)


@dataclass(frozen=True)
class VadEvent:
    kind: str        # "start" or "end"
    at: float        # the speech boundary, input-timeline seconds
    detected: float  # end of the chunk that decided it, seconds


class Endpointer:
    """VADIterator's state machine over SileroOnnx, fed chunk by chunk."""

    def __init__(self, model: SileroOnnx, threshold: float = 0.5, min_silence_ms: float = 300,
                 speech_pad_ms: float = 0):
        self.model = model
        self.threshold = float(threshold)
        self.neg_threshold = self.threshold - 0.15
        self.min_silence = SR * float(min_silence_ms) / 1000
        self.pad = SR * float(speech_pad_ms) / 1000
        self.reset()

    def reset(self) -> None:
        self.model.reset()
        self.triggered = False
        self.temp_end = 0
        self.current = 0

    @property
    def now(self) -> float:
        return self.current / SR

    def skip(self, n: int) -> None:
        """Move the clock on by n samples (16 kHz) that no model hears (a teacher-forced history,
        duplexeval_runner/rounds.py), so later boundaries stay on the input's timeline."""
        self.current += int(n)

    def push(self, chunk: np.ndarray) -> VadEvent | None:
        self.current += CHUNK
        p = self.model.prob(chunk)
        if p >= self.threshold and self.temp_end:
            self.temp_end = 0
        if p >= self.threshold and not self.triggered:
            self.triggered = True
            start = max(0.0, self.current - self.pad - CHUNK)
            return VadEvent("start", start / SR, self.now)
        if p < self.neg_threshold and self.triggered:
            if not self.temp_end:
                self.temp_end = self.current
            if self.current - self.temp_end < self.min_silence:
                return None
            end = self.temp_end + self.pad - CHUNK
            self.temp_end = 0
            self.triggered = False
            return VadEvent("end", end / SR, self.now)
        return None

    def settings(self) -> dict:
        return {"backend": "silero-vad onnx (1 thread)", "sr": SR, "chunk_ms": CHUNK * 1000 // SR,
                "threshold": self.threshold, "neg_threshold": round(self.neg_threshold, 6),
                "min_silence_ms": self.min_silence * 1000 / SR, "speech_pad_ms": self.pad * 1000 / SR}


def chunks(audio16k: np.ndarray):
    """Whole 32 ms chunks of 16 kHz audio (a last partial chunk is dropped)."""
    audio16k = np.asarray(audio16k, dtype=np.float32)
    for i in range(len(audio16k) // CHUNK):
        yield audio16k[i * CHUNK:(i + 1) * CHUNK]


def endpoints(ep: Endpointer, audio16k: np.ndarray) -> list[VadEvent]:
    """Every start/end event of one signal, in order (the endpointer is reset first)."""
    ep.reset()
    events = []
    for chunk in chunks(audio16k):
        ev = ep.push(chunk)
        if ev is not None:
            events.append(ev)
    return events


class StreamResampler:
    """Resample a signal of `n_in` samples from `sr_in` to `sr_out` as it arrives.

    `wavio.resample` (scipy's `resample_poly`, a symmetric FIR filter of `half` taps a side
    at the up-sampled rate) makes output sample m from the inputs i with
    |i * up - m * down| <= half. So output m is final once input floor((m * down + half) / up)
    has arrived, and a `resample_poly` over a slice starting at a multiple of `down` gives it
    with the same taps on the same samples, i.e. the same value. `push` returns the outputs
    made final by a frame; `flush` (after the last frame) the rest, the signal being zeros
    after its end as `resample_poly` pads it. In all, round(n_in * sr_out / sr_in) samples,
    those of `wavio.resample` on the whole signal. The lookahead is half / up input samples
    (0.6 ms from 44.1 kHz to 16 kHz).
    """

    def __init__(self, sr_in: int, sr_out: int, n_in: int):
        g = gcd(int(sr_in), int(sr_out))
        self.up, self.down = int(sr_out) // g, int(sr_in) // g
        self.half = 10 * max(self.up, self.down)  # resample_poly's default filter half-length
        self.n_in = int(n_in)
        self.n_out = int(round(self.n_in * self.up / self.down))
        self._x = np.zeros(0, dtype=np.float32)
        self.heard = 0   # input samples received
        self.done = 0    # output samples handed out

    def push(self, frame: np.ndarray) -> np.ndarray:
        frame = np.asarray(frame, dtype=np.float32).reshape(-1)
        if self.heard + len(frame) > len(self._x):
            grown = np.zeros(max(self.heard + len(frame), 2 * len(self._x)), dtype=np.float32)
            grown[:self.heard] = self._x[:self.heard]
            self._x = grown
        self._x[self.heard:self.heard + len(frame)] = frame
        self.heard += len(frame)
        if self.up == self.down:
            return self._take(min(self.heard, self.n_out), self._x)
        final = max(0, -(-(self.heard * self.up - self.half) // self.down))  # m * down + half < heard * up
        return self._take(min(final, self.n_out), self._x[:self.heard])

    def flush(self) -> np.ndarray:
        """Every output not yet handed out (the input is over; zeros follow it)."""
        if self.up == self.down:
            return self._take(self.n_out, np.concatenate([self._x[:self.heard],
                                                           np.zeros(max(self.n_out - self.heard, 0), np.float32)]))
        tail = np.zeros(self.half // self.up + 2, dtype=np.float32)
        x = np.concatenate([self._x[:min(self.heard, self.n_in)], tail])
        return self._take(self.n_out, x)

    def _take(self, upto: int, x: np.ndarray) -> np.ndarray:
        a = self.done
        if upto <= a:
            return np.zeros(0, dtype=np.float32)
        self.done = upto
        if self.up == self.down:
            return x[a:upto].copy()
        lo = max(0, (a * self.down - self.half) // self.up)   # first input output a depends on
        s = (lo // self.down) * self.down                     # a slice start on the same filter phase
        from duplexeval_common.polyphase import resample_poly  # scipy.signal.resample_poly's numbers
        y = resample_poly(np.asarray(x[s:], dtype=np.float64), self.up, self.down)
        off = s * self.up // self.down
        return y[a - off:upto - off].astype(np.float32)


# --- sample-accurate refinement --------------------------------------------------------

def _loud(x: np.ndarray, level: float) -> np.ndarray:
    return np.abs(x) > level


def refine_end(x: np.ndarray, sr: int, at: float, *, level: float, min_gap_s: float,
               lookback_s: float) -> float:
    """Move a speech end earlier to the last loud sample, if only silence follows it.

    The end moves only when at least `min_gap_s` of samples at or below `level`
    separate the last loud sample from the VAD's end; otherwise it stays.
    """
    end = min(int(round(at * sr)), len(x))
    lo = max(end - int(round(lookback_s * sr)), 0)
    loud = np.flatnonzero(_loud(x[lo:end], level))
    if len(loud) == 0:
        return at
    last = lo + int(loud[-1]) + 1
    return last / sr if end - last >= int(round(min_gap_s * sr)) else at


def refine_start(x: np.ndarray, sr: int, at: float, detected: float, *, level: float,
                 min_gap_s: float, lookback_s: float) -> float:
    """Move a speech start to the first loud sample after the last silent gap before it.

    A gap is a run of at least `min_gap_s` samples at or below `level` that
    begins before the VAD's start; the start moves to the first loud sample
    after the last such gap (earlier or later, but not past `detected`). In
    noise there is no gap and the start stays.
    """
    start = int(round(at * sr))
    lo = max(start - int(round(lookback_s * sr)), 0)
    hi = min(int(round(detected * sr)), len(x))
    if hi <= lo:
        return at
    loud = np.flatnonzero(_loud(x[lo:hi], level)) + lo
    if len(loud) == 0:
        return at
    gap = int(round(min_gap_s * sr))
    # Silent runs: before the first loud sample, and between consecutive loud samples.
    prev = np.concatenate([[lo - 1], loud[:-1]])
    run_start = prev + 1
    run_len = loud - run_start
    ok = (run_len >= gap) & (run_start < start)
    if not ok.any():
        return at
    k = int(np.flatnonzero(ok)[-1])
    return int(loud[k]) / sr
