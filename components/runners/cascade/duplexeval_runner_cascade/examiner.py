"""`cascade` examiner: the automated user of a live session (duplexeval_runner/live.py), built from
the cascade's parts on the user side: Silero VAD endpointing of the model's channel, faster-whisper
tiny.en of each model turn, an LLM for the examiner's next line (SmolLM2-135M offline, or any
OpenAI-compatible chat endpoint through duplexeval_common.llm's client), and Piper for its voice.

What it does in a session (live.json's `examiner` object is the script: system_prompt, opening,
goals [{id, goal, say}], end_phrase, turn_limit; `opening` and each `say` may be absent, as in
upstream's task file, where the examiner's LLM says everything):

1. At `start_s` it speaks the opening (goal 1; scripted, no LLM call; without one, the LLM's first
   line toward goal 1, asked before the session's clock starts).
2. After each of its turns it waits. Model speech that starts (the VAD's start) is the reply; when
   the VAD ends the model's turn it transcribes it, the turn counts as answered (its goal reached),
   and it asks the LLM for its next line, toward the next goal, and speaks it `response_delay_s`
   after the end was detected (never while the model is speaking: it waits for the next end, up
   to `max_listen_s`, then speaks anyway and that counts as talking over the model).
3. No model speech within `response_timeout_s` of the end of its turn: the turn is unanswered and
   it speaks the next goal's scripted `say` line (no LLM call; without one, the LLM's line toward
   the next goal, told that the other speaker did not answer).
4. After the last goal's turn, or at `turn_limit` turns, it says the end phrase and is silent.
5. Pacing presets (`preset`): "slow" (VAD threshold 0.5, 500 ms of silence ends the model's turn;
   it yields, stopping its own line, when the model starts talking over it) and "fast" (threshold
   0.6, 600 ms; it is not interrupted), after Full-Duplex-Bench v2's two examiner settings
   (DanielLin94144/Full-Duplex-Bench v2/, arXiv 2510.07838).

Its LLM requests go through a request cache (the judge cache's format and place, namespace
`examiner`): a rerun replays the examiner's lines without a call. How many were asked and how many
served from the cache is the stage's invocation note (stage.json), not part of examiner.json, so a
session computed and one replayed are the same bytes. In lockstep every step is done in
line (deterministic: with a deterministic model the session is the same bytes); on the realtime
clock the ASR, LLM and TTS of a turn run in a worker thread beside the event loop, and the line
starts when it is ready, never before the end detection plus `response_delay_s`.
"""

from __future__ import annotations

import concurrent.futures
import time
from typing import Any

import numpy as np

from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.hashing import sha256_json
from duplexeval_common.wavio import resample

from duplexeval_runner.live import LiveInfo, show
from duplexeval_runner.settings import Setting, Spec
from duplexeval_runner_controls import vad
from duplexeval_runner_controls.tts import PiperTTS, noise_settings, voice_rate

from .asr import WhisperASR
from .examiner_llm import MAX_LINE_CHARS, UNSPEAKABLE, ExaminerLLM

FORMAT = "duplexeval-examiner/1"
PRESETS = {
    "slow": {"threshold": 0.5, "min_silence_ms": 500.0, "interruptible": True},
    "fast": {"threshold": 0.6, "min_silence_ms": 600.0, "interruptible": False},
}
NO_TALK_OVER = "Do not talk over the other speaker."
START = "You start the conversation: say your first line."
NO_ANSWER = "(no answer)"
ROLE = ("You are playing the user in a spoken conversation with a voice assistant. Say one or two short "
        "spoken sentences, in plain words, as the user would.")
class ExaminerSpec(Spec):
    kind, noun = "examiner", "examiner args"


