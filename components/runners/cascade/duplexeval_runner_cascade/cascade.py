"""`cascade`: a real half-duplex cascade, VAD -> ASR -> LLM -> TTS.

A StepRunner at 16 kHz in 32 ms frames: each frame is one Silero VAD chunk, pushed as it
arrives (a last partial frame, zero-padded by the core, is not pushed, as before). The runner
keeps its own history of the user's audio; a turn's audio is cut from that history, never past
what has been heard. A user turn
ends when the VAD has heard `min_silence_ms` of silence; at that detection
time the turn's audio goes to faster-whisper tiny.en, the text (with the
conversation so far in this sample) to SmolLM2-135M-Instruct, and the reply
to Piper. The reply is placed on the input timeline at

    start of compute + ASR + LLM + TTS wall seconds     (clock "measured")
    start of compute + fixed_compute_s                   (clock "fixed")

where compute starts at the detection time, or when the previous turn's
compute finished if that is later (one worker, as live). So with the
measured clock its latency is what it would be live on this machine; the
fixed clock gives a deterministic placement for byte-identical comparisons.

Barge-in (`stop_on_user_speech`): when the VAD detects user speech while a
reply is playing or still due, the reply is cut at that detection time, any
compute in flight is abandoned, and a reply that never started playing is
dropped from the conversation history (the user never heard it).

The models run inside `step`, on the frame that ended the turn (one worker); the reply is
placed with `session.place` at a time that is never before that detection, and the cut is a
`session.interrupt` at the detection time: nothing lands in the past of the decision. The
runner's clock is "simulated" (the core drives it as fast as it runs); the `clock` runner_arg
says how compute time is charged to the timeline.

Multi-round samples (duplexeval_runner/rounds.py): `history` "teacher-forced". At `open` the
round's GT history (round.json `history`: user lines as user messages, model lines as assistant
messages, in order, consecutive lines of one role joined) becomes the conversation the LLM is
given, so its first reply in the round is conditioned on the GT history (an `llm_context` event
records those messages). `force` keeps each history frame in the heard audio (so the turn audio
of the round is cut from the right place) and moves the VAD's clock on without running the VAD,
ASR or LLM on it; the frame that straddles the round's start goes through `step` (it holds the
round's first audio). From the round's start on, every frame is a `step`.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.progress import log as progress_log

from duplexeval_runner.protocol import Session, SessionFailed, StepRunner
from duplexeval_runner.rounds import history_lines
from duplexeval_runner.settings import Setting, Spec
from duplexeval_runner_controls import vad
from duplexeval_runner_controls.tts import PiperTTS, noise_settings, voice_rate

from .asr import WhisperASR
from .llm import SYSTEM_PROMPT, SmolLM

CLOCKS = ("measured", "fixed")
SETTINGS = Spec(
    Setting("clock", str, "measured", "how compute time is charged to the timeline: the measured wall seconds, "
            "or fixed_compute_s (deterministic)", choices=CLOCKS),
    Setting("fixed_compute_s", float, 1.0, "clock fixed: seconds from a turn's end to its reply", ge=0),
    *vad.endpointer_settings(500),
    Setting("asr_pad_ms", float, 200, "audio kept before and after a turn for the ASR, in ms", ge=0),
    Setting("max_turn_s", float, 30.0, "the longest turn the ASR hears (its last seconds), in seconds", gt=0),
    Setting("stop_on_user_speech", bool, True, "barge-in: cut the reply when the user starts speaking"),
    Setting("system_prompt", str, SYSTEM_PROMPT, "the LLM's system prompt"),
    Setting("max_new_tokens", int, 40, "the longest reply, in LLM tokens", ge=1),
    # torch on 2 threads slows down badly when the other core is busy
    Setting("llm_threads", int, 1, "torch threads of the LLM", ge=1),
    Setting("asr_threads", int, 2, "CPU threads of faster-whisper", ge=1),
    *noise_settings(),
)


class CascadeRunner(StepRunner):
    name = "cascade"
    clock = "simulated"
    history = "teacher-forced"
    in_sr = vad.SR
    frame_ms = vad.CHUNK * 1000 / vad.SR  # 32 ms: one VAD chunk per step
    SETTINGS = SETTINGS

    def __init__(self, seed: int | None = None, **args: Any):
        self.args, _ = self.SETTINGS.resolve(self.name, args)
        a = self.args
        self.seed = seed
        # Constructing these checks the packages (MissingDependency with the pip hint); loading waits.
        self.asr = WhisperASR(cpu_threads=a["asr_threads"])
        self.llm = SmolLM(max_new_tokens=a["max_new_tokens"], threads=a["llm_threads"],
                          system_prompt=a["system_prompt"])
        self.tts = PiperTTS(noise_scale=a["tts_noise_scale"], noise_w_scale=a["tts_noise_w_scale"])
        self.out_sr = voice_rate()
        # With the fixed clock the placement depends on no wall time: same input, same bytes.
        self.deterministic = a["clock"] == "fixed"
        self._vad: vad.Endpointer | None = None
        self.load_s: dict[str, float] = {}
        self._load_reported = False
        self._ready = False
        self._conv: _Conversation | None = None

    def setup(self) -> None:
        """Load every model once (the LLM takes tens of seconds)."""
        if self._ready:
            return
        a = self.args
        for name, load in (("vad", self._load_vad), ("asr", self.asr.load), ("tts", self.tts.load),
                           ("llm", self.llm.load)):
            t0 = time.perf_counter()
            load()
            self.load_s[name] = round(time.perf_counter() - t0, 3)
            progress_log(f"[duplex-runner] cascade: {name} loaded in {self.load_s[name]:.1f}s")
        # Warm up each model once, so the first turn's latency is not a cold start.
        t0 = time.perf_counter()
        self.asr.transcribe(np.zeros(vad.SR, dtype=np.float32))
        self.llm.reply([{"role": "user", "content": "Hello."}])
        self.tts.synthesize("Hello.")
        self.load_s["warmup"] = round(time.perf_counter() - t0, 3)
        progress_log(f"[duplex-runner] cascade: warm-up {self.load_s['warmup']:.1f}s "
                     f"(clock {a['clock']})")
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
            raise DuplexEvalError(f"runner 'cascade': runs at {vad.SR} Hz, got frames at {session.info.sr}")
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
                raise SessionFailed(f"runner 'cascade': {session.info.key}: {exc}") from None
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
        s.update({"vad": self._vad.settings() if self._vad else None, "asr": self.asr.settings(),
                  "llm": self.llm.settings(), "tts": self.tts.settings()})
        return s

    def models(self) -> dict:
        return {"silero-vad": self._vad.model.record() if self._vad else None,
                "faster-whisper": self.asr.record(), "smollm2": self.llm.record(),
                "piper-voice": self.tts.record()}


class _Conversation:
    """One sample's conversation: what has been heard, turn state, history, timings."""

    def __init__(self, runner: CascadeRunner, session: Session):
        self.r, self.session, self.log = runner, session, session.log
        self.heard = np.zeros(session.info.n_samples, dtype=np.float32)  # the past, at 16 kHz
        self.got = 0
        self.history: list[dict] = []
        self.turn_start = 0.0
        self.busy_until = 0.0
        self.last_reply: tuple[int, float] | None = None  # (history index, start time)
        # Per reply: wall seconds of each model, and latency (reply start - user's speech end).
        self.timings: dict[str, list[float]] = {"asr": [], "llm": [], "tts": [], "latency": []}
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
        """The turn's audio from the history, padded by asr_pad_ms, never past what was heard."""
        a = self.r.args
        pad = a["asr_pad_ms"] / 1000
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
        t0 = time.perf_counter()
        text = r.asr.transcribe(audio)
        asr_s = time.perf_counter() - t0
        log.emit("asr", now, text=text, **self._wall(seconds=asr_s), audio_s=len(audio) / vad.SR)
        if not any(c.isalnum() for c in text):
            self.busy_until = begin + (asr_s if measured else 0.0)
            return
        self.history.append({"role": "user", "content": text})
        t0 = time.perf_counter()
        reply, tokens = r.llm.reply(self.history)
        llm_s = time.perf_counter() - t0
        log.emit("llm", now, text=reply, **self._wall(seconds=llm_s), tokens=tokens)
        if not any(c.isalnum() for c in reply):
            self.history.pop()
            self.busy_until = begin + (asr_s + llm_s if measured else 0.0)
            return
        self.history.append({"role": "assistant", "content": reply})
        t0 = time.perf_counter()
        speech = r.tts.synthesize(reply)
        tts_s = time.perf_counter() - t0
        log.emit("tts", now, **self._wall(seconds=tts_s), audio_s=len(speech) / session.out_sr)
        spent = asr_s + llm_s + tts_s
        compute = spent if measured else float(r.args["fixed_compute_s"])
        self.busy_until = begin + compute
        start = session.place(speech, t=self.busy_until)
        self.last_reply = (len(self.history) - 1, start)
        self.replies += 1
        for k, v in (("asr", asr_s), ("llm", llm_s), ("tts", tts_s)):
            self.timings[k].append(round(v, 3))
        self.timings["latency"].append(round(start - speech_end, 3))
        log.emit("speak", start, end_t=start + len(speech) / session.out_sr, text=reply,
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
