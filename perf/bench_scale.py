"""Scale-out: the ASR stage in 1 and 2 shards, and the Slurm executor's overhead per stage.

1. One local `duplexeval eval --model fixed-latency --judge none` of the whole fdb-mini fills a
   store. Then the asr stage (faster-whisper) is run again, into fresh folders, from its cached
   inputs: once unsharded, and as 2 shards at once followed by the finalize step (the unsharded run
   that skips every sealed sample), as the Slurm executor runs it, but started directly on this
   machine. Both with faster-whisper's default cpu_threads=2 and with cpu_threads=1. The outputs of
   1 and 2 shards are checked to be the same bytes.
2. When slurm and munge are installed: a single-node test cluster (tests/orchestrator/test_slurm.py)
   and the time the Slurm executor takes for a stage with nothing to do (the aggregate stage's one
   job; the asr stage with every sample sealed: 2 shards and the finalize job) against running the
   same call directly.

Usage: .venv/bin/python perf/bench_scale.py [--home DIR] [--repeat 3]
Prints Markdown tables for docs/performance.md and docs/scale.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def eval_once(home: Path) -> dict:
    r = subprocess.run([str(BIN / "duplexeval"), "--home", str(home), "eval", "--model", "fixed-latency",
                        "--judge", "none"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"eval failed:\n{r.stderr[-3000:]}")
    return json.loads((home / "runs" / "latest" / "run.json").read_text())


def asr_run(cfg: Path, inputs: list[Path], out: Path, shard: str | None = None) -> subprocess.Popen:
    args = [str(BIN / "asr-aligner"), "run", "--config", str(cfg), "--output", str(out)]
    for d in inputs:
        args += ["--input", str(d)]
    if shard:
        args += ["--allow-failures", "--shard", shard]
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def done(p: subprocess.Popen) -> None:
    _, err = p.communicate()
    if p.returncode != 0:
        sys.exit(f"asr-aligner failed:\n{err[-3000:]}")


def outputs(d: Path) -> dict:
    return json.loads((d / "stage.json").read_text())["outputs"]


def time_asr(cfg: Path, inputs: list[Path], work: Path, shards: int) -> tuple[float, float]:
    """(wall seconds of the whole stage, of the shards alone) into a fresh folder."""
    out = Path(tempfile.mkdtemp(dir=work))
    t0 = time.monotonic()
    if shards == 1:
        done(asr_run(cfg, inputs, out))
        t = time.monotonic() - t0
        return t, t
    procs = [asr_run(cfg, inputs, out, f"{i}/{shards}") for i in range(shards)]
    for p in procs:
        done(p)
    t_shards = time.monotonic() - t0
    done(asr_run(cfg, inputs, out))  # the finalize step
    t = time.monotonic() - t0
    ref = work / f"ref-{cfg.stem}"
    if ref.is_dir():
        assert outputs(out) == outputs(ref), "2 shards wrote other bytes than 1"
    shutil.rmtree(out)
    return t, t_shards


def overhead(home: Path, run: dict, repeat: int) -> list[tuple[str, float, float]]:
    sys.path.insert(0, str(REPO))
    from tests.orchestrator.test_slurm import SlurmCluster  # noqa: E402
    from duplexeval.executor_slurm import SlurmExecutor, SlurmSettings
    from duplexeval.runtime import Call, Limits
    from duplexeval.runtime_local import LocalRuntime
    from duplexeval.store import Store

    cluster = SlurmCluster(Path(tempfile.mkdtemp(prefix="bench-slurm-")))
    os.environ["SLURM_CONF"] = str(cluster.conf)
    store = Store(home)
    keys = {s["name"]: s["key"] for s in run["stages"]}
    inputs = {"asr": ["dataset", "runner"], "aggregate": ["dataset", "runner", "asr", "judge"]}
    rows = []
    try:
        cluster.start()
        local = LocalRuntime()
        slurm = SlurmExecutor(local, SlurmSettings(shards={"": 2}))
        for name, comp in (("aggregate", "aggregator"), ("asr", "asr-aligner")):
            times = {"direct": [], "slurm": []}
            for _ in range(repeat):
                for how, rt in (("direct", local), ("slurm", slurm)):
                    out = home / "bench-out" / f"{name}-{how}"
                    shutil.rmtree(out, ignore_errors=True)
                    shutil.copytree(store.stage_dir(keys[name]), out)  # every sample sealed
                    (out / "stage.json").unlink()
                    call = Call(comp, "run", store.config_path(keys[name]), keys[name],
                                [store.stage_dir(keys[i]) for i in inputs[name]], out, quiet=True)
                    t0 = time.monotonic()
                    o = rt.run(call, Limits())
                    times[how].append(time.monotonic() - t0)
                    assert o.rc == 0, o
            jobs = "1 job" if name == "aggregate" else "2 shards + finalize"
            rows.append((f"{name} ({jobs}), nothing to do", statistics.median(times["direct"]),
                         statistics.median(times["slurm"])))
    finally:
        cluster.stop()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--home", type=Path, default=None)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    home = (a.home or Path(tempfile.mkdtemp(prefix="duplexeval-scale-"))).resolve()
    t0 = time.monotonic()
    run = eval_once(home)
    print(f"first eval (fills the store): {time.monotonic() - t0:.1f} s", file=sys.stderr)
    store = home / "store"
    keys = {s["name"]: s["key"] for s in run["stages"]}
    inputs = [store / keys["dataset"], store / keys["runner"]]
    base = json.loads((store / "configs" / f"{keys['asr']}.json").read_text())
    work = Path(tempfile.mkdtemp(dir=home, prefix="scale-"))
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; "
          f"fdb-mini, fixed-latency, faster-whisper; median of {a.repeat}")
    print("| cpu_threads | shards | asr stage wall time (s) | of it the shards (s) | speed-up |")
    print("|---:|---:|---:|---:|---:|")
    for threads in (2, 1):
        cfg = work / f"asr-threads-{threads}.json"
        cfg.write_text(json.dumps({**base, "backend_args": {**base.get("backend_args", {}),
                                                              "cpu_threads": threads}}))
        ref = work / f"ref-{cfg.stem}"
        done(asr_run(cfg, inputs, ref))  # warm-up (page cache, model files) and the reference bytes
        one = [time_asr(cfg, inputs, work, 1) for _ in range(a.repeat)]
        two = [time_asr(cfg, inputs, work, 2) for _ in range(a.repeat)]
        t1 = statistics.median(t for t, _ in one)
        t2, s2 = statistics.median(t for t, _ in two), statistics.median(s for _, s in two)
        print(f"| {threads} | 1 | {t1:.1f} | {t1:.1f} | 1.00 |")
        print(f"| {threads} | 2 | {t2:.1f} | {s2:.1f} | {t1 / t2:.2f} |")
    if all(shutil.which(b) or Path("/usr/sbin", b).is_file() for b in ("slurmctld", "slurmd", "munged", "sbatch")):
        print("\n| stage | direct (s) | slurm executor (s) | overhead (s) |\n|---|---:|---:|---:|")
        for name, direct, slurm in overhead(home, run, a.repeat):
            print(f"| {name} | {direct:.1f} | {slurm:.1f} | {slurm - direct:.1f} |")
    else:
        print("\n(slurm not installed: no submission overhead measured)")
    if a.home is None:
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
