"""The orchestrator under hostile conditions: killed while a stage runs (SIGTERM, kill -9, kill -9
of its watchdog too), a store missing a stage's config, a read-only home, a full disk, a
read-only cache, an endless log line.

The pipeline runs are real (fixed-latency model, one sample per subset); the judge stage calls a local
chat-completions test double (tests/judge/chat_server.py, the real protocol, not a model) that is
told to answer slowly, so the judge stage is still running when the orchestrator is signalled.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from duplexeval_common.jsonio import read_json

from ..conftest import SUBSET_ARGS, command, wait_for
from ..judge import chat_server

REPLY = "Analysis: it handled the interruption.\nI would rate the AI's response as 4"


class Mode:
    slow = True


def _script(body, n):
    return chat_server.slow(REPLY, 600.0) if Mode.slow else chat_server.ok(REPLY)


@pytest.fixture(scope="module")
def chat():
    srv = chat_server.start(_script)
    yield srv
    srv.shutdown()


def _env(home: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    return {**env, "DUPLEXEVAL_CACHE": str(home / "cache"), **extra}


def dx(home: Path, *args: str, env: dict | None = None, timeout: float = 900):
    return subprocess.run([command("duplexeval"), "--home", str(home), *args], capture_output=True, text=True,
                          env=env or _env(home), timeout=timeout)


def judged_args(chat) -> list[str]:
    return ["eval", "--model", "fixed-latency", "--judge", "official-gpt", "--limit", "1", *SUBSET_ARGS,
            "--judge-arg", f"base_url={chat.base_url}", "--judge-arg", "api_key=planted-test-key-0123456789abcdef",
            "--judge-arg", "cache=false", "--judge-arg", "timeout_s=500"]


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """A home whose dataset, runner and asr stages are complete (a run without a judge)."""
    h = tmp_path_factory.mktemp("hostile-core")
    r = dx(h, "eval", "--model", "fixed-latency", "--judge", "none", "--limit", "1", *SUBSET_ARGS)
    assert r.returncode == 0, r.stderr[-3000:]
    return h


# ---- processes ---------------------------------------------------------------------------------------

def _procs() -> dict[int, tuple[str, int, int]]:
    """{pid: (cmdline, ppid, pgid)} of the live processes."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{d}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            stat = Path(f"/proc/{d}/stat").read_bytes()
        except OSError:
            continue
        rest = stat[stat.rfind(b")") + 2:].split()
        if rest[0] != b"Z":
            out[int(d)] = (cmd, int(rest[1]), int(rest[2]))
    return out


def stage_pids(home: Path) -> list[int]:
    """The live processes of a stage of this home (their command line names its store)."""
    return sorted(p for p, (cmd, _, _) in _procs().items() if f"{home}/store/configs/" in cmd)


def watchdog_of(pid: int) -> list[int]:
    return [p for p, (cmd, ppid, _) in _procs().items() if ppid == pid and "duplexeval_common.watchdog" in cmd]


def start_eval(home: Path, args: list[str], log: Path) -> subprocess.Popen:
    f = open(log, "w")
    return subprocess.Popen([command("duplexeval"), "--home", str(home), *args], stdout=f, stderr=subprocess.STDOUT,
                            env=_env(home), text=True)


def newest_run(home: Path, before: set[str]) -> Path:
    runs = [p for p in (home / "runs").iterdir() if p.is_dir() and not p.is_symlink() and p.name not in before
            and (p / "run.json").is_file()]
    assert len(runs) == 1, runs
    return runs[0] / "run.json"


def lock_free(home: Path, key: str) -> bool:
    return free(home / "store" / "locks" / f"{key}.lock")


def free(path: Path) -> bool:
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def _judge_running(home: Path, chat, n0: int):
    """The judge stage's processes, once it has sent its first request."""
    if len(chat.requests) <= n0:
        return None
    pids = [p for p in stage_pids(home) if "judge" in _procs().get(p, ("",))[0]]
    return pids or None


def _run_ids(home: Path) -> set[str]:
    return {p.name for p in (home / "runs").iterdir()}


@contextlib.contextmanager
def judge_under_way(home: Path, chat, log: Path):
    """A judged eval on the slow chat server, once its judge stage has sent its first request:
    (the orchestrator's process, the judge stage's pids, the run's run.json); the process is
    killed on the way out if it still runs."""
    Mode.slow = True
    before, n0 = _run_ids(home), len(chat.requests)
    proc = start_eval(home, judged_args(chat), log)
    try:
        judge = wait_for(lambda: _judge_running(home, chat, n0), 180, "the judge stage's first request")
        yield proc, judge, newest_run(home, before)
    finally:
        if proc.poll() is None:
            proc.kill()