SETTINGS = ExaminerSpec(
    Setting("preset", str, "slow", "pacing: slow (yields when talked over) or fast (not interruptible)",
            choices=tuple(PRESETS)),
    Setting("start_s", float, 0.5, "when the opening starts, in seconds", ge=0),
    Setting("response_delay_s", float, 0.4, "from the detected end of the model's turn to the examiner's "
            "next line, in seconds (its thinking time; fixed, so lockstep is deterministic)", ge=0),
    Setting("response_timeout_s", float, 6.0, "no model speech this long after its turn: unanswered, it "
            "moves on", gt=0),
    Setting("max_listen_s", float, 15.0, "the model talking this long without a pause: the examiner speaks "
            "anyway", gt=0),
    Setting("llm", str, "local", "the examiner's LLM: local (SmolLM2-135M, offline) or openai (any "
            "OpenAI-compatible chat endpoint)", choices=("local", "openai")),
    Setting("llm_url", str, "", "llm openai: the endpoint's base URL (empty: $OPENAI_BASE_URL or OpenAI's)"),
    Setting("llm_model", str, "gpt-4o-mini", "llm openai: the model name"),
    Setting("api_key_env", str, "OPENAI_API_KEY", "llm openai: the environment variable holding the key"),
    Setting("llm_timeout_s", float, 30.0, "llm openai: seconds one request may take", gt=0),
    Setting("llm_max_retries", int, 2, "llm openai: retries of a failed request (429, 5xx, timeouts) before the "
            "session fails", ge=0, le=10),
    Setting("temperature", float, 0.0, "the LLM's sampling temperature (0: greedy; above it the session's seed "
            "decides the sample, so the same session gives the same lines)", ge=0, le=2),
    Setting("max_new_tokens", int, 40, "llm local: the longest line, in tokens", ge=1),
    Setting("llm_threads", int, 1, "llm local: torch threads", ge=1),
    Setting("cache", bool, True, "serve repeated LLM requests from the request cache"),
    Setting("asr_threads", int, 1, "CPU threads of faster-whisper", ge=1),
    *noise_settings(),
)


class CascadeExaminer:
    """Built once per stage; `open` gives each session its own state."""

    name = "cascade"

    def __init__(self, seed: int | None = None, **args: Any):
        self.args, _ = SETTINGS.resolve("cascade", args)
        a = self.args
        self.seed = seed
        self.preset = PRESETS[a["preset"]]
        self.asr = WhisperASR(cpu_threads=a["asr_threads"])
        self.tts = PiperTTS(noise_scale=a["tts_noise_scale"], noise_w_scale=a["tts_noise_w_scale"])
        self.llm = ExaminerLLM(a, seed)
        self.deterministic = self.llm.deterministic
        self.tts_sr = voice_rate()
        self._vad_model: vad.SileroOnnx | None = None

    def setup(self) -> None:
        self.asr.load()
        self.tts.load()
        if self._vad_model is None:
            self._vad_model = vad.SileroOnnx()

    def open(self, script: dict, info: LiveInfo, log) -> "ExaminerSession":
        return ExaminerSession(self, check_script(script, info.key), info, log)

    def speech(self, text: str, sr: int) -> np.ndarray:
        return resample(self.tts.synthesize(text, reuse=True), self.tts_sr, sr)

    def settings(self) -> dict:
        return {**self.args, "pacing": self.preset, "llm_backend": self.llm.settings(),
                "asr": self.asr.settings(), "tts": self.tts.settings()}

    def usage(self) -> dict:
        """LLM requests of this stage so far: {"requests", "cached"}."""
        return self.llm.usage()

    def models(self) -> dict:
        return {"silero-vad": self._vad_model.record() if self._vad_model else None,
                "faster-whisper": self.asr.record(), "piper-voice": self.tts.record(), "llm": self.llm.record()}


def line_problem(text: str) -> str | None:
    """Why a scripted line cannot be spoken (it goes to the TTS as it is), or None."""
    if len(text) > MAX_LINE_CHARS:
        return f"is {len(text)} characters long; a spoken line is at most {MAX_LINE_CHARS}"
    bad = UNSPEAKABLE.search(text)
    if bad:
        return f"holds a control character ({show(bad.group())} at {bad.start()}); a spoken line is plain text"
    return None


