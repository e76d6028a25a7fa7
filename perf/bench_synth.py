"""Wall and CPU seconds to synthesize fdb-synth with its default voice mix.

Runs the tts-synth stage (the same code `tts-synth run` runs) on benchmarks/fdb-v1/datasets/fdb-synth with
`--jobs` worker processes (default 2) into a fresh folder, then prints the wall-clock seconds,
the CPU seconds of this process and its workers, the hours of audio written and the real-time
factor, per engine too (the seconds each sample took, summed by the engine of its user voice).
Usage:

    .venv/bin/python perf/bench_synth.py [--jobs 2] [--limit N] [--out DIR]

`--limit N` keeps the first N samples of each subset (a quick check). The output folder is kept
when --out is given, else a temporary one is removed afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATASET = REPO / "datasets" / "fdb-synth"


def cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    os.environ.setdefault("DUPLEXEVAL_PROGRESS", "lines")
    from duplexeval_fdb_v1.dataset.stage import make_stage

    out = args.out or Path(tempfile.mkdtemp(prefix="bench-synth-"))
    if args.out and out.exists():
        shutil.rmtree(out)
    config = {"dataset": "fdb-synth", "jobs": args.jobs, "limit": args.limit}
    t0, c0 = time.monotonic(), cpu_seconds()
    code = make_stage(config).run([DATASET], out, config, allow_failures=True)
    wall, cpu = time.monotonic() - t0, cpu_seconds() - c0
    manifest = json.loads((out / "manifest.json").read_text())
    stage = json.loads((out / "stage.json").read_text())
    rows = manifest["samples"]
    ok = [r for r in rows if r.get("status", "ok") == "ok"]
    audio = sum(r["duration_s"] for r in ok)
    by_engine: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    for r in ok:
        e = r["voices"]["user"]["engine"] if "voices" in r else manifest["source"].get("engine", "?")
        by_engine[e][0] += 1
        by_engine[e][1] += stage["samples"][f"{r['subset']}/{r['id']}"]["seconds"]
        by_engine[e][2] += r["duration_s"]
    print(f"fdb-synth: {len(ok)}/{len(rows)} samples, jobs {args.jobs}, {os.cpu_count()} CPUs "
          f"({platform.processor() or platform.machine()}), exit {code}")
    print(f"wall {wall:.1f} s, CPU {cpu:.1f} s, audio {audio / 3600:.3f} h ({audio:.0f} s), "
          f"real-time factor {wall / audio:.4f} (wall) {cpu / audio:.4f} (CPU)")
    print("| engine (user voice) | samples | sample seconds | audio s |")
    print("|---|---|---|---|")
    for e, (n, sec, aud) in sorted(by_engine.items()):
        print(f"| {e} | {n} | {sec:.1f} | {aud:.0f} |")
    if not args.out:
        shutil.rmtree(out, ignore_errors=True)
    return 0 if len(ok) == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