# ---- 3: signals --------------------------------------------------------------------------------------

@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_stops_the_stage_and_the_run_is_interrupted(home, chat, tmp_path, sig):
    with judge_under_way(home, chat, tmp_path / "eval.log") as (proc, judge, path):
        proc.send_signal(sig)
        rc = proc.wait(timeout=60)
    log = (tmp_path / "eval.log").read_text()
    assert rc == 128 + sig, log[-3000:]
    assert "interrupted: the next `duplexeval eval` resumes from the store" in log and "Traceback" not in log
    assert not [p for p in judge if p in _procs()], "the judge stage outlived the orchestrator"
    assert stage_pids(home) == []
    run = read_json(path)
    assert run["status"] == "interrupted" and f"by {signal.Signals(sig).name}" in run["reason"], run
    n = len(chat.requests)
    time.sleep(2)
    assert len(chat.requests) == n     # nothing calls the API any more
    for lock in (home / "store" / "locks").glob("*.lock"):
        assert lock_free(home, lock.stem), lock.name
    assert watchdog_of(proc.pid) == []


def test_kill_9_the_watchdog_stops_the_stage_and_marks_the_run(home, chat, tmp_path):
    with judge_under_way(home, chat, tmp_path / "eval.log") as (proc, judge, path):
        assert watchdog_of(proc.pid), "no watchdog"
        proc.kill()
        assert proc.wait(timeout=30) == -signal.SIGKILL
    wait_for(lambda: not [p for p in judge if p in _procs()], 20, "the judge stage to be stopped")
    assert stage_pids(home) == []
    run = wait_for(lambda: (lambda r: r if r["status"] != "running" else None)(read_json(path)), 20,
                   "run.json to say interrupted")
    assert run["status"] == "interrupted" and f"(pid {proc.pid}) was killed" in run["reason"], run
    wait_for(lambda: all(lock_free(home, lk.stem) for lk in (home / "store" / "locks").glob("*.lock")), 20,
             "the locks to be released")
    n = len(chat.requests)
    time.sleep(2)
    assert len(chat.requests) == n


def test_a_stage_lock_is_held_by_whoever_runs_the_stage(home, chat, tmp_path):
    """kill -9 of the orchestrator *and* its watchdog: the orphaned judge stage still holds its lock,
    so a second eval waits for it instead of running the stage beside it; `runs` tells that the
    first run's orchestrator is gone and marks it interrupted."""
    Mode.slow = True
    before, n0 = _run_ids(home), len(chat.requests)
    first = start_eval(home, judged_args(chat), tmp_path / "first.log")
    second = None
    orphans: list[int] = []
    try:
        judge = wait_for(lambda: _judge_running(home, chat, n0), 180, "the judge stage's first request")
        path = newest_run(home, before)
        for w in watchdog_of(first.pid):
            os.kill(w, signal.SIGKILL)
        first.kill()
        first.wait(timeout=30)
        time.sleep(1)
        orphans = [p for p in judge if p in _procs()]
        assert orphans, "the orphan is the point of this test"
        assert read_json(path)["status"] == "running"
        r = dx(home, "runs")
        line = next(x for x in r.stdout.splitlines() if x.startswith(path.parent.name))
        assert " interrupted " in line, r.stdout
        run = read_json(path)
        assert run["status"] == "interrupted" and "ended without finishing the run" in run["reason"]
        before2 = _run_ids(home)
        second = start_eval(home, judged_args(chat), tmp_path / "second.log")
        wait_for(lambda: "another run is computing stage" in (tmp_path / "second.log").read_text(), 300,
                 "the second run to wait for the lock")
        time.sleep(2)
        assert second.poll() is None
        assert [p for p in stage_pids(home) if p not in orphans] == []   # nothing runs beside the orphan
        Mode.slow = False
        pgids = {_procs()[p][2] for p in orphans if p in _procs()}
        for g in pgids:
            os.killpg(g, signal.SIGKILL)
        assert second.wait(timeout=300) == 0, (tmp_path / "second.log").read_text()[-3000:]
        assert read_json(newest_run(home, before2))["status"] == "ok"
    finally:
        Mode.slow = False
        for p in (first, second):
            if p is not None and p.poll() is None:
                p.kill()
        for p in orphans:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass


# ---- the stale-run rule ------------------------------------------------------------------------------

