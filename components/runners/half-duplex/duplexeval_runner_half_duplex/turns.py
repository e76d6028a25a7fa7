"""The half-duplex turn logic, once: what makes a model that answers whole turns a full-duplex runner.

MTR-DuplexBench's rule for half-duplex and cascaded systems (arXiv 2511.10262, section 3, Remark 1):
an endpointer closes the user's turn, the model answers it, and the model stops talking as soon as user
speech is detected again. `TurnRunner` is that rule as a StepRunner at 16 kHz in 32 ms frames (one
Silero VAD chunk each, duplexeval_runner_controls.vad), for any `Backend` (turn audio + history ->
reply speech, texts and timings). The `cascade` (VAD -> ASR -> LLM -> TTS) and the `half-duplex`
runner (a speech-in, speech-out model) are its two users; neither holds any of this logic itself.

- **Hearing.** Each frame is kept in the runner's own copy of the input heard so far and pushed to the
  endpointer as it arrives (a last partial frame, zero-padded by the core, is kept but not pushed).
  A turn's audio is cut from that copy, from the VAD's start - `<pad>` to its end + `<pad>` (the pad
  setting's name is the runner's: `asr_pad_ms` for the cascade, `turn_pad_ms` for half-duplex), at
  most `max_turn_s`, and never past what has been heard at the detection.
- **Endpointing.** A turn ends when the VAD has heard `min_silence_ms` of silence; the detection
  time D is the end of the chunk that decided it.
- **Placement.** Compute starts at D, or when the previous turn's compute finished if that is later
  (one worker, as live). The reply is placed with `session.place` at start + the backend's measured
  wall seconds (`clock` "measured": the latency it would have live on this machine) or start +
  `fixed_compute_s` (`clock` "fixed": the same input gives the same placement, and the event log
  holds no wall time). Never before D.
- **Barge-in** (`stop_on_user_speech`): when the VAD detects user speech while a reply is playing or
  still due, `session.interrupt` cuts it at that detection time, compute in flight is abandoned, and
  a reply that never started playing is dropped from the history (the user never heard it).
- **History.** The conversation of one sample (user and assistant messages, in order); on a
  multi-round sample (duplexeval_runner/rounds.py) it starts as the round's GT history texts
  (`llm_context` event), whose frames are kept in the heard audio but go through no model.
- **Stats.** `turns`, `replies`, `interrupts`, and with the measured clock the wall seconds of each
  part of the backend per reply and each reply's latency (`compute_s`).

The models run inside `step`, on the frame that ended the turn, so a slow model slows the run, not
the timeline (the core drives step runners as fast as they run).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

import numpy as np

from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.progress import log as progress_log

from duplexeval_runner.protocol import Session, SessionFailed, StepRunner
from duplexeval_runner.rounds import history_lines
from duplexeval_runner.settings import Setting
from duplexeval_runner_controls import vad

CLOCKS = ("measured", "fixed")


def turn_settings(pad: str, pad_about: str, min_silence_ms: float = 500) -> tuple[Setting, ...]:
    """The settings of the turn logic, in the order the runners' READMEs list them."""
    return (
        Setting("clock", str, "measured", "how compute time is charged to the timeline: the measured wall "
                "seconds, or fixed_compute_s (deterministic)", choices=CLOCKS),
        Setting("fixed_compute_s", float, 1.0, "clock fixed: seconds from a turn's end to its reply", ge=0),
        *vad.endpointer_settings(min_silence_ms),
        Setting(pad, float, 200, pad_about, ge=0),
        Setting("max_turn_s", float, 30.0, "the longest turn the ASR or model hears (its last seconds), in seconds", gt=0),
        Setting("stop_on_user_speech", bool, True, "barge-in: cut the reply when the user starts speaking"),
    )


@dataclass
class Step:
    """One timed part of an answer, logged as one event at the detection time."""
    kind: str          # the event's type: "asr", "llm" or "tts"
    seconds: float     # its wall seconds (in the event only with the measured clock)
    fields: dict = field(default_factory=dict)  # the event's other fields (text, tokens, audio_s, ...)


@dataclass
class Answer:
    """What a backend made of one user turn. No reply (`speech` None) when it understood nothing
    (`user` None) or had nothing to say; `user` and `text` join the history only with a reply."""
    steps: list[Step]
    user: Any = None                   # the user's message content (text, or the backend's audio parts)
    text: str | None = None            # the reply's text (a transcript for a speech model)
    speech: np.ndarray | None = None   # the reply, float32 mono at the backend's out_sr