def check_script(script: Any, key: str) -> dict:
    """The examiner's part of live.json, checked: one line naming the sample and the problem."""
    def bad(msg: str):
        raise DuplexEvalError(f"{key}: live.json examiner: {msg}")
    if not isinstance(script, dict):
        bad("must be an object")
    for field in ("system_prompt", "end_phrase"):
        if not isinstance(script.get(field), str) or not script[field].strip():
            bad(f"{field} must be a non-empty string")
    if script.get("opening") is not None and not (isinstance(script["opening"], str) and script["opening"].strip()):
        bad("opening must be a non-empty string, or absent (the LLM's first line)")
    for field in ("end_phrase", "opening"):
        if script.get(field) is not None and (why := line_problem(script[field])):
            bad(f"{field} {why}")
    goals = script.get("goals")
    if not isinstance(goals, list) or not goals:
        bad("goals must be a non-empty list")
    seen = set()
    for i, g in enumerate(goals):
        if not isinstance(g, dict) or not all(isinstance(g.get(k), str) and g[k].strip() for k in ("id", "goal")) \
                or not (g.get("say") is None or (isinstance(g["say"], str) and g["say"].strip())):
            bad(f"goals[{i}] must have non-empty id and goal (and say, if given)")
        if g.get("say") is not None and (why := line_problem(g["say"])):
            bad(f"goals[{i}] say {why}")
        if g["id"] in seen:
            bad(f"goals[{i}] repeats the id {show(g['id'])}")
        seen.add(g["id"])
    limit = script.get("turn_limit", 5)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 2 <= limit <= 100:
        bad(f"turn_limit must be an integer in [2, 100], got {show(limit)}")
    return {**script, "turn_limit": limit}