def _fake_run(home: Path, run_id: str, orchestrator: dict) -> Path:
    d = home / "runs" / run_id
    d.mkdir(parents=True)
    rec = {"run_id": run_id, "command": ["duplexeval", "eval"], "runtime": "local", "dataset": "fdb-mini",
           "model": "silence", "status": "running", "stages": [], "seconds": 0.0,
           "environment": {"orchestrator": orchestrator}}
    (d / "run.json").write_text(json.dumps(rec))
    return d / "run.json"


def test_a_running_run_whose_orchestrator_is_gone_is_interrupted(tmp_path):
    import platform
    from duplexeval.provenance import boot_id, orchestrator, process_start
    from duplexeval.store import Store
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    gone = _fake_run(tmp_path, "20260101-000000-00000001",
                     {"host": platform.node(), "boot_id": boot_id(), "pid": p.pid, "start": 1})
    reused = _fake_run(tmp_path, "20260101-000000-00000002",
                       {"host": platform.node(), "boot_id": boot_id(), "pid": os.getpid(),
                        "start": process_start(os.getpid()) - 1})
    alive = _fake_run(tmp_path, "20260101-000000-00000003", orchestrator())
    elsewhere = _fake_run(tmp_path, "20260101-000000-00000004",
                          {"host": platform.node() + "-other", "boot_id": "x", "pid": p.pid, "start": 1})
    rebooted = _fake_run(tmp_path, "20260101-000000-00000005",
                         {"host": platform.node(), "boot_id": "another-boot", "pid": os.getpid(),
                          "start": process_start(os.getpid())})
    status = {r["run_id"][-1]: r["status"] for r in Store(tmp_path).list_runs()}
    assert status == {"1": "interrupted", "2": "interrupted", "3": "running", "4": "running", "5": "interrupted"}
    assert read_json(gone)["status"] == "interrupted" and read_json(reused)["status"] == "interrupted"
    assert read_json(alive)["status"] == "running" and read_json(elsewhere)["status"] == "running"
    assert "ended without finishing" in read_json(rebooted)["reason"]


# ---- the watchdog alone ------------------------------------------------------------------------------

_CHILD = r"""
import fcntl, os, subprocess, sys, time
from duplexeval_common.watchdog import watchdog
lock, mark = sys.argv[1], sys.argv[2]
grp = subprocess.Popen(["sh", "-c", "sleep 300 & sleep 300"], start_new_session=True)
fd = os.open(lock, os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)
wd = watchdog()
wd.watch("group", [grp.pid], fds=[fd])
wd.watch("finally", ["os", "mkdir", [mark]])
dropped = wd.watch("finally", ["os", "mkdir", [mark + ".dropped"]])
wd.drop(dropped)
print(grp.pid, flush=True)
time.sleep(300)
"""


def test_the_watchdog_alone(tmp_path):
    lock, mark = tmp_path / "x.lock", tmp_path / "marked"
    p = subprocess.Popen([sys.executable, "-c", _CHILD, str(lock), str(mark)], stdout=subprocess.PIPE, text=True)
    try:
        pgid = int(p.stdout.readline())
        members = lambda: [q for q, (_, _, g) in _procs().items() if g == pgid]  # noqa: E731
        assert len(wait_for(lambda: len(members()) >= 2 and members(), 10, "the group")) >= 2
        assert not free(lock)
        p.kill()
        p.wait()
        wait_for(lambda: not members(), 15, "the group to be killed")
        wait_for(lambda: mark.is_dir(), 10, "the finally call")
        wait_for(lambda: free(lock), 10, "the lock to be released")
        assert not Path(str(mark) + ".dropped").exists()
    finally:
        if p.poll() is None:
            p.kill()


# ---- 9: a stage's config is part of its completeness -------------------------------------------------

def test_a_missing_config_is_written_again(home, tmp_path):
    run = read_json(home / "runs" / "latest" / "run.json")
    runner = next(s for s in run["stages"] if s["name"] == "runner")
    cfg = home / "store" / "configs" / f"{runner['key']}.json"
    want = cfg.read_bytes()
    cfg.unlink()
    r = dx(home, "eval", "--model", "fixed-latency", "--judge", "none", "--limit", "1", *SUBSET_ARGS)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "store/configs/" in r.stderr and "was missing or changed; written again" in r.stderr
    assert cfg.read_bytes() == want
    again = read_json(home / "runs" / "latest" / "run.json")
    assert next(s for s in again["stages"] if s["name"] == "runner")["cached"] is True
    r = dx(home, "archive", "-o", str(tmp_path / "a.tar.gz"))
    assert r.returncode == 0, r.stderr


