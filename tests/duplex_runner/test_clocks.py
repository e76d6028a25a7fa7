"""The core's stream driver (clocks.drive_stream) with a StreamRunner whose Connection is local.

`Local` below is an in-process stand-in for a model server (no network, no model): it echoes each
frame it is sent back to the receiver, which places it at its arrival time, and can be told to
stay silent on open, to be slow on one send, or to fail at some time. The tests time the real
driver on the real event loop: pacing on absolute deadlines, drift and the ineligible mark, the
receiver failing before or after the input's end, and the open timeout.
"""

from __future__ import annotations

import asyncio
import shutil
import re
import time

import numpy as np
import pytest

from duplexeval_common.stage import Stage
from duplexeval_common.jsonio import read_json, read_jsonl
from duplexeval_runner import stage as stage_mod
from duplexeval_runner.events import EventLog
from duplexeval_runner.harness import render
from duplexeval_runner.protocol import Connection, SessionFailed, StreamRunner

from .conftest import make_dataset

SR = 16000
SUBSET = "synthetic_turn_taking"


class LocalConnection(Connection):
    def __init__(self, runner: "Local", session):
        self.r, self.session = runner, session
        self.queue: asyncio.Queue = asyncio.Queue()
        self.sends: list[tuple[int, float, int]] = []
        self.closed = False

    async def open(self):
        if self.r.silent_open:
            await asyncio.Event().wait()        # never answers

    async def send(self, frame, k):
        self.sends.append((k, self.session.now(), len(frame)))
        if k == self.r.slow_frame and self.session.info.id in (self.r.slow_ids or {self.session.info.id}):
            await asyncio.sleep(0.04)           # one send that takes 40 ms
        await self.queue.put(frame.copy())

    async def receive(self):
        while True:
            frame = await self.queue.get()
            fail_at = self.r.fail_at.get(self.session.info.id)
            if fail_at is not None and self.session.now() >= fail_at:
                raise SessionFailed("runner 'local': the server said goodbye")
            self.session.place(0.5 * frame)     # the echo, placed when it arrives

    async def close(self):
        self.closed = True


class Local(StreamRunner):
    name, clock, in_sr, out_sr = "local", "realtime", SR, SR

    def __init__(self, frame_ms=20.0, grace_s=0.0, silent_open=False, slow_frame=None, fail_at=None,
                 open_timeout_s=10.0):
        self.frame_ms, self.grace_s, self.open_timeout_s = frame_ms, grace_s, open_timeout_s
        self.silent_open, self.slow_frame, self.fail_at = silent_open, slow_frame, dict(fail_at or {})
        self.slow_ids: set | None = None  # samples whose slow_frame is slow (None: every sample)
        self.conns: list[LocalConnection] = []

    def connect(self, session):
        self.conns.append(LocalConnection(self, session))
        return self.conns[-1]


def voice(seconds: float) -> np.ndarray:
    t = np.arange(int(round(seconds * SR))) / SR
    return (0.3 * np.sin(2 * np.pi * 200 * t)).astype(np.float32)


def test_frames_go_out_on_absolute_deadlines_and_the_echo_never_leads():
    r = Local(frame_ms=20.0, grace_s=0.1)
    user = voice(0.4)
    log = EventLog()
    out, session = render(r, user, SR, log)
    (conn,) = r.conns
    F = 320
    assert [k for k, _, _ in conn.sends] == list(range(25))               # 0.4 s + 0.1 s grace
    for k, now, n in conn.sends:
        assert n == F and now >= (k + 1) * F / SR - 1e-9                 # never before t0 + (k+1)*frame
    sends = log.of_type("send")
    assert len(sends) == 25 and all("drift_ms" in e for e in sends) and sends[-1].get("grace") is True
    st = session.stats
    assert {"frames_sent", "drift_max_ms", "drift_p99_ms", "drift_exceeded"} <= set(st)
    assert st["frames_sent"] == 25 and st["drift_max_ms"] >= 0
    assert log.of_type("clock_start")[0]["frames"] == 25
    assert conn.closed
    # The echo of frame k arrives once frame k is sent: the output lags the input by a frame or more.
    assert not out[:F].any() and np.abs(out).max() > 0.1


