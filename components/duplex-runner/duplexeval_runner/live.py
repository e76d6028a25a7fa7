"""Live sessions: the user side is produced while the session runs, by an examiner that hears the
model (a Full-Duplex-Bench v2-style conversation; the benchmark package says what to talk about).

A live sample has `live.json` instead of `input.wav`:

    {"format": "duplexeval-live/1", "duration_s": 45.0, "sample_rate": 16000,
     "seed": 0, "examiner": {...the examiner's script: the engine reads it...}}

`seed` (optional, default 0; an epoch's) is added to the stage's seed: the session's seed, set for
an in-process model as the stage's is for a fixed input, and handed to the examiner (LiveInfo.seed).

The core drives both sides on the runner's own clock (clocks.py): before input frame k goes to the
model, the examiner is handed the model audio played since the last frame, up to the start of frame
k, and returns frame k of the user side. So the examiner hears only what has already been played
to it, with a delay of one frame: in lockstep (StepRunner, or a frame-locked server) the model's
output for frame k is placed at the start of frame k, after the examiner made frame k, and is heard
when frame k+1 is made; in realtime (StreamRunner) the receiver places audio as it arrives, at
times past the start of the frame being made. Nothing a runner places or cuts may fall before that
horizon (`Session.floor`): the recording is what the examiner heard.

Every existing runner is an examinee unchanged: it is fed frames at its `in_sr` and places audio
at its `out_sr`, as for a fixed input. The examiner speaks at the runner's `in_sr` and hears at its
`out_sr` (converting for its own parts as it needs). The recorded user channel is the frames sent,
at in_sr, converted once to the session's `sample_rate` at the end; the model channel as `render`
makes it. Both are exactly `duration_s` long.

An examiner (registered under the `duplexeval.examiners` entry points, registry.py) implements:

- `setup()` (load its models once), `name`, `deterministic`, `settings()`, `models()`, like a
  runner; built once per stage as `cls(seed=seed, **examiner_args)`; optionally `usage()`, numbers
  about the stage's work (LLM requests, cache hits) for stage.json's invocation notes;
- `open(script, info, log)`: a session starts (`info`: LiveInfo); returns the session's examiner,
  with
  - `frame(heard, t, n)`: `heard` the model audio (float32 at info.hear_sr) played over
    [previous t, t); return n samples (float32 at info.speak_sr) of the user side from t on (n at
    most TICK_S long: a runner frame is asked for in such ticks, the later ones hearing nothing
    new, since the model's audio of that frame is not made yet);
  - `close()`: the session ended; return the examiner's record (examiner.json).
  Sessions running side by side (concurrency) each have their own.

In realtime an examiner must not block in `frame` (it runs on the event loop that paces the sends):
it does its work beside the loop (info.realtime says which clock it is on).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.settings import SHOW_CHARS
from duplexeval_common.wavio import fit_length, resample

from .clocks import RunnerFailed, check_audio, drive_step, drive_stream, frame_samples, n_out
from .events import EventLog
from .protocol import SampleInfo, Session, kind_of

FORMAT = "duplexeval-live/1"
MAX_DURATION_S = 3600.0
TICK_S = 0.02  # the longest stretch of the user side the examiner is asked for at once
# A frame-locked server (a StreamRunner on the lockstep clock, e.g. moshi-ws) answers each frame after
# it has it: frame k is made once its output up to this many frames before k has arrived, or after
# FRAME_LOCK_WAIT_S (then made anyway, and counted).
FRAME_LOCK_LAG = 2
FRAME_LOCK_WAIT_S = 1.0


@dataclass(frozen=True)
class LiveInfo:
    key: str            # "<subset>/<id>"
    duration_s: float
    speak_sr: int       # the rate the examiner speaks at (the runner's in_sr)
    hear_sr: int        # the rate it hears the model at (the runner's out_sr)
    realtime: bool      # the runner's clock is "realtime": frame() must not block
    seed: int | None = None


def show(value: Any) -> str:
    """A value as a message may quote it: its repr, at most SHOW_CHARS (a live.json may hold anything)."""
    text = repr(value)
    return text if len(text) <= SHOW_CHARS else text[:SHOW_CHARS - 3] + "..."


def check_script(doc: Any, what: str) -> dict:
    """live.json, checked: one line naming the sample and the problem."""
    if not isinstance(doc, dict):
        raise DuplexEvalError(f"{what}: live.json must be an object")
    if doc.get("format") != FORMAT:
        raise DuplexEvalError(f"{what}: live.json format must be {FORMAT!r}, got {show(doc.get('format'))}")
    d = doc.get("duration_s")
    if isinstance(d, bool) or not isinstance(d, (int, float)) or not 0 < d <= MAX_DURATION_S:
        raise DuplexEvalError(f"{what}: live.json duration_s must be a number in (0, {MAX_DURATION_S:g}], got {show(d)}")
    sr = doc.get("sample_rate")
    if isinstance(sr, bool) or not isinstance(sr, int) or not 8000 <= sr <= 192000:
        raise DuplexEvalError(f"{what}: live.json sample_rate must be an integer in [8000, 192000], got {show(sr)}")
    seed = doc.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**31:
        raise DuplexEvalError(f"{what}: live.json seed must be a whole number in [0, 2^31), got {show(seed)}")
    if not isinstance(doc.get("examiner"), dict):
        raise DuplexEvalError(f"{what}: live.json examiner must be an object (the examiner's script)")
    try:  # a lone surrogate escape ("\ud800") is JSON but no text: it could not be spoken, sent or written
        json.dumps(doc, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise DuplexEvalError(f"{what}: live.json holds a lone surrogate ({show(exc.object[exc.start:exc.end])}), "
                              "which is not text") from None
    return doc


class LiveFeed:
    """Frame k of the user side, made by the examiner from what it has heard (see the module)."""

    def __init__(self, examiner: Any, session: Session, F: int, n_in: int, hear_sr: int,
                 frame_locked: bool = False):
        self.examiner, self.session, self.F = examiner, session, F
        self.in_sr, self.hear_sr = session.info.sr, int(hear_sr)
        self.sent = np.zeros(n_in, dtype=np.float32)  # the user side as played, at in_sr
        self.heard_to = 0  # model samples (hear_sr) handed over so far
        self.frame_locked = frame_locked
        self.waits_timed_out = 0

    def _have(self, k: int) -> bool:
        """A frame-locked server's output has come up to FRAME_LOCK_LAG frames before frame k."""
        return self.session.buf.write_pos * self.in_sr >= (k - FRAME_LOCK_LAG) * self.F * self.hear_sr

    async def wait(self, k: int) -> None:
        """Frame-locked (a lockstep StreamRunner): before frame k is made, the model's output up to
        FRAME_LOCK_LAG frames before it has arrived, or FRAME_LOCK_WAIT_S have passed (counted)."""
        import asyncio
        loop = asyncio.get_running_loop()
        end = loop.time() + FRAME_LOCK_WAIT_S
        while not self._have(k):
            if loop.time() >= end:
                self.waits_timed_out += 1
                return
            await asyncio.sleep(0.001)

    def __call__(self, k: int) -> np.ndarray:
        F, t = self.F, k * self.F / self.in_sr
        if self.frame_locked:  # what has arrived is what has played: its output is placed by frame count
            t_heard = min(t, self.session.buf.write_pos / self.hear_sr)
        else:
            t_heard = t
        self.session.floor = t_heard  # nothing is placed or cut before what the examiner has heard
        cut = int(round(t_heard * self.hear_sr))
        heard = self.session.buf.slice(self.heard_to, cut)
        self.heard_to = max(self.heard_to, cut)
        # In ticks of at most TICK_S, so the examiner's timing does not depend on the runner's frame
        # (a control's frame may be a second long); within a frame it hears nothing new.
        tick = max(int(round(TICK_S * self.in_sr)), 1)
        parts = []
        for a in range(0, F, tick):
            n = min(tick, F - a)
            y = check_audio(self.examiner, self.examiner.frame(heard if a == 0 else heard[:0],
                                                               (k * F + a) / self.in_sr, n), f"audio at frame {k}")
            if len(y) != n:
                raise RunnerFailed(f"examiner {self.examiner.name!r} returned {len(y)} samples at frame {k}, "
                                   f"expected {n}")
            parts.append(y)
        y = np.concatenate(parts) if len(parts) > 1 else parts[0]
        a, b = min(k * F, len(self.sent)), min((k + 1) * F, len(self.sent))
        self.sent[a:b] = y[:b - a]
        return y


