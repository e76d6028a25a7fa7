"""A realtime session whose drift passed the limit is run again in the same run (`drift_retries`).

The lateness is made by construction: `Late`'s connection takes `stall_s` (an await, so only that
session waits; the others on the shared loop go on) over sending one frame of the first `late_tries`
tries of the samples in `late_ids`, so the next frame leaves about that much late. The drift limit
is set far above what a busy machine adds (60 ms against a 150 ms stall), so a try meant to be on
time is. Each try's echo is placed at a gain of 0.2 x its try number, so the output tells which
try's audio was kept.
"""

from __future__ import annotations

import asyncio
import re

import numpy as np
import pytest

from duplexeval_common.jsonio import read_json, read_jsonl
from duplexeval_runner import stage as stage_mod

from .conftest import make_dataset
from .test_clocks import SR, SUBSET, Local, LocalConnection, voice

# run alone, after the parallel tests (make test): real-time sessions whose drift is asserted
pytestmark = pytest.mark.serial

LIMIT_MS = 60.0
STALL_S = 0.15
LATE_FRAME = 3


class LateConnection(LocalConnection):
    def __init__(self, runner: "Late", session, attempt: int):
        super().__init__(runner, session)
        self.attempt = attempt

    async def send(self, frame, k):
        r = self.r
        if k == LATE_FRAME and self.session.info.id in r.late_ids and self.attempt <= r.late_tries:
            await asyncio.sleep(STALL_S)
        await self.queue.put(0.4 * self.attempt * frame)   # receive() halves it: gain 0.2 x try

    async def receive(self):
        while True:
            self.session.place(0.5 * await self.queue.get())


class Late(Local):
    def __init__(self, late_ids: set, late_tries: int, clock: str = "realtime"):
        super().__init__(frame_ms=20.0)
        self.late_ids, self.late_tries, self.clock = late_ids, late_tries, clock
        self.drift_limit_ms = LIMIT_MS  # what the stage's build_runner sets from drift_limit_ms
        self.attempts: dict[str, int] = {}

    def connect(self, session):
        sid = session.info.id
        self.attempts[sid] = self.attempts.get(sid, 0) + 1
        self.conns.append(LateConnection(self, session, self.attempts[sid]))
        return self.conns[-1]


@pytest.fixture
def run_stage(monkeypatch, tmp_path):
    def run(runner, ids, name="out", **core):
        monkeypatch.setattr(stage_mod, "build_runner", lambda cfg: runner)
        data = make_dataset(tmp_path / f"{name}-in", {(SUBSET, i): (voice(0.3), SR) for i in ids})
        out = tmp_path / name
        config = {"runner": "local", "runner_args": {"drift_limit_ms": LIMIT_MS, "concurrency": 2, **core}}
        stage_mod.make_stage(config).run([data], out, config, allow_failures=True)
        return out, read_json(out / "stage.json")["samples"]
    return run


def sample(out, sid):
    d = out / "samples" / SUBSET / sid
    return d, read_json(d / "runner.json"), read_jsonl(d / "events.jsonl")