class ExaminerSession:
    """One session's examiner: hears the model frame by frame, speaks its lines (module docstring)."""

    def __init__(self, engine: CascadeExaminer, script: dict, info: LiveInfo, log):
        self.e, self.script, self.info, self.log = engine, script, info, log
        a, p = engine.args, engine.preset
        self.name = engine.name
        self.goals = script["goals"]
        self.vad = vad.Endpointer(vad.SileroOnnx(engine._vad_model.path),  # its state is this stream's
                                  threshold=p["threshold"], min_silence_ms=p["min_silence_ms"])
        self.vad.reset()
        self.listen = vad.StreamResampler(info.hear_sr, vad.SR, int(round(info.duration_s * info.hear_sr)))
        self.heard = np.zeros(int(round(info.duration_s * vad.SR)) + vad.CHUNK, dtype=np.float32)
        self.got = 0      # 16 kHz model samples heard
        self.pushed = 0   # of which went through the VAD
        self.turns: list[dict] = []
        self.model_turns: list[dict] = []
        self.history: list[dict] = []  # the LLM's view: the examiner is its assistant
        self.line: dict | None = None  # the line being spoken: audio, start index, turn
        self.pending: dict | None = None  # the next line: text or future, earliest start, kind, goal
        self.state = "before"
        self.model_start: float | None = None  # the model is speaking since (VAD start), or None
        self.wait_from = 0.0
        self.talked_over = self.yielded = 0
        self.ended: dict | None = None
        self.pool = concurrent.futures.ThreadPoolExecutor(1) if info.realtime else None
        # the opening, scripted or the LLM's (asked now: the clock has not started)
        self.opening_text = script.get("opening") or self._ask(self._messages(self.goals[0], START)) \
            or self.goals[0]["goal"]
        self.opening = engine.speech(self.opening_text, info.speak_sr)
        # Every scripted line's speech, made now too: nothing is synthesized on the realtime event loop
        # (the LLM's lines are made in the worker thread with their text).
        # (only the goals a turn can reach, `_next`: a script may list more than its turn_limit allows)
        reachable = self.goals[:script["turn_limit"] - 1]
        self.spoken = {text: engine.speech(text, info.speak_sr)
                       for text in [script["end_phrase"], *(g["say"] for g in reachable if g.get("say"))]}

    # -- hearing ---------------------------------------------------------------------------

    def _hear(self, heard: np.ndarray, t: float) -> None:
        y = self.listen.push(heard)
        n = min(len(y), len(self.heard) - self.got)
        self.heard[self.got:self.got + n] = y[:n]
        self.got += n
        while self.pushed + vad.CHUNK <= self.got:
            ev = self.vad.push(self.heard[self.pushed:self.pushed + vad.CHUNK])
            self.pushed += vad.CHUNK
            if ev is not None:
                self._on_vad(ev, t)

    def _on_vad(self, ev, t: float) -> None:
        if ev.kind == "start":
            self.model_start = ev.at
            self.log.emit("examiner", t, event="model_speech_start", speech_t=ev.at)
            if self.line is not None and self.e.preset["interruptible"] and self.line["turn"]["kind"] != "end":
                self._stop_line(t, yielded=True)
            if self.state == "waiting":
                self.state = "listening"
            return
        start, self.model_start = self.model_start if self.model_start is not None else ev.at, None
        turn = {"start_s": round(start, 6), "end_s": round(ev.at, 6), "text": None}
        self.model_turns.append(turn)
        self.log.emit("examiner", t, event="model_turn", start_t=start, end_t=ev.at)
        if self.state not in ("listening", "waiting") or not self.turns or self.turns[-1]["kind"] == "end":
            return
        last = self.turns[-1]
        earliest = ev.detected + self.e.args["response_delay_s"]
        kind, goal = self._next()
        audio = self._turn_audio(start, ev.at)
        if self.pool is None:
            self._heard_reply(turn, last, self.e.asr.transcribe(audio) if len(audio) else "")
            if kind == "end":
                self.pending = {"text": self.script["end_phrase"], "kind": "end", "goal": None, "earliest": earliest}
            else:
                self.pending = {"text": self._ask(self._messages(goal)) or _fallback(goal), "kind": "follow_up",
                                "goal": goal["id"], "earliest": earliest}
        else:  # realtime: the ASR, LLM and TTS beside the event loop
            job = self.pool.submit(self._reply_job, audio, turn, last, kind, goal)
            self.pending = {"future": job, "kind": "end" if kind == "end" else "follow_up",
                            "goal": None if goal is None else goal["id"], "earliest": earliest}
        self.state = "thinking"

    def _turn_audio(self, start: float, end: float) -> np.ndarray:
        """The model's turn as heard (16 kHz), 0.2 s either side, never past what was heard."""
        lo, hi = max(int(start * vad.SR) - 3200, 0), min(int(end * vad.SR) + 3200, self.got)
        return self.heard[lo:hi].copy() if hi > lo else np.zeros(0, np.float32)

    def _heard_reply(self, turn: dict, last: dict, text: str) -> None:
        turn["text"] = text
        if not last["answered"]:
            last["answered"], last["reply_text"] = True, text
        self.history.append({"role": "user", "content": text or "..."})

    def _reply_job(self, audio: np.ndarray, turn: dict, last: dict, kind: str, goal: dict | None):
        self._heard_reply(turn, last, self.e.asr.transcribe(audio) if len(audio) else "")
        text = self.script["end_phrase"] if kind == "end" else (self._ask(self._messages(goal)) or _fallback(goal))
        return text, self.e.speech(text, self.info.speak_sr)

    # -- deciding --------------------------------------------------------------------------

    def _next(self) -> tuple[str, dict | None]:
        """The kind and goal of the next line."""
        done = len(self.turns)
        if done >= self.script["turn_limit"] - 1 or done >= len(self.goals):
            return "end", None
        return "", self.goals[done]

    def _move_on(self, t: float) -> None:
        """No answer (or no pause to answer in): the next goal's scripted line, or the end phrase."""
        kind, goal = self._next()
        if kind == "end":
            self.pending = {"text": self.script["end_phrase"], "kind": "end", "goal": None, "earliest": t}
        elif goal.get("say"):
            self.pending = {"text": goal["say"], "kind": "scripted", "goal": goal["id"], "earliest": t}
        else:  # no scripted line: the LLM's, told that the model did not answer
            self.history.append({"role": "user", "content": NO_ANSWER})
            messages = self._messages(goal)
            if self.pool is None:
                self.pending = {"text": self._ask(messages) or _fallback(goal), "kind": "follow_up",
                                "goal": goal["id"], "earliest": t}
            else:
                job = self.pool.submit(self._line_job, messages, goal)
                self.pending = {"future": job, "kind": "follow_up", "goal": goal["id"], "earliest": t}
        self.state = "thinking"

    def _line_job(self, messages: list[dict], goal: dict):
        text = self._ask(messages) or _fallback(goal)
        return text, self.e.speech(text, self.info.speak_sr)

    def _messages(self, goal: dict, extra: str = "") -> list[dict]:
        system = " ".join(x for x in (self.script["system_prompt"].strip(), NO_TALK_OVER, ROLE,
                                      f"What you want now: {goal['goal'].strip()}", extra) if x)
        return [{"role": "system", "content": system}, *self.history]

    def _ask(self, messages: list[dict]) -> str:
        return self.e.llm.line(messages, self.info.seed)[0]

    # -- speaking --------------------------------------------------------------------------

    def _start_line(self, t: float, text: str, audio: np.ndarray, kind: str, goal: str | None) -> None:
        sr = self.info.speak_sr
        if self.model_start is not None:
            self.talked_over += 1
        turn = {"index": len(self.turns), "goal": goal, "kind": kind, "text": text, "start_s": round(t, 6),
                "end_s": round(t + len(audio) / sr, 6), "planned_end_s": round(t + len(audio) / sr, 6),
                "yielded": False, "answered": False, "reply_text": None}
        self.turns.append(turn)
        if kind != "end":
            self.history.append({"role": "assistant", "content": text})
        self.line = {"audio": audio, "pos": 0, "turn": turn}
        self.state = "speaking"
        self.log.emit("examiner", t, event="speak", turn=turn["index"], kind=kind, goal=goal, text=text,
                      end_t=turn["end_s"], over_model=self.model_start is not None)

    def _stop_line(self, t: float, yielded: bool) -> None:
        turn = self.line["turn"]
        turn["end_s"] = round(t, 6)
        if yielded:
            turn["yielded"] = True
            self.yielded += 1
            self.log.emit("examiner", t, event="yield", turn=turn["index"])
        self.line = None
        self._after_line(t)

    def _after_line(self, t: float) -> None:
        if self.turns[-1]["kind"] == "end":
            self.state = "done"
            limit = len(self.turns) >= self.script["turn_limit"] and len(self.turns) - 1 < len(self.goals)
            self.ended = {"reason": "turn_limit" if limit else "end_phrase", "t": round(t, 6)}
            return
        self.state = "listening" if self.model_start is not None else "waiting"
        self.wait_from = t

    def _ready(self, t: float) -> tuple[str, np.ndarray] | None:
        p = self.pending
        if "future" in p:
            if not p["future"].done():
                return None
            text, audio = p["future"].result()
            return text, audio
        audio = self.spoken.get(p["text"])
        return p["text"], audio if audio is not None else self.e.speech(p["text"], self.info.speak_sr)

    # -- the frame contract ----------------------------------------------------------------

    def frame(self, heard: np.ndarray, t: float, n: int) -> np.ndarray:
        self._hear(heard, t)
        a = self.e.args
        if self.state == "before" and t >= a["start_s"]:
            self._start_line(t, self.opening_text, self.opening, "opening", self.goals[0]["id"])
        elif self.state == "waiting" and t - self.wait_from >= a["response_timeout_s"]:
            self.log.emit("examiner", t, event="unanswered", turn=self.turns[-1]["index"])
            self._move_on(t)
        elif self.state == "listening" and self.model_start is not None and t - self.model_start >= a["max_listen_s"]:
            self._move_on(t)  # the model does not stop: go on over it
        if self.state == "thinking" and t >= self.pending["earliest"] and (
                self.model_start is None or t - self.model_start >= a["max_listen_s"]):
            ready = self._ready(t)
            if ready is not None:
                p, self.pending = self.pending, None
                self._start_line(t, ready[0], ready[1], p["kind"], p["goal"])
        out = np.zeros(n, dtype=np.float32)
        if self.line is not None:
            line = self.line
            k = min(n, len(line["audio"]) - line["pos"])
            out[:k] = line["audio"][line["pos"]:line["pos"] + k]
            line["pos"] += k
            if line["pos"] >= len(line["audio"]):
                self.line = None
                self._after_line(t + k / self.info.speak_sr)
        return out

    def close(self) -> dict:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
        end = self.info.duration_s
        if self.line is not None:  # cut by the session's end
            self.line["turn"]["end_s"] = round(min(self.line["turn"]["end_s"], end), 6)
        ended = self.ended or {"reason": "duration", "t": round(end, 6)}
        return {"format": FORMAT, "engine": self.name, "preset": self.e.args["preset"], "turns": self.turns,
                "model_turns": self.model_turns, "goals": [g["id"] for g in self.goals],
                "goals_reached": [t["goal"] for t in self.turns if t["answered"] and t["goal"]],
                "ended": ended, "talked_over_model": self.talked_over, "yielded": self.yielded}


def _fallback(goal: dict) -> str:
    """What is said when the LLM's answer holds nothing speakable: the scripted line, else the goal."""
    return goal.get("say") or goal["goal"]
