"""`fixed-latency`: a control whose turn-taking numbers are known by construction.

After each end of user speech E it says a fixed Piper phrase starting exactly at E + `delay_s`:
the phrase's leading silence is trimmed, so its first audible sample is that sample. When the
user starts speaking again it stops at the start of that speech S (a phrase not yet started is
dropped).

It is a StepRunner at the input's own rate (`in_sr = out_sr = None`), in 40 ms frames (a whole
number of samples at every common rate: 8, 11.025, 16, 22.05, 24, 32, 44.1, 48 kHz). It keeps
its own history of what it has heard. Each frame goes through `vad.StreamResampler` to 16 kHz
and the Silero VAD (`vad.Endpointer`, 32 ms chunks, min silence `min_silence_ms`) as soon as a
whole chunk is final; E and S are the VAD's boundary timestamps, sharpened to the sample in the
native-rate history when the audio around them is true silence (`refine`, see vad.py), so on
synthetic input (speech, then zeros) E and S are exact to the sample. The streamed 16 kHz
samples equal those of resampling the whole input at once, so the VAD sees exactly what it
saw when this control read the whole input; no boundary moves.

Simulated, not live: every decision uses only audio already heard (the history up to
`session.now()`), but its effect is placed at the boundary it found, which the VAD knows
`min_silence_ms` plus up to a chunk and a frame later (an end), or a chunk and a frame later
(a start). So the cut at S lands in the past of the decision, and so does the phrase when
`delay_s` is shorter than that lag (e.g. `delay_s` 0.3 with `min_silence_ms` 300). Both are
allowed on purpose: the control's output is defined by E, S and `delay_s`, not by what a live
system could do, and the `speak` events carry `decided_t` (when the VAD knew) next to `t`.
Its output is deterministic: Piper's noise scales default to 0.

Multi-round samples (duplexeval_runner/rounds.py): `history` "teacher-forced". `force` hears the
user's frame exactly as `step` does (the VAD and the heard history go on, so a speech boundary near
the round's start is found as it would be otherwise), but the GT model said what was said before the
round: a boundary found before the round's start_s places nothing and interrupts nothing (its
`vad_start`/`vad_end` event carries `"history": true`), whenever the VAD reports it. From start_s on
the rule is the usual one: the phrase at E + `delay_s` after each end of user speech E >= start_s.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from duplexeval_runner.protocol import Session
from duplexeval_runner.settings import Setting, Spec

from . import vad
from .base import ControlRunner
from .tts import Phrase, noise_settings, phrase_setting

NAME = "fixed-latency"
FRAME_MS = 40.0
DEFAULT_PHRASE = "Sure, I can help with that. Let me think about it for a moment."
SETTINGS = Spec(
    phrase_setting(DEFAULT_PHRASE),
    Setting("delay_s", float, 1.0, "the phrase starts this long after each end of user speech, in seconds",
            ge=0),
    *vad.endpointer_settings(300),
    Setting("stop_on_user_speech", bool, True, "cut the phrase at the start of the user's next speech"),
    Setting("refine", bool, True, "sharpen each boundary to the sample where the audio around it is true silence"),
    Setting("refine_level_dbfs", float, -60.0, "refine: the level at or below which a sample is silence, in dBFS",
            le=0),
    Setting("refine_min_gap_ms", float, 10.0, "refine: the shortest run of silence that sharpens a boundary, in ms",
            ge=0),
    Setting("refine_lookback_ms", float, 300.0, "refine: how far back from the VAD's boundary to look, in ms",
            ge=0),
    *noise_settings(),
)


class _Listening:
    """One sample: what has been heard (native rate), the 16 kHz stream into the VAD."""

    def __init__(self, session: Session, ep: vad.Endpointer):
        info = session.info
        self.sr = info.sr
        self.n = info.n_samples
        self.heard = np.zeros(info.n_samples, dtype=np.float32)  # the past, filled frame by frame
        self.got = 0                                              # input samples received
        self.stream = vad.StreamResampler(info.sr, vad.SR, info.n_samples)
        self.pending = np.zeros(0, dtype=np.float32)              # 16 kHz samples short of a chunk
        self.ep = ep
        ep.reset()
        self.replies = self.interrupts = 0
        # a round: boundaries before its start belong to the GT history (nothing placed for them)
        self.round_start = float(session.round["start_s"]) if session.round else None

    def in_history(self, t: float) -> bool:
        return self.round_start is not None and t < self.round_start

    def past(self) -> np.ndarray:
        """Everything heard so far (never beyond the clock)."""
        return self.heard[:min(self.got, self.n)]

    def hear(self, frame: np.ndarray) -> None:
        a = min(self.got, self.n)
        b = min(self.got + len(frame), self.n)
        self.heard[a:b] = frame[:b - a]
        self.got += len(frame)

    def chunks(self, audio16k: np.ndarray):
        """Whole 32 ms chunks as they complete (a last partial chunk is never pushed)."""
        self.pending = np.concatenate([self.pending, audio16k])
        n = len(self.pending) // vad.CHUNK
        for i in range(n):
            yield self.pending[i * vad.CHUNK:(i + 1) * vad.CHUNK]
        self.pending = self.pending[n * vad.CHUNK:]


class FixedLatencyRunner(ControlRunner):
    name = NAME
    frame_ms = FRAME_MS
    history = "teacher-forced"
    SETTINGS = SETTINGS

    def __init__(self, seed: int | None = None, **args: Any):
        self.args, _ = self.SETTINGS.resolve(self.name, args)
        a = self.args
        self.seed = seed
        self.said = Phrase(NAME, a)
        self.tts = self.said.tts
        self._vad: vad.Endpointer | None = None
        self._s: _Listening | None = None

    def setup(self) -> None:
        """Load the VAD and synthesize the phrase once (at the voice's rate)."""
        if self._vad is None:
            a = self.args
            self._vad = vad.Endpointer(vad.SileroOnnx(), threshold=a["threshold"],
                                       min_silence_ms=a["min_silence_ms"],
                                       speech_pad_ms=a["speech_pad_ms"])
            self.said.check()

    def phrase(self, sr: int) -> np.ndarray:
        """The phrase at rate sr, trimmed so its first and last samples are audible."""
        return self.said.at(sr)

    def _refine_kw(self) -> dict:
        a = self.args
        return {"level": 10 ** (a["refine_level_dbfs"] / 20), "min_gap_s": a["refine_min_gap_ms"] / 1000,
                "lookback_s": a["refine_lookback_ms"] / 1000}

    # -- the step contract -----------------------------------------------------------------

    def open(self, session: Session) -> None:
        self.setup()
        self.phrase(session.out_sr)
        self._s = _Listening(session, self._vad)

    def step(self, frame: np.ndarray, session: Session) -> None:
        s = self._s
        s.hear(frame)
        self._listen(s.stream.push(frame), session)

    def force(self, user_frame: np.ndarray, assistant_frame: np.ndarray, session: Session) -> None:
        """A frame of a round's GT history: heard like any other (what the model said there is the
        GT's); what the VAD finds before the round's start places nothing (`_on`)."""
        self.step(user_frame, session)

    def close(self, session: Session) -> None:
        s = self._s
        self._listen(s.stream.flush(), session)
        session.stats.update({"replies": s.replies, "interrupts": s.interrupts})
        self._s = None

    def _listen(self, audio16k: np.ndarray, session: Session) -> None:
        s = self._s
        for chunk in s.chunks(audio16k):
            ev = s.ep.push(chunk)
            if ev is not None:
                self._on(ev, session)

    def _on(self, ev: vad.VadEvent, session: Session) -> None:
        a, s = self.args, self._s
        past = s.past()
        kw = self._refine_kw()
        if ev.kind == "start":
            t = vad.refine_start(past, s.sr, ev.at, ev.detected, **kw) if a["refine"] else ev.at
            if s.in_history(t):
                session.event("vad_start", t, vad_t=ev.at, detected_t=ev.detected, history=True)
                return
            session.event("vad_start", t, vad_t=ev.at, detected_t=ev.detected)
            if a["stop_on_user_speech"] and session.buf.playing(t):
                session.interrupt(t, reason="user_speech")
                s.interrupts += 1
        else:
            t = vad.refine_end(past, s.sr, ev.at, **kw) if a["refine"] else ev.at
            if s.in_history(t):
                session.event("vad_end", t, vad_t=ev.at, detected_t=ev.detected, history=True)
                return
            session.event("vad_end", t, vad_t=ev.at, detected_t=ev.detected)
            phrase = self.phrase(session.out_sr)
            start = session.place(phrase, t=t + a["delay_s"])
            s.replies += 1
            session.event("speak", start, end_t=start + len(phrase) / session.out_sr,
                          scheduled_t=t + a["delay_s"], decided_t=session.now(), text=a["phrase"])

    def settings(self) -> dict:
        s = dict(self.args)
        s["frame_ms"] = self.frame_ms
        s["vad"] = self._vad.settings() if self._vad else None
        s["tts"] = self.tts.settings()
        return s

    def models(self) -> dict:
        return {"silero-vad": self._vad.model.record() if self._vad else None,
                "piper-voice": self.tts.record()}
