"""Wall time and peak memory of a first and a second `duplexeval eval`.

The second run must reuse every stage from the store and take under a tenth
of the first run's time. Usage:

    .venv/bin/python perf/bench_eval.py [--model cascade] [--limit N] [--home DIR]

Prints a Markdown table for docs/performance.md. Peak memory is the largest
resident set of any single process the run started (getrusage of children).
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run_once(home: Path, args: list[str]) -> tuple[float, float]:
    cmd = [str(Path(sys.executable).parent / "duplexeval"), "--home", str(home), "eval", *args]
    t0 = time.monotonic()
    # A fresh interpreter per run, so getrusage(RUSAGE_CHILDREN) covers this run only.
    probe = ("import resource,subprocess,sys;r=subprocess.run(sys.argv[1:]);"
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,file=sys.stderr);sys.exit(r.returncode)")
    r = subprocess.run([sys.executable, "-c", probe, *cmd], capture_output=True, text=True)
    seconds = time.monotonic() - t0
    if r.returncode != 0:
        sys.exit(f"eval failed:\n{r.stdout}\n{r.stderr}")
    peak_mib = int(r.stderr.strip().splitlines()[-1]) / 1024
    return seconds, peak_mib


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="cascade")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--home", type=Path, default=None, help="store/runs folder (default: a new temporary one)")
    a = ap.parse_args()
    home = a.home or Path(tempfile.mkdtemp(prefix="duplexeval-bench-"))
    args = ["--model", a.model] + (["--limit", str(a.limit)] if a.limit else [])
    first = run_once(home, args)
    second = run_once(home, args)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores; model {a.model}, "
          f"limit {a.limit or 'all'}; home {home}")
    print("| run | wall time (s) | peak memory (MiB) |\n|---|---:|---:|")
    print(f"| first `make eval` | {first[0]:.1f} | {first[1]:.0f} |")
    print(f"| second `make eval` (all stages cached) | {second[0]:.1f} | {second[1]:.0f} |")
    print(f"ratio second/first: {second[0] / first[0]:.3f}")


if __name__ == "__main__":
    main()