def test_a_receiver_failing_before_the_input_ends_fails_the_sample():
    r = Local(fail_at={"sample": 0.1})
    with pytest.raises(SessionFailed, match=r"^runner 'local': the server said goodbye "
                                            r"\(at 0\.[1-3] s, before the input ended\)$"):
        render(r, voice(0.4), SR, EventLog())
    assert r.conns[0].closed


def test_a_receiver_failing_after_the_input_ends_keeps_the_output_with_an_error_event():
    r = Local(grace_s=0.3, fail_at={"sample": 0.45})
    log = EventLog()
    out, session = render(r, voice(0.4), SR, log)
    # (a loaded machine may add the core's pacing note, an `error` of its own: not this test's)
    (err,) = [e for e in log.of_type("error") if "pacing" not in e["reason"]]
    assert err["reason"].startswith("runner 'local': the server said goodbye (at 0.")
    assert err["reason"].endswith("after the input ended; output kept)")
    assert len(out) == int(0.4 * SR) and np.abs(out).max() > 0.1


def test_a_silent_open_hits_the_open_timeout():
    r = Local(silent_open=True, open_timeout_s=0.2)
    t = time.monotonic()
    with pytest.raises(SessionFailed, match=r"^runner 'local': no progress opening the session within 0\.2 s "
                                            r"\(the server is silent or stuck\)$"):
        render(r, voice(0.4), SR, EventLog())
    assert time.monotonic() - t < 2.0 and r.conns[0].closed


@pytest.fixture
def stage_with(monkeypatch, tmp_path):
    """Run the duplex-runner stage with an in-test runner (the registry knows only packages)."""
    def run(runner, ids=("1", "2")):
        monkeypatch.setattr(stage_mod, "build_runner", lambda cfg: runner)
        data = make_dataset(tmp_path / "data", {(SUBSET, i): (voice(0.3), SR) for i in ids})
        out = tmp_path / "out"
        stage: Stage = stage_mod.make_stage({"runner": "local"})
        stage.run([data], out, {"runner": "local"}, allow_failures=True)
        return out, read_json(out / "stage.json")["samples"]
    return run


def test_in_the_stage_a_failing_session_fails_only_its_sample(stage_with):
    out, samples = stage_with(Local(fail_at={"1": 0.1}))
    assert samples[f"{SUBSET}/1"]["status"] == "failed"
    assert re.fullmatch(r"runner 'local': the server said goodbye \(at 0\.[1-2] s, before the input ended\)",
                        samples[f"{SUBSET}/1"]["reason"])
    assert samples[f"{SUBSET}/2"]["status"] == "ok"
    assert read_json(out / "samples" / SUBSET / "2" / "runner.json")["kind"] == "stream"


def test_a_slow_send_makes_the_sample_ineligible_for_drift(stage_with):
    """10 ms frames; sending frame 5 takes 40 ms, so frame 6 goes out about 30 ms late."""
    out, samples = stage_with(Local(frame_ms=10.0, slow_frame=5), ids=("1",))
    assert samples[f"{SUBSET}/1"]["status"] == "ok"                    # the output is kept ...
    d = out / "samples" / SUBSET / "1"
    rec = read_json(d / "runner.json")
    assert rec["status"] == "ineligible" and rec["ineligible"]["code"] == "drift"   # ... but not scored
    assert re.fullmatch(r"send drift \d+\.\d ms > 20 ms at frame \d+ \(max \d+\.\d ms\): the pacing fell "
                        r"behind real time \(each of its 3 tries drifted past the limit\)", rec["ineligible"]["reason"])
    assert rec["stats"]["tries"] == 3 and len(rec["stats"]["drift_tries"]) == 3   # drift_retries 2 by default
    assert rec["stats"]["drift_exceeded"] is True and rec["stats"]["drift_max_ms"] >= 29.9
    assert "ineligible" not in rec["stats"]
    events = read_jsonl(d / "events.jsonl")
    (late,) = [e for e in events if e["type"] == "send" and e["frame"] == 6]
    assert late["drift_ms"] >= 29.9                                      # 40 ms send - one 10 ms frame
    errors = [e for e in events if e["type"] == "error"]
    assert len(errors) == 1 and rec["ineligible"]["reason"].startswith(errors[0]["reason"] + " (each of")