def test_a_sample_late_on_its_first_try_is_run_again_and_completes(run_stage):
    runner = Late(late_ids={"1"}, late_tries=1)
    out, samples = run_stage(runner, ("1", "2"))
    assert runner.attempts == {"1": 2, "2": 1}
    assert samples[f"{SUBSET}/1"]["status"] == "ok" and "retry" not in samples[f"{SUBSET}/1"]
    d, rec, events = sample(out, "1")
    assert rec["status"] == "ok" and "ineligible" not in rec
    st = rec["stats"]
    first, second = st["drift_tries"]
    assert st["tries"] == 2 and (first["try"], second["try"]) == (1, 2)
    assert first["drift_max_ms"] > LIMIT_MS and first["drift_late_frames"] >= 1
    assert re.fullmatch(r"send drift \d+\.\d ms > 60 ms at frame 4 \(max \d+\.\d ms\): the pacing fell behind "
                        r"real time", first["reason"])
    assert second["drift_max_ms"] < LIMIT_MS and second["drift_late_frames"] == 0 and "reason" not in second
    assert (st["drift_max_ms"], st["drift_p99_ms"]) == (second["drift_max_ms"], second["drift_p99_ms"])
    # the kept files are the second try's alone: its events, one retry event for the first, its audio
    assert sorted(p.name for p in d.iterdir()) == ["_done.json", "events.jsonl", "output.wav", "runner.json"]
    assert not list(d.parent.glob(".*partial"))
    assert [e["type"] for e in events].count("session_start") == 1
    (retry,) = [e for e in events if e["type"] == "retry"]
    assert {k: retry[k] for k in first} == first
    assert not [e for e in events if e["type"] == "error"]
    kept = max(e["drift_ms"] for e in events if e["type"] == "send")
    assert kept == pytest.approx(second["drift_max_ms"], abs=1e-3)
    import soundfile as sf
    audio, _ = sf.read(str(d / "output.wav"), dtype="float32")
    assert np.abs(audio).max() == pytest.approx(0.2 * 2 * 0.3, abs=0.005)     # the second try's gain
    # the other sample ran once, side by side, untouched
    _, rec2, events2 = sample(out, "2")
    assert rec2["status"] == "ok" and rec2["stats"]["tries"] == 1
    assert not [e for e in events2 if e["type"] == "retry"]


def test_a_sample_late_on_every_try_is_ineligible_with_one_line_naming_it(run_stage, capsys):
    runner = Late(late_ids={"1"}, late_tries=99)
    out, samples = run_stage(runner, ("1", "2", "3"), drift_retries=1)
    assert runner.attempts == {"1": 2, "2": 1, "3": 1}
    _, rec, events = sample(out, "1")
    reason = rec["ineligible"]["reason"]
    assert rec["status"] == "ineligible" and rec["ineligible"]["code"] == "drift"
    assert re.fullmatch(r"send drift \d+\.\d ms > 60 ms at frame 4 \(max \d+\.\d ms\): the pacing fell behind "
                        r"real time \(each of its 2 tries drifted past the limit\)", reason)
    assert rec["stats"]["tries"] == 2
    assert all(t["drift_late_frames"] >= 1 and "reason" in t for t in rec["stats"]["drift_tries"])
    assert samples[f"{SUBSET}/1"]["retry"] == f"ineligible: {reason}"       # the next run makes it again
    err = capsys.readouterr().err
    assert f"ineligible: {SUBSET}/1: {reason}\n" in err                      # one line, naming the sample
    assert f"{SUBSET}/1: try 1 of 2 drifted (send drift" in err
    assert "\n" not in reason
    for sid in ("2", "3"):
        assert samples[f"{SUBSET}/{sid}"]["status"] == "ok" and "retry" not in samples[f"{SUBSET}/{sid}"]
        _, other, _ = sample(out, sid)
        assert other["status"] == "ok" and other["stats"]["tries"] == 1


def test_no_retries_when_told_none_and_never_for_lockstep(run_stage):
    runner = Late(late_ids={"1"}, late_tries=99)
    out, _ = run_stage(runner, ("1",), drift_retries=0, concurrency=1)
    _, rec, _ = sample(out, "1")
    assert runner.attempts == {"1": 1} and rec["status"] == "ineligible" and rec["stats"]["tries"] == 1
    assert rec["ineligible"]["reason"].endswith("the pacing fell behind real time")

    lockstep = Late(late_ids={"1"}, late_tries=99, clock="lockstep")
    out, samples = run_stage(lockstep, ("1",), name="lockstep", concurrency=1)
    _, rec, events = sample(out, "1")
    assert lockstep.attempts == {"1": 1} and rec["status"] == "ok"
    assert "tries" not in rec["stats"] and "drift_max_ms" not in rec["stats"]
    assert not [e for e in events if e["type"] == "retry"]
