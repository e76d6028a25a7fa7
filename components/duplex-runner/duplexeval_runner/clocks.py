"""The clocks: how the core feeds a runner its input and when.

- `drive_step` (StepRunner; clock "lockstep" or "simulated"): frame k is handed over once,
  as a copy, with the session's time at the end of frame k; the audio returned is placed at
  the start of frame k. As fast as the model runs, so the result does not depend on speed.
- `drive_stream` (StreamRunner): one network session on the shared event loop. With the
  "realtime" clock frame k goes out at t0 + (k+1) * frame (when a live microphone would
  have delivered all of it), on absolute deadlines; the drift (actual minus scheduled send
  time) is logged per frame and summarised in the stats, and a sample whose drift passes
  DRIFT_LIMIT_MS anywhere is marked ineligible (`session.stats["ineligible"]`; the stage then runs it
  again, up to `drift_retries` times, stage.py). With the
  "lockstep" clock frames go out as fast as the connection takes them (a frame-locked
  server such as Moshi's). Either way the session is bounded by the runner's deadline.
- `drive_offline` (OfflineRunner): the whole input at once.

Concurrent samples (`concurrency` > 1, stage.py) run their sessions on one event loop in one
thread (`shared_loop`), so pacing is not shared out between interpreters' loops by the GIL.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import gc
import sys
import threading
from typing import Any

import numpy as np

from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.wavio import resample

from .events import EventLog
from .protocol import (DRIFT_LIMIT_MS, OfflineRunner, SampleInfo, Session, SessionFailed,
                       StepRunner, StreamRunner)
from .settings import whole_samples

CLOSE_TIMEOUT_S = 5.0


class RunnerFailed(DuplexEvalError):
    """The runner broke its contract (bad output); one line, the sample fails."""


def frame_samples(runner: Any, sr: int) -> int:
    """Samples per frame at `sr` (settings.whole_samples, the rule a `frame_ms` setting is checked by)."""
    n = whole_samples(runner.frame_ms, sr)
    if n is None:
        raise DuplexEvalError(f"runner {runner.name!r}: frame_ms {runner.frame_ms!r} is not a whole number "
                              f"of samples at {sr} Hz")
    return n


def check_audio(runner: Any, y: Any, what: str) -> np.ndarray:
    y = np.asarray(y, dtype=np.float32)
    if y.ndim != 1:
        raise RunnerFailed(f"runner {runner.name!r} returned {what} of shape {y.shape}, expected mono")
    if not np.isfinite(y).all():
        raise RunnerFailed(f"runner {runner.name!r} returned non-finite {what}")
    return y


def one_line(exc: BaseException) -> str:
    """`Type: message` of an exception on one line."""
    return " ".join(f"{type(exc).__name__}: {exc}".split())


def _frame(x: np.ndarray, k: int, F: int) -> np.ndarray:
    """Input frame k, a fresh copy (zero-padded at the end): never a view into the input."""
    out = np.zeros(F, dtype=np.float32)
    part = x[k * F:(k + 1) * F]
    out[:len(part)] = part
    return out


# -- lockstep / simulated, in process -----------------------------------------------------

def drive_step(runner: StepRunner, x: np.ndarray, info: SampleInfo, out_sr: int, log: EventLog,
               forced: tuple[np.ndarray, int] | None = None, feed=None) -> Session:
    """forced: (the GT model audio at info.sr, the round's first sample at info.sr) of a round whose
    runner is teacher-forced: frames starting before that sample go to `force` instead of `step`.
    feed: a live session's user side (live.py), `feed(session)` giving frame k as `f(k)`; `x` then
    only gives the length."""
    F = frame_samples(runner, info.sr)
    clock = {"t": 0.0}
    session = Session(info, out_sr, log, now=lambda: clock["t"])
    get = feed(session) if feed is not None else (lambda k: _frame(x, k, F))
    n_frames = -(-len(x) // F)
    runner.open(session)
    n_forced = 0
    if forced is not None:
        gt, start = forced
        n_forced = min(-(-start // F), n_frames)  # frames k with k * F < start
    for k in range(n_frames):
        clock["t"] = (k + 1) * F / info.sr
        if k < n_forced:
            y = runner.force(_frame(x, k, F), _frame(gt, k, F), session)
            what = f"audio at forced step {k}"
        else:
            y = runner.step(get(k), session)
            what = f"audio at step {k}"
        if y is not None:
            session.place(check_audio(runner, y, what), t=k * F / info.sr)
    if forced is not None:
        session.stats["forced_steps"] = n_forced
    clock["t"] = n_frames * F / info.sr
    runner.close(session)
    session.stats.setdefault("steps", n_frames)
    return session


# -- network sessions -----------------------------------------------------------------------

_loop_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def shared_loop() -> asyncio.AbstractEventLoop:
    """One event loop in a daemon thread for every network session of this process."""
    global _loop
    with _loop_lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="duplex-runner-loop", daemon=True).start()
            _loop = loop
        return _loop


_prepared = threading.Event()


def prepare_for_realtime() -> None:
    """Once per process, before realtime sessions run side by side on the shared loop: take
    every pause of the interpreter that would otherwise fall mid-stream out of the way.

    - the resampler of each finished sample (duplexeval_common.polyphase) is readied now: it
      imports scipy.special and designs its filter, which holds the interpreter for about half a
      second;
    - what exists now (modules, SDK classes, clients) is frozen out of the garbage collector: a
      full collection walks every object (tens of ms after an SDK's imports), enough to push a
      frame past the drift limit;
    - the interpreter switches threads every 1 ms instead of 5: a worker thread writing a finished
      sample's files then delays the loop's next send by at most about that."""
    if _prepared.is_set():
        return
    resample(np.zeros(480, dtype=np.float32), 24000, 16000)
    gc.collect()
    gc.freeze()
    sys.setswitchinterval(0.001)
    _prepared.set()


def run_on_loop(coro) -> Any:
    """Run a coroutine on the shared loop from a worker thread and wait for its result."""
    fut = asyncio.run_coroutine_threadsafe(coro, shared_loop())
    try:
        return fut.result()
    except concurrent.futures.CancelledError:
        raise SessionFailed("the session was cancelled") from None


def drive_stream(runner: StreamRunner, x: np.ndarray, info: SampleInfo, out_sr: int,
                 log: EventLog, feed=None) -> Session:
    """feed: a live session's user side, as for drive_step."""
    return run_on_loop(_stream(runner, x, info, out_sr, log, feed))


async def _stream(runner: StreamRunner, x: np.ndarray, info: SampleInfo, out_sr: int,
                  log: EventLog, feed=None) -> Session:
    loop = asyncio.get_running_loop()
    state: dict[str, Any] = {"t0": None}

    def now() -> float:
        return 0.0 if state["t0"] is None else loop.time() - state["t0"]

    session = Session(info, out_sr, log, now=now)
    F = frame_samples(runner, info.sr)
    get = feed(session) if feed is not None else (lambda k: _frame(x, k, F))
    frame_s = F / info.sr
    n_speech = -(-len(x) // F)
    total = max(n_speech, -(-int(round((info.duration_s + runner.grace_s) * info.sr)) // F))
    realtime = runner.clock == "realtime"
    hard = loop.time() + runner.deadline(info.duration_s)
    name = runner.name
    drifts: list[float] = []
    sent = 0
    conn = runner.connect(session)
    recv: asyncio.Task | None = None

    def left() -> float:
        return hard - loop.time()

    async def bounded(coro, what: str, limit: float | None = None):
        limit = left() if limit is None else min(limit, left())
        try:
            return await asyncio.wait_for(coro, timeout=max(limit, 0.001))
        except asyncio.TimeoutError:
            at = f" at {now():.1f} s" if state["t0"] is not None else ""
            raise SessionFailed(f"runner {name!r}: no progress {what} within {limit:.1f} s{at} "
                                "(the server is silent or stuck)") from None
        except OSError as exc:  # refused, reset, TLS: the sample's reason, not an internal error
            raise SessionFailed(f"runner {name!r}: {what} failed ({one_line(exc)})") from None

    def receiver_ended() -> bool:
        """The receive task is done: fail the sample, or (after the input) stop and keep the output."""
        exc = None if recv.cancelled() else recv.exception()
        t = state.get("recv_end", now())  # when the receiver stopped, not when that was noticed
        if isinstance(exc, DuplexEvalError):
            why = str(exc)
        elif exc is not None:
            why = f"runner {name!r}: the connection failed ({one_line(exc)})"
        else:
            why = f"runner {name!r}: the server closed the session"
        # lockstep: frames do not follow the wall clock, so the input has ended only once the
        # session finished; realtime: once the clock passed the input's length
        if not state.get("finished") and (not realtime or t < info.duration_s):
            raise SessionFailed(f"{why} (at {t:.1f} s, before the input ended)")
        log.emit("error", t, reason=f"{why} (at {t:.1f} s, after the input ended; output kept)")
        return True

    try:
        await bounded(conn.open(), "opening the session", runner.open_timeout_s)
        state["t0"] = loop.time()
        log.emit("clock_start", 0.0, clock=runner.clock, frame_ms=runner.frame_ms, grace_s=runner.grace_s,
                 frames=total)
        recv = asyncio.create_task(conn.receive())
        recv.add_done_callback(lambda _t: state.setdefault("recv_end", now()))
        ended = False
        for k in range(total):
            due = state["t0"] + (k + 1) * frame_s
            if realtime:
                while due > loop.time():  # the loop may wake a timer up to its resolution early
                    await asyncio.sleep(due - loop.time())
            else:
                await asyncio.sleep(0)  # let the receiver run even if send() never waits
            if recv.done() and receiver_ended():
                ended = True
                break
            if left() <= 0:
                raise SessionFailed(f"runner {name!r}: the sample's deadline passed at {now():.1f} s, "
                                    f"frame {k} of {total}")
            if feed is not None and not realtime and k < n_speech:  # a live session, frame-locked (live.py)
                await get.wait(k)
            sent_at = loop.time()
            await bounded(conn.send(get(k) if k < n_speech else np.zeros(F, np.float32), k),
                          f"sending frame {k}")
            sent += 1
            if realtime:
                drift = (sent_at - due) * 1000.0
                drifts.append(drift)
                log.emit("send", (k + 1) * frame_s, frame=k, drift_ms=drift,
                         **({"grace": True} if k >= n_speech else {}))
        if not ended:
            try:
                await bounded(conn.finish(), "finishing the session")
            except SessionFailed as exc:
                if not realtime:  # lockstep: finish() is where the input's output arrives
                    raise
                # realtime: the whole input (and the grace) was sent; keep what came
                log.emit("error", now(), reason=f"{exc} (after the input ended; output kept)")
            state["finished"] = True
            if recv.done():
                receiver_ended()
    finally:
        if recv is not None and not recv.done():
            recv.cancel()
            try:
                await recv
            except BaseException:
                pass
        try:
            await asyncio.wait_for(conn.close(), timeout=CLOSE_TIMEOUT_S)
        except BaseException:
            pass
    if realtime:
        drift_stats(session, drifts, frame_s, getattr(runner, "drift_limit_ms", DRIFT_LIMIT_MS))
    session.stats.setdefault("frames_sent", sent)
    return session


def drift_stats(session: Session, drifts: list[float], frame_s: float, limit_ms: float = DRIFT_LIMIT_MS) -> None:
    d = np.asarray(drifts, dtype=np.float64)
    st = session.stats
    st["frames_sent"] = len(d)
    st["drift_max_ms"] = round(float(d.max()), 3) if len(d) else 0.0
    st["drift_p99_ms"] = round(float(np.percentile(d, 99)), 3) if len(d) else 0.0
    st["drift_limit_ms"] = limit_ms
    st["drift_late_frames"] = int((d > limit_ms).sum())
    st["drift_exceeded"] = st["drift_late_frames"] > 0
    if st["drift_exceeded"]:
        k = int(np.argmax(d > limit_ms))
        reason = (f"send drift {d[k]:.1f} ms > {limit_ms:g} ms at frame {k} "
                  f"(max {d.max():.1f} ms): the pacing fell behind real time")
        session.log.emit("error", (k + 1) * frame_s, reason=reason)
        st["ineligible"] = reason


# -- offline ------------------------------------------------------------------------------------

def drive_offline(runner: OfflineRunner, x: np.ndarray, info: SampleInfo, out_sr: int,
                  log: EventLog) -> Session:
    session = Session(info, out_sr, log, now=lambda: 0.0)
    y = check_audio(runner, runner.run(x, info.sr, log=log, info=info), "audio")
    session.buf.write(0.0, y)
    return session


def n_out(n_in: int, sr: int, out_sr: int) -> int:
    return int(round(n_in * out_sr / sr))
