"""Where late frames come from: realtime sessions of the `freeze-omni` runner, profiled.

The runner stage runs in this process (as `duplex-runner run` would), against the Freeze-Omni protocol
test double (tests/duplex_runner/freeze_omni_server.py, not the model) in its own process over HTTPS
on 127.0.0.1, with bench_runners.py's samples (tone bursts of 4 to 11 s at 16 kHz, 30 ms frames, 1 s of
grace), `--samples` of them at `--concurrency`. It reports, per session, the send drift (p99, max,
frames past 5 ms and past the limit, tries) from events.jsonl and runner.json, and then, for every frame
sent more than `--late-ms` late, what the shared event loop was doing (`--handles`: every loop callback
that ran longer than 2 ms, timed around asyncio's Handle._run; a late frame is charged to the callbacks
that ran between its deadline and its send) and which other sessions started or ended within 0.3 s
before it (a finished session's files are written by its worker thread while the loop runs on).
`--cprofile` profiles the loop thread instead and prints where its time went (cProfile slows the
loop, so drift numbers of that run are not the plain ones).

Usage: .venv/bin/python perf/profile_realtime.py [--samples 8] [--concurrency 4] [--handles] [--cprofile]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import io
import json
import os
import pstats
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_runners import GRACE_S, LENGTHS_S, SUBSET, _cert, _server, _speechlike  # noqa: E402

SLOW_S = 0.002  # a loop callback longer than this is recorded (--handles)


def dataset(root: Path, n: int) -> Path:
    from duplexeval_common.wavio import write_wav
    for i in range(n):
        d = root / "samples" / SUBSET / str(i + 1)
        d.mkdir(parents=True)
        write_wav(d / "input.wav", _speechlike(LENGTHS_S[i % len(LENGTHS_S)], 16000, i), 16000)
    return root


def what(handle) -> str:
    """A loop callback in words: the coroutine a task step runs, else the callback's name."""
    cb = getattr(handle, "_callback", None)
    owner = getattr(cb, "__self__", None)
    if isinstance(owner, asyncio.Task):
        coro = owner.get_coro()
        return f"task {getattr(coro, '__qualname__', coro)}"
    return getattr(cb, "__qualname__", repr(cb))


def time_handles(slow: list) -> None:
    """Record (start, seconds, what) of every loop callback longer than SLOW_S."""
    run = asyncio.events.Handle._run

    def timed(self):
        t = time.monotonic()
        run(self)
        dt = time.monotonic() - t
        if dt > SLOW_S:
            slow.append((t, dt, what(self)))
    asyncio.events.Handle._run = timed


def time_gc(pauses: list) -> None:
    """Record (start, seconds, generation) of every garbage collection (it stops every thread)."""
    state = {}

    def cb(phase, info):
        if phase == "start":
            state["t"] = time.monotonic()
        elif "t" in state:
            pauses.append((state["t"], time.monotonic() - state.pop("t"), info["generation"]))
    gc.callbacks.append(cb)


def schedstat(tid: int) -> tuple[float, float]:
    """(seconds on a CPU, seconds waiting for one) of a thread of this process, from /proc."""
    try:
        run, wait, _ = Path(f"/proc/self/task/{tid}/schedstat").read_text().split()
        return int(run) / 1e9, int(wait) / 1e9
    except (OSError, ValueError):
        return float("nan"), float("nan")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far, from /proc/<pid>/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_stage(data: Path, out: Path, port: int, ca: Path, concurrency: int, retries: int) -> None:
    from duplexeval_runner.stage import make_stage
    config = {"runner": "freeze-omni", "seed": 0, "runner_args": {
        "url": f"https://127.0.0.1:{port}", "ca_file": str(ca), "grace_s": GRACE_S, "concurrency": concurrency,
        "drift_retries": retries}}
    make_stage(config).run([data], out, config, allow_failures=True)


def sessions(out: Path) -> list[dict]:
    rows = []
    for d in sorted((out / "samples" / SUBSET).iterdir(), key=lambda p: int(p.name)):
        events = [json.loads(line) for line in (d / "events.jsonl").read_text().splitlines()]
        rec = json.loads((d / "runner.json").read_text())
        rows.append({"id": d.name, "duration": rec["duration_s"], "events": events, "stats": rec["stats"],
                     "status": rec["status"]})
    return rows


