"""Seconds to build the HTML report of a 36-sample run, cold, and how big it is.

Makes (or reuses) a run of fdb-mini with every sample (3 subsets x 12) and the fixed-latency
control model in a scratch home, then builds that run's report from nothing
(duplexeval_fdb_v1/report/run_report.py: report.html and a page per sample, every plot inlined, the
audio linked from the store) `--repeats` times into fresh folders, and prints the median seconds,
the HTML's size (the linked WAVs not counted) and its largest page. Usage:

    .venv/bin/python perf/bench_report.py [--home DIR] [--repeats 3]

The target is under 30 s on 2 cores (docs/performance.md, "HTML report").
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def make_run(home: Path) -> None:
    if (home / "runs" / "latest" / "report.html").exists():
        return
    exe = Path(sys.executable).parent / "duplexeval"
    r = subprocess.run([str(exe), "--home", str(home), "eval", "--model", "fixed-latency", "--dataset",
                        "fdb-mini"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"eval failed (exit {r.returncode}):\n{r.stderr[-3000:]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--home", type=Path, default=None, help="a scratch home (default: a temporary one)")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-report-") as tmp:
        home = (args.home or Path(tmp) / "home").resolve()
        t0 = time.monotonic()
        make_run(home)
        print(f"run: {time.monotonic() - t0:.1f}s (0 when reused), home {home}", file=sys.stderr)
        from duplexeval_fdb_v1.report import run_report
        from duplexeval.store import Store
        from duplexeval_common.jsonio import read_json
        store = Store(home)
        record = read_json(home / "runs" / "latest" / "run.json")
        times, out = [], None
        for i in range(args.repeats):
            out = Path(tmp) / f"report-{i}"
            out.mkdir()
            t = time.monotonic()
            pages = run_report.build(store, record, out)
            times.append(time.monotonic() - t)
        files = sorted(out.rglob("*.html"), key=lambda p: (-p.stat().st_size, str(p)))
        total = sum(p.stat().st_size for p in files)
        cpus = len(os.sched_getaffinity(0))
        print(f"| samples | cold build, median of {args.repeats} (s) | report size (MB) | largest page (MB) "
              "| index (KB) | cores |")
        print("|---|---|---|---|---|---|")
        print(f"| {pages} | {statistics.median(times):.1f} (min {min(times):.1f}, max {max(times):.1f}) | "
              f"{total / 1e6:.1f} | {files[0].stat().st_size / 1e6:.2f} ({files[0].relative_to(out)}) | "
              f"{(out / 'report.html').stat().st_size / 1e3:.0f} | {cpus} |")


if __name__ == "__main__":
    main()
