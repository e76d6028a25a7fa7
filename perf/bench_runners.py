"""Runner core: realtime pacing under concurrency, lockstep overhead, runner image sizes.

1. Realtime (the `freeze-omni` runner, a real socket.io client, against the Freeze-Omni protocol
   test double tests/duplex_runner/freeze_omni_server.py in its own process, over HTTPS on
   127.0.0.1): 8 samples of 4 to 11 s, run by `duplex-runner run` once with concurrency=8 and once
   with concurrency=1, side by side. Reports the send drift (actual minus scheduled send time, from
   every `send` event of events.jsonl) at p50/p99/max over all frames of all sessions, how many
   samples were marked ineligible, and the wall time of the 8 concurrent sessions (first
   session_start to last end, from the events' wall times) against the longest sample's session
   (its input + grace_s).
2. Lockstep (the `moshi` runner in process with the tiny random-weight model, in the moshi
   environment .venvs/runner-moshi): time per 80 ms frame through the core (harness.render) against
   a bare loop over the same model (mimi.encode, LMGen.step, mimi.decode), alternating, same input.
3. Image sizes of every duplexeval/runner-* image (when a Docker engine is reachable), and whether
   torch is inside.

Usage: .venv/bin/python perf/bench_runners.py [--skip-realtime] [--skip-lockstep] [--skip-images]
Prints Markdown tables for docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
SERVER = REPO / "tests" / "duplex_runner" / "freeze_omni_server.py"
MOSHI_PY = REPO / ".venvs" / "runner-moshi" / "bin" / "python"
SUBSET = "bench_turn_taking"
LENGTHS_S = [4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0]
GRACE_S = 1.0


# -- realtime ---------------------------------------------------------------------------------------

def _speechlike(seconds: float, sr: int, seed: int) -> np.ndarray:
    """Tone bursts with pauses (the double answers after each pause)."""
    rng = np.random.default_rng(seed)
    x = np.zeros(int(seconds * sr), np.float32)
    t = 0.3
    while t < seconds - 1.5:
        n = int(rng.uniform(0.6, 1.2) * sr)
        a = int(t * sr)
        x[a:a + n] = 0.3 * np.sin(2 * np.pi * 220 * np.arange(n) / sr)
        t += n / sr + rng.uniform(0.8, 1.5)
    return x


def _dataset(root: Path) -> Path:
    from duplexeval_common.wavio import write_wav
    for i, s in enumerate(LENGTHS_S):
        d = root / "samples" / SUBSET / str(i + 1)
        d.mkdir(parents=True)
        write_wav(d / "input.wav", _speechlike(s, 16000, i), 16000)
    return root


def _cert(d: Path) -> tuple[Path, Path]:
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-keyout", str(d / "key.pem"), "-out", str(d / "cert.pem"), "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"], check=True, capture_output=True)
    return d / "cert.pem", d / "key.pem"


def _server(cert: tuple[Path, Path], tmp: Path) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen([sys.executable, str(SERVER), "--cert", str(cert[0]), "--key", str(cert[1]),
                             "--record", str(tmp / "server.jsonl"), "--script", json.dumps({"reply_delay_s": 0.5})],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    ready, _, _ = select.select([proc.stdout], [], [], 30)
    line = proc.stdout.readline() if ready else ""
    if not line.startswith("PORT "):
        proc.kill()
        sys.exit("the Freeze-Omni test double did not start")
    return proc, int(line.split()[1])


def _run_stage(data: Path, out: Path, port: int, ca: Path, concurrency: int) -> float:
    cfg = out.parent / f"{out.name}.json"
    cfg.write_text(json.dumps({"runner": "freeze-omni", "seed": 0, "runner_args": {
        "url": f"https://127.0.0.1:{port}", "ca_file": str(ca), "grace_s": GRACE_S,
        "concurrency": concurrency}}))
    t = time.monotonic()
    r = subprocess.run([str(BIN / "duplex-runner"), "run", "--input", str(data), "--output", str(out),
                        "--config", str(cfg), "--allow-failures"], capture_output=True, text=True)
    wall = time.monotonic() - t
    if r.returncode != 0:
        sys.exit(f"duplex-runner failed:\n{r.stderr[-2000:]}")
    return wall


def _sessions(out: Path) -> dict:
    drifts, starts, ends, ineligible, failed = [], [], [], 0, 0
    stage = json.loads((out / "stage.json").read_text())
    failed = sum(1 for s in stage["samples"].values() if s["status"] != "ok")
    for d in sorted((out / "samples" / SUBSET).iterdir()):
        if not (d / "events.jsonl").is_file():
            continue
        rows = [json.loads(line) for line in (d / "events.jsonl").read_text().splitlines()]
        drifts += [r["drift_ms"] for r in rows if r["type"] == "send"]
        starts.append(next(r["wall"] for r in rows if r["type"] == "session_start"))
        ends.append(next(r["wall"] for r in rows if r["type"] == "end"))
        rec = json.loads((d / "runner.json").read_text())
        ineligible += rec.get("status") == "ineligible"
    d = np.asarray(drifts)
    return {"frames": len(d), "p50": float(np.percentile(d, 50)), "p99": float(np.percentile(d, 99)),
            "max": float(d.max()), "ineligible": ineligible, "failed": failed,
            "span": max(ends) - min(starts)}


def realtime() -> None:
    if shutil.which("openssl") is None:
        print("realtime: skipped (no openssl CLI for the test certificate)")
        return
    with tempfile.TemporaryDirectory(prefix="bench-runners-") as tmp:
        tmp = Path(tmp)
        data = _dataset(tmp / "data")
        cert = _cert(tmp)
        proc, port = _server(cert, tmp)
        try:
            rows = []
            for n in (8, 1):
                out = tmp / f"out-{n}"
                wall = _run_stage(data, out, port, cert[0], n)
                rows.append((n, wall, _sessions(out)))
        finally:
            proc.kill()
    longest = max(LENGTHS_S) + GRACE_S
    print(f"\n### Realtime pacing: freeze-omni runner, {len(LENGTHS_S)} samples of {min(LENGTHS_S):g}-"
          f"{max(LENGTHS_S):g} s (+{GRACE_S:g} s grace), 30 ms frames, {os.cpu_count()} cores\n")
    print("| concurrency | frames | drift p50 (ms) | drift p99 (ms) | drift max (ms) | ineligible | failed "
          "| sessions' span (s) | span / longest session | stage wall (s) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n, wall, s in rows:
        print(f"| {n} | {s['frames']} | {s['p50']:.2f} | {s['p99']:.2f} | {s['max']:.2f} | {s['ineligible']} | "
              f"{s['failed']} | {s['span']:.2f} | {s['span'] / longest:.3f} | {wall:.2f} |")
    print(f"\nLongest session: {longest:g} s (its input + grace). Sessions' span: first session_start to last "
          "end over the samples' events (wall clock); stage wall includes the process start and imports.")


# -- lockstep --------------------------------------------------------------------------------------

LOCKSTEP = r'''
import json, sys, time
import numpy as np, torch
from duplexeval_runner.events import EventLog
from duplexeval_runner.harness import render
from duplexeval_runner_moshi.runner import MoshiRunner
from duplexeval_runner_moshi import tiny

seconds, repeat = float(sys.argv[1]), int(sys.argv[2])
torch.set_num_threads(2)
x = (np.random.default_rng(0).standard_normal(int(24000 * seconds)) * 0.05).astype(np.float32)
runner = MoshiRunner(seed=0, model_dir="tiny:0")
runner.setup()
mimi, gen = runner.mimi, runner.lm_gen
F = 1920
n = len(x) // F

def bare():
    mimi.reset_streaming(); gen.reset_streaming()
    torch.manual_seed(0)
    t = time.perf_counter()
    with torch.no_grad():
        for k in range(n):
            codes = mimi.encode(torch.from_numpy(x[k * F:(k + 1) * F])[None, None])
            tok = gen.step(codes)
            if tok is not None:
                mimi.decode(tok[:, 1:])
    return time.perf_counter() - t

def core():
    t = time.perf_counter()
    render(runner, x, 24000, EventLog(record_wall=False), key="bench_turn_taking/1")
    return time.perf_counter() - t

bare(); core()  # warm-up
b, c = [], []
for _ in range(repeat):
    b.append(bare()); c.append(core())
print(json.dumps({"frames": n, "bare": b, "core": c}))
'''


def lockstep(seconds: float = 20.0, repeat: int = 5) -> None:
    if not MOSHI_PY.is_file():
        print("lockstep: skipped (no .venvs/runner-moshi: run `make setup`)")
        return
    env = {**os.environ, "NO_TORCH_COMPILE": "1", "NO_CUDA_GRAPH": "1"}
    r = subprocess.run([str(MOSHI_PY), "-c", LOCKSTEP, str(seconds), str(repeat)], capture_output=True,
                       text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"lockstep benchmark failed:\n{r.stderr[-3000:]}")
    d = json.loads(r.stdout.strip().splitlines()[-1])
    b, c = np.median(d["bare"]), np.median(d["core"])
    print(f"\n### Lockstep overhead: moshi runner, tiny random-weight model, {seconds:g} s of audio "
          f"({d['frames']} frames of 80 ms), median of {repeat}, alternating\n")
    print("| loop | total (s) | ms per frame |")
    print("|---|---:|---:|")
    print(f"| bare loop (encode, step, decode) | {b:.3f} | {1000 * b / d['frames']:.2f} |")
    print(f"| through the core (harness.render) | {c:.3f} | {1000 * c / d['frames']:.2f} |")
    print(f"\nOverhead of the core: {100 * (c / b - 1):+.1f}% (target: under 10%).")


# -- images -----------------------------------------------------------------------------------------

def images() -> None:
    try:
        out = subprocess.run(["docker", "images", "--format", "{{.Repository}}:{{.Tag}}\t{{.Size}}",
                              "--filter", "reference=duplexeval/runner-*"], capture_output=True, text=True,
                             timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        print("images: skipped (no docker client)")
        return
    if out.returncode != 0:
        print(f"images: skipped ({out.stderr.strip()[:200]})")
        return
    rows = sorted({tuple(line.split("\t")) for line in out.stdout.splitlines() if ":latest" not in line})
    print("\n### Runner images\n")
    print("| image | size | torch inside |")
    print("|---|---:|---|")
    for name, size in rows:
        t = subprocess.run(["docker", "run", "--rm", "--network", "none", "--entrypoint",
                            "/opt/venv/bin/python", name, "-c", "import torch"], capture_output=True, timeout=120)
        print(f"| {name} | {size} | {'yes' if t.returncode == 0 else 'no'} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--skip-realtime", action="store_true")
    ap.add_argument("--skip-lockstep", action="store_true")
    ap.add_argument("--skip-images", action="store_true")
    a = ap.parse_args()
    print(f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"{time.strftime('%Y-%m-%d')}")
    if not a.skip_realtime:
        realtime()
    if not a.skip_lockstep:
        lockstep()
    if not a.skip_images:
        images()


if __name__ == "__main__":
    main()