def report(rows: list[dict], slow: list, late_ms: float, pauses: list) -> None:
    print("| sample | input (s) | frames | drift p99 (ms) | drift max (ms) | frames > 5 ms | frames > limit | tries "
          "| status |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        d = np.asarray([e["drift_ms"] for e in r["events"] if e["type"] == "send"])
        st = r["stats"]
        print(f"| {r['id']} | {r['duration']:.1f} | {len(d)} | {np.percentile(d, 99):.2f} | {d.max():.2f} | "
              f"{int((d > 5).sum())} | {st['drift_late_frames']} | {st.get('tries', 1)} | {r['status']} |")
    alld = np.concatenate([[e["drift_ms"] for e in r["events"] if e["type"] == "send"] for r in rows])
    print(f"\nAll {len(alld)} frames: p50 {np.percentile(alld, 50):.2f} ms, p99 {np.percentile(alld, 99):.2f} ms, "
          f"max {alld.max():.2f} ms")
    marks = sorted((e["wall"], e["type"], r["id"]) for r in rows for e in r["events"]
                   if e["type"] in ("session_start", "end"))
    late = sorted(((e["wall"], e["drift_ms"], r["id"], e["frame"]) for r in rows for e in r["events"]
                   if e["type"] == "send" and e["drift_ms"] > late_ms), key=lambda x: -x[1])
    print(f"\nFrames sent more than {late_ms:g} ms late ({len(late)}), the latest first (at most 25):\n")
    for wall, drift, sid, k in late[:25]:
        due = wall - drift / 1000.0
        near = [f"{typ} of {other} {wall - w:.2f} s before" for w, typ, other in marks
                if other != sid and 0 <= wall - w <= 0.3]
        busy = [f"{name} {dt * 1000:.1f} ms" for t, dt, name in slow if t < wall and t + dt > due]
        busy += [f"gc gen {g} {dt * 1000:.1f} ms" for t, dt, g in pauses if t < wall and t + dt > due]
        print(f"- sample {sid} frame {k}: {drift:.1f} ms; loop callbacks over 2 ms or collections since its "
              f"deadline: {', '.join(busy) or 'none'}; "
              f"{'; '.join(near) or 'no session started or ended just before'}")
    first = min(w for w, typ, _ in marks if typ == "session_start")
    last = max(w for w, typ, _ in marks if typ == "end")
    if pauses:
        for g in sorted({g for _, _, g in pauses}):
            d = [dt * 1000 for _, dt, gen in pauses if gen == g]
            inside = sum(1 for t, _, gen in pauses if gen == g and first <= t <= last)
            print(f"\nGarbage collections of generation {g}: {len(d)} ({inside} while sessions ran), max "
                  f"{max(d):.2f} ms, total {sum(d):.0f} ms")
        print(f"\nObjects the collector tracks at the end: {len(gc.get_objects())} (frozen: {gc.get_freeze_count()})")
    if slow:
        by: dict[str, list[float]] = {}
        for _, dt, name in slow:
            by.setdefault(name, []).append(dt * 1000)
        print(f"\nLoop callbacks over {SLOW_S * 1000:g} ms, by what ran:\n")
        print("| callback | count | max (ms) | total (ms) |")
        print("|---|---:|---:|---:|")
        for name, v in sorted(by.items(), key=lambda kv: -sum(kv[1]))[:15]:
            print(f"| {name} | {len(v)} | {max(v):.1f} | {sum(v):.0f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=8)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--late-ms", type=float, default=5.0)
    ap.add_argument("--drift-retries", type=int, default=0,
                    help="the stage's drift_retries (0: every session's frames are in its events)")
    ap.add_argument("--handles", action="store_true", help="time every loop callback (light)")
    ap.add_argument("--cprofile", action="store_true", help="profile the loop thread (slows it)")
    a = ap.parse_args()
    from duplexeval_runner.clocks import shared_loop
    with tempfile.TemporaryDirectory(prefix="profile-realtime-") as tmp:
        tmp = Path(tmp)
        data = dataset(tmp / "data", a.samples)
        cert = _cert(tmp)
        proc, port = _server(cert, tmp)
        slow: list = []
        pauses: list = []
        time_gc(pauses)
        prof = cProfile.Profile() if a.cprofile else None
        try:
            if a.handles:
                time_handles(slow)
            loop = shared_loop()
            tid = next(t.native_id for t in threading.enumerate() if t.name == "duplex-runner-loop")
            sched0 = schedstat(tid)
            cpu0 = (cpu_seconds(os.getpid()), cpu_seconds(proc.pid))
            if prof is not None:
                started = threading.Event()
                loop.call_soon_threadsafe(lambda: (prof.enable(), started.set()))
                started.wait()
            t = time.monotonic()
            run_stage(data, tmp / "out", port, cert[0], a.concurrency, a.drift_retries)
            wall = time.monotonic() - t
            sched = [b - a for a, b in zip(sched0, schedstat(tid))]
            cpu = (cpu_seconds(os.getpid()) - cpu0[0], cpu_seconds(proc.pid) - cpu0[1])
            if prof is not None:
                stopped = threading.Event()
                loop.call_soon_threadsafe(lambda: (prof.disable(), stopped.set()))
                stopped.wait()
            rows = sessions(tmp / "out")
        finally:
            proc.kill()
    load = os.getloadavg()
    print(f"\n### freeze-omni runner, {a.samples} samples at concurrency {a.concurrency}, {os.cpu_count()} cores, "
          f"load average {load[0]:.1f}; stage {wall:.1f} s{' (cProfile on the loop)' if prof else ''}\n")
    print(f"The loop thread ran {sched[0]:.2f} s on a CPU and waited {sched[1]:.2f} s for one (/proc schedstat); "
          f"CPU seconds of the runner process {cpu[0]:.1f}, of the test double's {cpu[1]:.1f}\n")
    report(rows, slow, a.late_ms, pauses)
    if prof is not None:
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(25)
        print("\nThe loop thread's time, by function (tottime):\n")
        print(s.getvalue())


if __name__ == "__main__":
    main()
