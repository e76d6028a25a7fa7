"""`fixed-latency`: a control whose turn-taking numbers are known by construction.

After each end of user speech E (streaming Silero VAD, min silence
`min_silence_ms`), it says a fixed Piper phrase starting exactly at
E + `delay_s`: the phrase's leading silence is trimmed, so its first audible
sample is that sample. When the user starts speaking again it stops at the
start of that speech (a phrase not yet started is dropped).

E is the VAD's speech-end timestamp (not the detection time), sharpened to
the sample when the audio after it is true silence (`refine`), so on
synthetic input (speech followed by zeros) E is exact. It runs at the input's
own rate (`in_sr = out_sr = None`), so no resampling moves the onset. Its
output is deterministic: Piper's noise scales default to 0.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.wavio import resample

from .. import vad
from ..events import EventLog
from ..protocol import BaseRunner, resolve_args
from ..timeline import TimelineBuffer
from ..tts import PiperTTS, trim

DEFAULT_PHRASE = "Sure, I can help with that. Let me think about it for a moment."
DEFAULTS: dict[str, Any] = {
    "phrase": DEFAULT_PHRASE,
    "delay_s": 1.0,
    "min_silence_ms": 300,
    "threshold": 0.5,
    "speech_pad_ms": 0,
    "stop_on_user_speech": True,
    "refine": True,
    "refine_level_dbfs": -60.0,
    "refine_min_gap_ms": 10.0,
    "refine_lookback_ms": 300.0,
    "tts_noise_scale": 0.0,
    "tts_noise_w_scale": 0.0,
}


class FixedLatencyRunner(BaseRunner):
    name = "fixed-latency"
    clock = "simulated"
    deterministic = True
    in_sr = None
    out_sr = None

    def __init__(self, seed: int | None = None, **args: Any):
        self.args = a = resolve_args(self.name, DEFAULTS, args)
        if not isinstance(a["phrase"], str) or not a["phrase"].strip():
            raise DuplexEvalError("runner 'fixed-latency': phrase must be a non-empty string")
        if not a["delay_s"] >= 0:
            raise DuplexEvalError("runner 'fixed-latency': delay_s must be >= 0")
        if not a["min_silence_ms"] > 0:
            raise DuplexEvalError("runner 'fixed-latency': min_silence_ms must be > 0")
        self.seed = seed
        self.tts = PiperTTS(noise_scale=a["tts_noise_scale"], noise_w_scale=a["tts_noise_w_scale"])
        self._vad: vad.Endpointer | None = None
        self._phrase: dict[int, np.ndarray] = {}

    def setup(self) -> None:
        """Load the VAD and synthesize the phrase once (at the voice's rate)."""
        if self._vad is None:
            a = self.args
            self._vad = vad.Endpointer(vad.SileroOnnx(), threshold=a["threshold"],
                                       min_silence_ms=a["min_silence_ms"],
                                       speech_pad_ms=a["speech_pad_ms"])
            if not len(self.phrase(self.tts.sr)):
                raise DuplexEvalError(f"runner 'fixed-latency': Piper made no sound for {a['phrase']!r}")

    def phrase(self, sr: int) -> np.ndarray:
        """The phrase at rate sr, trimmed so its first and last samples are audible."""
        if sr not in self._phrase:
            if self.tts.sr not in self._phrase:
                self._phrase[self.tts.sr] = self.tts.synthesize(self.args["phrase"], reuse=True)
            self._phrase[sr] = trim(resample(self._phrase[self.tts.sr], self.tts.sr, sr))
        return self._phrase[sr]

    def _refine_kw(self) -> dict:
        a = self.args
        return {"level": 10 ** (a["refine_level_dbfs"] / 20), "min_gap_s": a["refine_min_gap_ms"] / 1000,
                "lookback_s": a["refine_lookback_ms"] / 1000}

    def run(self, user: np.ndarray, sr: int, *, log: EventLog) -> np.ndarray:
        self.setup()
        a = self.args
        phrase = self.phrase(sr)
        buf = TimelineBuffer(sr, capacity=len(user))
        kw = self._refine_kw()
        replies = interrupts = 0
        for ev in vad.endpoints(self._vad, resample(user, sr, vad.SR)):
            if ev.kind == "start":
                t = vad.refine_start(user, sr, ev.at, ev.detected, **kw) if a["refine"] else ev.at
                log.emit("vad_start", t, vad_t=ev.at, detected_t=ev.detected)
                if a["stop_on_user_speech"] and buf.playing(t):
                    n = buf.interrupt(t)
                    interrupts += 1
                    log.emit("interrupt", t, reason="user_speech")
                    log.emit("truncate", t, discarded_s=n / sr)
            else:
                t = vad.refine_end(user, sr, ev.at, **kw) if a["refine"] else ev.at
                log.emit("vad_end", t, vad_t=ev.at, detected_t=ev.detected)
                start = buf.write(t + a["delay_s"], phrase)
                replies += 1
                log.emit("speak", start / sr, end_t=(start + len(phrase)) / sr,
                         scheduled_t=t + a["delay_s"], text=a["phrase"])
        log.stats.update({"replies": replies, "interrupts": interrupts})
        return buf.audio(len(user))

    def settings(self) -> dict:
        s = dict(self.args)
        s["vad"] = self._vad.settings() if self._vad else None
        s["tts"] = self.tts.settings()
        return s

    def models(self) -> dict:
        return {"silero-vad": self._vad.model.record() if self._vad else None,
                "piper-voice": self.tts.record()}