def test_a_refused_connection_is_the_samples_one_line_reason():
    class Refused(LocalConnection):
        async def open(self):
            raise ConnectionRefusedError(111, "Connection refused")

    class R(Local):
        def connect(self, session):
            return Refused(self, session)

    with pytest.raises(SessionFailed, match=r"^runner 'local': opening the session failed "
                                            r"\(ConnectionRefusedError: \[Errno 111\] Connection refused\)$"):
        render(R(), voice(0.2), SR, EventLog())


def test_lockstep_feeds_as_fast_as_sent_and_the_receiver_keeps_up():
    """clock "lockstep": no pacing; a send that never waits still lets the receiver run."""
    class Eager(LocalConnection):
        async def send(self, frame, k):
            self.sends.append((k, self.session.now(), len(frame)))
            self.queue.put_nowait(frame.copy())

        async def receive(self):
            self.got = 0
            while True:
                frame = await self.queue.get()
                self.got += 1
                self.session.place(0.5 * frame, t=(self.got - 1) * len(frame) / SR)   # by frame count

    class R(Local):
        clock = "lockstep"

        def connect(self, session):
            self.conns.append(Eager(self, session))
            return self.conns[-1]

    r = R()
    user = voice(2.0)
    t = time.monotonic()
    out, session = render(r, user, SR, EventLog())
    assert time.monotonic() - t < 1.0                                   # not paced: 2 s of input
    (conn,) = r.conns
    assert len(conn.sends) == 100 and conn.got >= 99
    assert "drift_max_ms" not in session.stats and session.stats["frames_sent"] == 100
    np.testing.assert_allclose(out[:99 * 320], 0.5 * user[:99 * 320], atol=1e-6)


def test_in_the_stage_a_step_runner_returning_nan_fails_its_sample_in_one_line(stage_with):
    from .test_harness import Broken
    out, samples = stage_with(Broken(np.full(10, np.nan)), ids=("1",))
    assert samples[f"{SUBSET}/1"]["status"] == "failed"
    assert samples[f"{SUBSET}/1"]["reason"] == "runner 'broken' returned non-finite audio at step 2"
    assert not (out / "samples" / SUBSET / "1").exists()


def test_the_next_run_makes_a_drifted_sample_again_and_no_other(stage_with, tmp_path):
    """A drift-ineligible sample is written and sealed with `retry`: a second run of the stage redoes it
    (now on time) and reuses the other; the store does not call the stage complete meanwhile."""
    from duplexeval.store import Store
    runner = Local(frame_ms=10.0, slow_frame=5)
    runner.slow_ids = {"1"}
    out, samples = stage_with(runner, ids=("1", "2"))
    assert samples[f"{SUBSET}/1"]["retry"].startswith("ineligible: send drift")
    assert "retry" not in samples[f"{SUBSET}/2"]
    store = Store(tmp_path / "home")
    d = store.stage_dir("k")
    d.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(out, d)
    assert store.complete("k") is None                              # a sample asks to be made again
    runner.slow_frame = None                                         # the machine is quiet now
    stage: Stage = stage_mod.make_stage({"runner": "local"})
    stage.run([tmp_path / "data"], out, {"runner": "local"}, allow_failures=True)
    again = read_json(out / "stage.json")["samples"]
    assert again[f"{SUBSET}/1"].get("cached") is not True and "retry" not in again[f"{SUBSET}/1"]
    assert again[f"{SUBSET}/2"]["cached"] is True
    assert read_json(out / "samples" / SUBSET / "1" / "runner.json")["status"] == "ok"