class Backend(Protocol):
    """A model that answers whole turns.

    `parts`: the names of its timed parts (stats `compute_s`); `out_sr`: the rate of its speech;
    `deterministic`: whether the same turn gives the same reply; `loaders()`: (name, load) pairs run
    once per stage, each timed; `warmup()`: one throwaway answer, so the first turn is no cold start;
    `answer(audio, history, log)`: the reply to one turn (16 kHz float32, the history so far, the
    event log: `log(step)` logs a step as soon as it is done); raise SessionFailed with one line to
    fail the sample."""
    parts: tuple[str, ...]
    out_sr: int
    deterministic: bool

    def loaders(self) -> list[tuple[str, Callable[[], None]]]: ...
    def warmup(self) -> None: ...
    def answer(self, audio: np.ndarray, history: list[dict], log: Callable[[Step], None]) -> Answer: ...
    def settings(self) -> dict: ...
    def models(self) -> dict: ...


def timed(fn: Callable, *args: Any) -> tuple[Any, float]:
    """fn(*args) and its wall seconds."""
    t0 = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t0


class TurnRunner(StepRunner):
    """A StepRunner around a Backend. Subclasses set `name`, `SETTINGS` (with `turn_settings`),
    `PAD` (the pad setting's name) and build `self.backend` in `__init__` after `init_turns`."""

    clock = "simulated"
    history = "teacher-forced"
    in_sr = vad.SR
    frame_ms = vad.CHUNK * 1000 / vad.SR  # 32 ms: one VAD chunk per step
    PAD = "asr_pad_ms"

    def init_turns(self, args: dict, seed: int | None) -> None:
        self.args = args
        self.seed = seed
        self._vad: vad.Endpointer | None = None
        self.load_s: dict[str, float] = {}
        self._load_reported = False
        self._ready = False
        self._conv: _Conversation | None = None

    @property
    def deterministic(self) -> bool:
        # With the fixed clock the placement depends on no wall time: with a deterministic backend,
        # same input, same bytes.
        return self.args["clock"] == "fixed" and bool(self.backend.deterministic)

    @property
    def out_sr(self) -> int:
        return int(self.backend.out_sr)

    def setup(self) -> None:
        """Load the VAD and every model of the backend once (an LLM takes tens of seconds)."""
        if self._ready:
            return
        for name, load in (("vad", self._load_vad), *self.backend.loaders()):
            t0 = time.perf_counter()
            load()
            self.load_s[name] = round(time.perf_counter() - t0, 3)
            progress_log(f"[duplex-runner] {self.name}: {name} loaded in {self.load_s[name]:.1f}s")
        # Warm up each model once, so the first turn's latency is not a cold start.
        t0 = time.perf_counter()
        self.backend.warmup()
        self.load_s["warmup"] = round(time.perf_counter() - t0, 3)
        progress_log(f"[duplex-runner] {self.name}: warm-up {self.load_s['warmup']:.1f}s "
                     f"(clock {self.args['clock']})")
        self._ready = True

    def _load_vad(self) -> None:
        a = self.args
        if self._vad is None:
            self._vad = vad.Endpointer(vad.SileroOnnx(), threshold=a["threshold"],
                                       min_silence_ms=a["min_silence_ms"],
                                       speech_pad_ms=a["speech_pad_ms"])

    # -- the step contract -----------------------------------------------------------------

    def open(self, session: Session) -> None:
        if session.info.sr != vad.SR:
            raise DuplexEvalError(f"runner {self.name!r}: runs at {vad.SR} Hz, got frames at {session.info.sr}")
        self.setup()
        if not self._load_reported:
            if not self.deterministic:
                session.event("stats", 0.0, model_load_s=self.load_s)
            self._load_reported = True
        self._vad.reset()
        self._conv = _Conversation(self, session)
        if session.round is not None:
            try:
                context = history_lines(session.round)
            except ValueError as exc:
                raise SessionFailed(f"runner {self.name!r}: {session.info.key}: {exc}") from None
            self._conv.history.extend(context)
            session.event("llm_context", 0.0, messages=context)

    def step(self, frame: np.ndarray, session: Session) -> None:
        conv = self._conv
        whole = conv.hear(frame)
        if not whole:  # the zero-padded tail of the input: not a chunk of the input
            return
        ev = self._vad.push(frame)
        if ev is not None:
            conv.on_vad(ev, session.now())

    def force(self, user_frame: np.ndarray, assistant_frame: np.ndarray, session: Session) -> None:
        """A frame of the round's GT history: kept in the heard audio, no model run on it (the
        VAD's clock moves on); the frame that straddles the round's start is a `step`."""
        if session.now() > float(session.round["start_s"]):
            return self.step(user_frame, session)
        if self._conv.hear(user_frame):
            self._vad.skip(len(user_frame))

    def close(self, session: Session) -> None:
        session.stats.update(self._conv.stats())
        self._conv = None

    def settings(self) -> dict:
        s = dict(self.args)
        s.update({"vad": self._vad.settings() if self._vad else None, **self.backend.settings()})
        return s

    def models(self) -> dict:
        return {"silero-vad": self._vad.model.record() if self._vad else None, **self.backend.models()}


