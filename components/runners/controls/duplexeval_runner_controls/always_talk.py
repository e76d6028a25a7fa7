"""`always-talk`: a control that talks over everything.

It says a fixed Piper phrase back to back, from the first sample of the output to the last,
and never stops for the user: every turn-taking and interruption metric sees a model that
always holds the floor (it takes every turn, at once, and yields to no interruption).

A StepRunner at the input's own rate (`in_sr = out_sr = None`) in one-second frames (a whole
number of samples at any integer rate): step k returns output frame k, samples
[k * F, (k + 1) * F) of the phrase repeated without gaps, which the core places at the start of
input frame k. The phrase is synthesized once, resampled to the input's rate and trimmed so its
first and last samples are audible, so the output's first sample is audible and a repeat starts
right after the previous one's last audible sample. Deterministic: Piper's noise scales default
to 0, and the input is never looked at.

Multi-round samples (duplexeval_runner/rounds.py): `history` "teacher-forced". The GT history is
what was said before the round, so `force` says nothing before the round's start_s; the phrase
starts at start_s exactly (the frame that straddles start_s places its part from start_s on) and
repeats back to back from there, so a round's output is the GT history before start_s and the
phrase, from its first sample, after.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from duplexeval_runner.protocol import Session
from duplexeval_runner.settings import Spec

from .base import ControlRunner
from .tts import Phrase, noise_settings, phrase_setting

NAME = "always-talk"
DEFAULT_PHRASE = "I am talking and I will keep on talking no matter what you say to me"
SETTINGS = Spec(phrase_setting(DEFAULT_PHRASE), *noise_settings())


class AlwaysTalkRunner(ControlRunner):
    name = NAME
    frame_ms = 1000.0
    history = "teacher-forced"
    SETTINGS = SETTINGS

    def __init__(self, seed: int | None = None, **args: Any):
        self.args, _ = self.SETTINGS.resolve(self.name, args)
        self.seed = seed
        self.said = Phrase(NAME, self.args)
        self.tts = self.said.tts
        self._pos = 0

    def setup(self) -> None:
        self.said.check()

    def phrase(self, sr: int) -> np.ndarray:
        """The phrase at rate sr, trimmed so its first and last samples are audible."""
        return self.said.at(sr)

    def open(self, session: Session) -> None:
        self.setup()
        self._pos = 0  # output samples said so far, at out_sr
        start = float(session.round["start_s"]) if session.round else 0.0  # a round: from its start
        session.event("speak", start, text=self.args["phrase"], repeat=True)

    def _said(self, n: int, session: Session) -> np.ndarray:
        """The next n samples of the phrase repeated without gaps."""
        p = self.phrase(session.out_sr)
        idx = (self._pos + np.arange(n)) % len(p)
        self._pos += n
        return p[idx]

    def step(self, frame: np.ndarray, session: Session) -> np.ndarray:
        return self._said(int(round(len(frame) * session.out_sr / session.info.sr)), session)

    def force(self, user_frame: np.ndarray, assistant_frame: np.ndarray, session: Session) -> None:
        """Nothing before the round's start; the frame that straddles it talks from start_s on."""
        start = float(session.round["start_s"])
        end = session.now()
        n = int(round(end * session.out_sr)) - int(round(start * session.out_sr))
        if n > 0:
            session.place(self._said(n, session), t=start)

    def close(self, session: Session) -> None:
        p = self.phrase(session.out_sr)
        said = min(self._pos, int(round(session.info.n_samples * session.out_sr / session.info.sr)))
        session.stats.update({"replies": -(-said // len(p)), "interrupts": 0})  # phrases begun

    def settings(self) -> dict:
        return {**self.args, "frame_ms": self.frame_ms, "tts": self.tts.settings(),
                "phrase_s": round(len(self.phrase(self.tts.sr)) / self.tts.sr, 6) if self.said.made else None}

    def models(self) -> dict:
        return {"piper-voice": self.tts.record()}