def render_live(runner, examiner, script: dict, log: EventLog, *, key: str, seed: int | None = None,
                task: str | None = None) -> tuple[np.ndarray, np.ndarray, Session, dict]:
    """One live session: (user side, model side) both at the script's sample_rate and exactly its
    duration long, the model's session, and the examiner's record."""
    kind = kind_of(runner)
    if kind == "offline":
        raise RunnerFailed(f"runner {runner.name!r} replays outputs made elsewhere: it cannot take part in "
                           "a live session")
    sr, duration = int(script["sample_rate"]), float(script["duration_s"])
    in_sr = runner.in_sr or sr
    out_sr = runner.out_sr or in_sr
    n_in = int(round(duration * in_sr))
    subset, _, sid = key.partition("/")
    info = SampleInfo(key=key, subset=subset, id=sid, duration_s=n_in / in_sr, sr=in_sr, n_samples=n_in, task=task)
    live = LiveInfo(key=key, duration_s=n_in / in_sr, speak_sr=in_sr, hear_sr=out_sr,
                    realtime=kind == "stream" and runner.clock == "realtime", seed=seed)
    log.emit("session_start", 0.0, sr=sr, runner_in_sr=in_sr, runner_out_sr=out_sr,
             n_samples=int(round(duration * sr)), clock=runner.clock, live=True)
    ex = examiner.open(script["examiner"], live, log)
    ex.name = getattr(ex, "name", examiner.name)
    feeds: list[LiveFeed] = []

    def feed(session: Session):
        f = LiveFeed(ex, session, frame_samples(runner, in_sr), n_in, out_sr,
                     frame_locked=kind == "stream" and runner.clock == "lockstep")
        feeds.append(f)
        return f

    x = np.zeros(n_in, dtype=np.float32)  # the length the drivers pace by; the frames come from the feed
    try:
        if kind == "step":
            session = drive_step(runner, x, info, out_sr, log, feed=feed)
        else:
            session = drive_stream(runner, x, info, out_sr, log, feed=feed)
    finally:
        record = ex.close()
    n = int(round(duration * sr))
    y = session.buf.audio(n_out(n_in, in_sr, out_sr))
    out = fit_length(resample(y, out_sr, sr), n)
    user = fit_length(resample(feeds[-1].sent if feeds else x, in_sr, sr), n)
    session.stats["placed_after_input_s"] = round(max(session.buf.write_pos - len(y), 0) / out_sr, 6)
    session.stats["placed_before_horizon"] = session.late_places
    if feeds and feeds[-1].frame_locked:
        session.stats["frame_lock_waits_timed_out"] = feeds[-1].waits_timed_out
    log.emit("end", n / sr, n_samples=n)
    return user, out, session, record


def stereo(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Two mono channels of one length as one (n, 2) array: left the examiner, right the model."""
    return np.stack([np.asarray(left, np.float32), np.asarray(right, np.float32)], axis=1)