class _Conversation:
    """One sample's conversation: what has been heard, turn state, history, timings."""

    def __init__(self, runner: TurnRunner, session: Session):
        self.r, self.session, self.log = runner, session, session.log
        self.heard = np.zeros(session.info.n_samples, dtype=np.float32)  # the past, at 16 kHz
        self.got = 0
        self.history: list[dict] = []
        self.turn_start = 0.0
        self.busy_until = 0.0
        self.last_reply: tuple[int, float] | None = None  # (history index, start time)
        # Per reply: wall seconds of each part, and latency (reply start - user's speech end).
        self.timings: dict[str, list[float]] = {**{k: [] for k in runner.backend.parts}, "latency": []}
        self.turns = self.replies = self.interrupts = 0

    def hear(self, frame: np.ndarray) -> bool:
        """Keep the frame; whether it lies wholly inside the input."""
        n = len(self.heard)
        a, b = min(self.got, n), min(self.got + len(frame), n)
        self.heard[a:b] = frame[:b - a]
        self.got += len(frame)
        return self.got <= n

    def on_vad(self, ev: vad.VadEvent, now: float) -> None:
        if ev.kind == "start":
            self.turn_start = ev.at
            self.log.emit("vad_start", ev.at, detected_t=now)
            if self.r.args["stop_on_user_speech"] and self.session.buf.playing(now):
                self.barge_in(now, ev.at)
        else:
            self.log.emit("vad_end", ev.at, detected_t=now)
            self.respond(self.turn_audio(self.turn_start, ev.at), now, ev.at)

    def barge_in(self, now: float, speech_t: float) -> None:
        """The user talks over a reply: cut it, abandon any compute still in flight, and
        forget a reply that never started playing (the user did not hear it)."""
        unheard = self.last_reply is not None and now <= self.last_reply[1]
        self.session.interrupt(now, reason="user_speech", speech_t=speech_t, unheard=unheard)
        self.interrupts += 1
        self.busy_until = min(self.busy_until, now)
        if unheard:
            del self.history[self.last_reply[0]]
        self.last_reply = None

    def turn_audio(self, start: float, end: float) -> np.ndarray:
        """The turn's audio from the history, padded by the pad setting, never past what was heard."""
        a = self.r.args
        pad = a[self.r.PAD] / 1000
        heard = min(self.got, len(self.heard))
        lo = max(int(round((start - pad) * vad.SR)), 0)
        hi = min(int(round((end + pad) * vad.SR)), heard)
        lo = max(lo, hi - int(a["max_turn_s"] * vad.SR))
        return self.heard[lo:hi].copy()

    def respond(self, audio: np.ndarray, now: float, speech_end: float) -> None:
        r, log, session = self.r, self.log, self.session
        begin = max(now, self.busy_until)
        measured = r.args["clock"] == "measured"
        self.turns += 1

        def log_step(step: Step) -> None:
            log.emit(step.kind, now, **self._wall(seconds=step.seconds), **step.fields)

        answer = r.backend.answer(audio, self.history, log_step)
        spent = sum(s.seconds for s in answer.steps)
        if answer.speech is None:  # nothing understood, or nothing to say: the worker was busy anyway
            self.busy_until = begin + (spent if measured else 0.0)
            return
        self.history.append({"role": "user", "content": answer.user})
        self.history.append({"role": "assistant", "content": answer.text})
        speech = answer.speech
        compute = spent if measured else float(r.args["fixed_compute_s"])
        self.busy_until = begin + compute
        start = session.place(speech, t=self.busy_until)
        self.last_reply = (len(self.history) - 1, start)
        self.replies += 1
        for s in answer.steps:
            self.timings.setdefault(s.kind, []).append(round(s.seconds, 3))
        self.timings["latency"].append(round(start - speech_end, 3))
        log.emit("speak", start, end_t=start + len(speech) / session.out_sr, text=answer.text,
                 speech_end_t=speech_end, endpoint_t=now, queued_s=begin - now, compute_s=compute,
                 **self._wall(measured_s=spent))

    def _wall(self, **values: float) -> dict:
        """Wall-clock numbers for the event log, only when the placement depends on them."""
        return values if self.r.args["clock"] == "measured" else {}

    def stats(self) -> dict:
        s: dict[str, Any] = {"turns": self.turns, "replies": self.replies, "interrupts": self.interrupts}
        if self.r.args["clock"] == "measured":
            # Wall-clock numbers only where the output depends on them anyway.
            s["compute_s"] = {k: v for k, v in self.timings.items()}
        return s
