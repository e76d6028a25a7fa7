"""What a runner is: the contracts model adapters implement, and the session the core hands them.

The core (this package) owns time and files: it reads `input.wav`, resamples it to the
runner's `in_sr`, feeds it frame by frame on its clock, places the model's audio on the
input's timeline (`Session`, over a TimelineBuffer), timestamps every event, fits the
output to exactly the input's length and writes output.wav, events.jsonl and runner.json.
A runner never holds the whole input: it sees frame k only when the clock reaches the end
of frame k, so it cannot read ahead of its clock.

Three kinds of runner, one per way a model consumes time (clocks.py drives each):

- `StepRunner` (clock "lockstep" or "simulated"): frame-synchronous, in process.
  `open(session)`, then `step(frame, session)` once per `frame` input samples, in order,
  then `close(session)`. The audio `step` returns is output frame k and is placed at the
  start of input frame k (the layout of Moshi's offline inference and of Full-Duplex-Bench's
  Moshi client); a runner may also `session.place(audio, t)` anywhere (a cascade places a
  reply at detection + compute time). Driven as fast as it runs: deterministic for a seed.
- `StreamRunner` (clock "realtime", or "lockstep" for frame-locked servers fed as fast as
  they drain): a network session per sample. `connect(session)` returns a `Connection`
  whose coroutines the core awaits: `open()` (connect, handshake, prompt; the clock starts
  when it returns), `send(frame, k)` for frame k at t0 + (k+1) * frame on absolute
  deadlines (never sleep-per-frame), `receive()` running beside the sender and calling
  `session.place` / `session.interrupt` as messages arrive, `finish()` after the last frame
  (input plus `grace_s` of silence) and `close()`. Drift (actual minus scheduled send time)
  is logged per frame; a session whose drift passes DRIFT_LIMIT_MS anywhere is run again by the
  stage (up to DRIFT_RETRIES more times), and a sample whose last try drifted too is recorded
  ineligible with that reason. A per-sample deadline (input + grace + `deadline_margin_s`)
  bounds the whole session, so a silent or stuck server cannot hang the run.
- `OfflineRunner` (clock "simulated"): `run(user, sr, log)` over the whole input; only for
  things that are not models listening live (the `replay` of outputs made elsewhere).

Multi-round samples (MTR-DuplexBench; rounds.py): a sample with `round.json` is one round of a
dialogue. `session.round` is the parsed round.json (None for an ordinary sample), available in
`open`. The runner's class attribute `history` says how it meets the ground-truth (GT) history
before the round's `start_s`: "teacher-forced" (a StepRunner with a real `force`: for every frame
that starts before start_s the core calls `force(user_frame, assistant_frame, session)` instead of
`step`, assistant_frame being the GT model audio of that frame at `in_sr`), "replayed" (the
default: it runs over the history as over any input) or "external" (an OfflineRunner replaying
outputs made elsewhere). Whatever the mode, the core replaces the output before start_s with the
GT history (history.wav).

Every runner: `name`, `clock`, `in_sr` / `out_sr` (None: the input's rate), `setup()` (load
models once; cheap when called again), `settings()` and `models()` (recorded in
runner.json), `deterministic` (the output depends only on input, settings and seed: the
event log then carries no wall times), `SETTINGS` (its runner_args, declared: settings.py). It is
built as `cls(seed=seed, **runner_args)` and takes its arguments with
`self.args, profile = self.SETTINGS.resolve(self.name, runner_args)`, which checks every name and
value (one line for the first problem).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from duplexeval_common.errors import DuplexEvalError

from .events import EventLog
from .settings import Spec
from .timeline import TimelineBuffer

CLOCKS = ("lockstep", "realtime", "simulated")
DRIFT_LIMIT_MS = 20.0
DRIFT_RETRIES = 2  # more tries of a session that drifted past the limit, before it is ineligible
# How a runner meets a round's ground-truth history (the class attribute `history`).
HISTORY_MODES = ("teacher-forced", "replayed", "external")


class SessionFailed(DuplexEvalError):
    """The model or its server refused, ended or lost the session: the sample fails with this
    one line (or, once the input has ended, the output so far is kept and the line logged)."""


@dataclass(frozen=True)
class SampleInfo:
    """Which sample a session is for (the input itself is never handed over)."""
    key: str          # "<subset>/<id>"
    subset: str
    id: str
    duration_s: float
    sr: int           # the rate frames arrive at (the runner's in_sr, or the input's)
    n_samples: int    # input samples at `sr`
    # the task its dataset's manifest declares (a profile's by_task settings), None without one
    task: str | None = field(default=None, compare=False)
    # the parsed round.json of a round sample (rounds.py); None otherwise (not hashed or compared)
    round: dict | None = field(default=None, compare=False)


class Session:
    """One sample's output timeline and event log, owned by the core.

    `now()` is the clock's time on the input timeline: for a step runner, the end of the
    frame being handled; for a stream runner, seconds since the clock started (t0).
    `round` is the parsed round.json of a round sample (None for an ordinary sample)."""

    def __init__(self, info: SampleInfo, out_sr: int, log: EventLog, now: Callable[[], float]):
        self.info = info
        self.round: dict | None = info.round
        self.round_record: dict | None = None  # runner.json "round", set by the core after a round
        self.out_sr = int(out_sr)
        self.log = log
        self.stats = log.stats
        n = int(round(info.duration_s * self.out_sr))
        self.buf = TimelineBuffer(self.out_sr, capacity=n, limit=n + self.out_sr)  # 1 s past the end kept
        self._now = now
        # A live session (live.py): what the examiner has already heard ends here; audio placed
        # before it starts there instead (counted), and no cut reaches back past it.
        self.floor = 0.0
        self.late_places = 0

    def now(self) -> float:
        return self._now()

    def place(self, audio: np.ndarray, t: float | None = None) -> float:
        """Queue model audio (float32 mono at out_sr) to play from t (default: now), or right
        after what is queued; return the time it starts."""
        t = self.now() if t is None else t
        if t < self.floor:
            self.late_places += 1
            t = self.floor
        return self.buf.write(t, audio) / self.out_sr

    def interrupt(self, t: float | None = None, reason: str = "interrupt", **fields: Any) -> float:
        """Drop what has not played by t (default: now); log it (with `fields` on the
        `interrupt` event); return the seconds dropped."""
        t = max(self.now() if t is None else t, self.floor)
        dropped = self.buf.interrupt(t) / self.out_sr
        self.log.emit("interrupt", t, reason=reason, discarded_s=dropped, **fields)
        if dropped:
            self.log.emit("truncate", t, discarded_s=dropped)
        return dropped

    def played(self, start: float, seconds: float, t: float | None = None) -> float:
        """Of `seconds` of audio placed to start at `start`, how much has played by t."""
        t = self.now() if t is None else t
        return min(max(t - start, 0.0), max(seconds, 0.0))

    def event(self, type: str, t: float | None = None, **fields: Any) -> dict:
        return self.log.emit(type, self.now() if t is None else t, **fields)


class BaseRunner:
    """Defaults for the optional parts of every contract."""

    name = "base"
    clock = "simulated"
    deterministic = False
    in_sr: int | None = None
    out_sr: int | None = None
    profile: dict | None = None  # the profile file's record (profiles.py), when the runner has one
    SETTINGS: Spec = Spec()  # its runner_args (settings.py): none unless it declares some
    # How a round's GT history reaches the runner (HISTORY_MODES; rounds.py): "replayed" runs the
    # runner over the history as over any input, its output there replaced by the GT.
    history: str = "replayed"

    def setup(self) -> None:
        pass

    def settings(self) -> dict[str, Any]:
        return {}

    def models(self) -> dict[str, Any]:
        return {}


class StepRunner(BaseRunner):
    """Frame-synchronous, in process (see the module docstring)."""

    clock = "lockstep"
    frame_ms: float = 80.0

    def open(self, session: Session) -> None:
        pass

    def step(self, frame: np.ndarray, session: Session) -> np.ndarray | None:
        raise NotImplementedError

    def force(self, user_frame: np.ndarray, assistant_frame: np.ndarray, session: Session) -> np.ndarray | None:
        """A frame of a round's GT history (`history` = "teacher-forced" only): the user's frame and
        the GT model audio over the same span (both at in_sr, the same length), instead of `step`.
        Take in what the model would have heard and said; audio returned is placed like `step`'s
        (at the frame's start), and whatever lands before the round's start_s is replaced by the GT."""
        raise NotImplementedError

    def close(self, session: Session) -> None:
        pass


class Connection:
    """One network session (see StreamRunner). Coroutines; raise SessionFailed for a
    failure the sample should carry as its reason."""

    async def open(self) -> None:
        pass

    async def send(self, frame: np.ndarray, k: int) -> None:
        raise NotImplementedError

    async def receive(self) -> None:
        """Read the server until it closes; place audio, interrupts and events on the session."""
        raise NotImplementedError

    async def finish(self) -> None:
        """After the last frame: the end-of-input message, if the protocol has one, and a short
        wait for what is still coming."""

    async def close(self) -> None:
        """Disconnect; never raises."""


class StreamRunner(BaseRunner):
    """A network session per sample (see the module docstring)."""

    clock = "realtime"
    frame_ms: float = 20.0
    grace_s: float = 0.0          # silence sent after the input (output keeps flowing)
    open_timeout_s: float = 10.0  # connect + handshake + prompt
    deadline_margin_s: float = 10.0  # per-sample deadline: input + grace + this
    drift_limit_ms: float = DRIFT_LIMIT_MS  # set by the stage from runner_args drift_limit_ms

    def connect(self, session: Session) -> Connection:
        raise NotImplementedError

    def deadline(self, duration_s: float) -> float:
        return duration_s + self.grace_s + self.open_timeout_s + self.deadline_margin_s


class OfflineRunner(BaseRunner):
    """The whole input at once: only for what is not a model listening live (replay)."""

    def run(self, user: np.ndarray, sr: int, *, log: EventLog, info: SampleInfo) -> np.ndarray:
        raise NotImplementedError


def history_mode(runner: Any) -> str:
    """The runner's `history` mode, checked against its kind: "teacher-forced" needs a StepRunner
    with its own `force`, "external" an OfflineRunner. A mismatch is a one-line error."""
    mode = getattr(runner, "history", "replayed")
    name = getattr(runner, "name", runner)
    if mode not in HISTORY_MODES:
        raise DuplexEvalError(f"runner {name!r} declares an unknown history mode {mode!r} "
                              f"(known: {', '.join(HISTORY_MODES)})")
    if mode == "teacher-forced" and not (isinstance(runner, StepRunner)
                                         and type(runner).force is not StepRunner.force):
        raise DuplexEvalError(f"runner {name!r} declares history 'teacher-forced' but is no StepRunner "
                              "with a force() of its own")
    if mode == "external" and not isinstance(runner, OfflineRunner):
        raise DuplexEvalError(f"runner {name!r} declares history 'external', which only an OfflineRunner "
                              "(outputs made elsewhere) can have")
    return mode


def kind_of(runner: Any) -> str:
    for cls, kind in ((StepRunner, "step"), (StreamRunner, "stream"), (OfflineRunner, "offline")):
        if isinstance(runner, cls):
            return kind
    raise DuplexEvalError(f"runner {getattr(runner, 'name', runner)!r} is neither a StepRunner, "
                          "a StreamRunner nor an OfflineRunner")