def test_a_config_that_cannot_be_written_again_reruns_the_stage(home, tmp_path):
    run = read_json(home / "runs" / "latest" / "run.json")
    runner = next(s for s in run["stages"] if s["name"] == "runner")
    cfg = home / "store" / "configs" / f"{runner['key']}.json"
    record = home / "store" / runner["key"] / "stage.json"
    want = cfg.read_bytes()
    rec = read_json(record)
    rec["config"] = {**rec["config"], "runner": "not-what-ran"}   # the record no longer proves the settings
    record.write_text(json.dumps(rec))
    cfg.unlink()
    r = dx(home, "eval", "--model", "fixed-latency", "--judge", "none", "--limit", "1", *SUBSET_ARGS)
    assert r.returncode == 0, r.stderr[-3000:]
    again = read_json(home / "runs" / "latest" / "run.json")
    st = next(s for s in again["stages"] if s["name"] == "runner")
    assert st["cached"] is False and st["key"] == runner["key"]
    assert cfg.read_bytes() == want                           # written by the rerun
    assert read_json(record)["config"]["runner"] != "not-what-ran"  # and its record again says what ran
    assert next(s for s in again["stages"] if s["name"] == "asr")["cached"] is True  # its outputs did not change


# ---- 7: a read-only home, a full disk, a read-only cache ---------------------------------------------

def test_a_home_that_cannot_be_written_is_one_line(tmp_path):
    h = tmp_path / "h"
    h.mkdir()
    (h / "runs").write_text("a file where the runs folder should be\n")
    r = dx(h, "eval", "--model", "silence", "--judge", "none", "--limit", "1")
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1 and r.stderr.startswith(f"error: cannot create {h / 'runs'}: ")
    assert "must be writable" in r.stderr and "Traceback" not in r.stderr


def test_a_full_disk_at_packages_txt_is_one_line(tmp_path, monkeypatch):
    from duplexeval import store as store_mod
    from duplexeval.cli import main

    def full(path, text):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(store_mod, "atomic_write_text", full)
    res = CliRunner().invoke(main, ["--home", str(tmp_path), "eval", "--model", "silence", "--judge", "none",
                                    "--limit", "1"])
    assert res.exit_code == 2, res.output
    assert res.stderr == f"error: cannot write {next((tmp_path / 'runs').iterdir()) / 'packages.txt'}: " \
                         "No space left on device\n"


def test_a_read_only_cache_never_decides_a_result(home, tmp_path):
    from duplexeval_common.cache import cache_for_run, usable_cache_dir
    blocker = tmp_path / "file"
    blocker.write_text("not a folder\n")
    assert usable_cache_dir(blocker / "cache") is None
    assert usable_cache_dir(tmp_path / "ok" / "cache") == tmp_path / "ok" / "cache"
    scratch, note = cache_for_run(blocker / "cache")
    assert scratch is not None and scratch.is_dir() and "cannot be written" in note
    # a run with that cache: the aggregate stage computes (a new aggregate key: no judge -> official-gpt is
    # not needed; an official_revision other than the default makes the aggregate stage run again)
    r = dx(home, "eval", "--model", "fixed-latency", "--judge", "none", "--limit", "1", *SUBSET_ARGS,
           "--benchmark-arg", "official_revision=bb59575", env=_env(home, DUPLEXEVAL_CACHE=str(blocker / "cache")))
    assert r.returncode == 0, r.stderr[-3000:]
    assert f"note: the cache {blocker / 'cache'} cannot be written" in r.stderr
    run = read_json(home / "runs" / "latest" / "run.json")
    assert next(s for s in run["stages"] if s["name"] == "aggregate")["cached"] is False


# ---- the log relay: an endless line --------------------------------------------------------------------

def test_a_huge_log_line_costs_its_length_once(tmp_path):
    from duplexeval.runtime import MAX_LINE, LogRelay
    log = tmp_path / "stage.log"
    relay = LogRelay(log, quiet=True)
    t0 = time.perf_counter()
    chunk = b"A" * 4096
    for _ in range(2560):  # 10 MiB in 4 KiB reads, as a pipe delivers it
        relay.feed(chunk)
    relay.feed(b" password=hunter2hunter2\nerror: the last line\n")
    relay.close()
    assert time.perf_counter() - t0 < 3.0
    lines = log.read_text().splitlines()
    assert len(lines) == 2 and lines[1] == "error: the last line" and relay.last_error == "the last line"
    assert len(lines[0]) < MAX_LINE + 100 and lines[0].endswith("more characters not kept]")
    assert "hunter2hunter2" not in log.read_text()
