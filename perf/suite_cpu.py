"""CPU seconds per test, for finding where the suite's time goes on a loaded machine.

Wall time per test (pytest --durations) says little when four test processes share two cores
with an image build: a test's wall time is mostly the others' work. CPU time does not move with
the load. As a pytest plugin this records, for every test, the user + system CPU seconds of the
test process and of the processes it started and waited for (every `duplexeval` and stage
command a test runs), its wall seconds and when it ended (epoch seconds: a timeline of the
session), one JSON line per test in CPU_OUT/<worker>-<pid>.jsonl:

    PYTHONPATH=perf .venv/bin/python -m pytest -p suite_cpu -n 4 --dist loadfile tests benchmarks

then `python perf/suite_cpu.py CPU_OUT` prints the files and tests with the most CPU. Processes a
test does not wait for (Slurm's jobs, docker's containers, servers left running) are not counted.
CPU_OUT defaults to .build/suite-cpu.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections import Counter
from pathlib import Path

OUT = Path(os.environ.get("CPU_OUT", ".build/suite-cpu"))


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


_file = None


def _out():
    global _file
    if _file is None:
        OUT.mkdir(parents=True, exist_ok=True)
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        _file = open(OUT / f"{worker}-{os.getpid()}.jsonl", "a", encoding="utf-8")
    return _file


try:
    import pytest
except ImportError:  # the report below needs no pytest
    pytest = None

if pytest is not None:
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        own0, ch0 = _cpu()
        w0 = time.monotonic()
        yield
        own1, ch1 = _cpu()
        f = _out()
        f.write(json.dumps({"id": item.nodeid, "self": round(own1 - own0, 3), "children": round(ch1 - ch0, 3),
                            "wall": round(time.monotonic() - w0, 3), "end": round(time.time(), 3)}) + "\n")
        f.flush()


def report(folder: Path, top: int = 25) -> None:
    rows = [json.loads(line) for f in sorted(folder.glob("*.jsonl")) for line in f.open(encoding="utf-8")]
    cpu = sum(r["self"] + r["children"] for r in rows)
    print(f"{len(rows)} tests, {cpu:.0f} s of CPU, {sum(r['wall'] for r in rows):.0f} s of wall time summed")
    files: Counter = Counter()
    for r in rows:
        files[r["id"].split("::", 1)[0]] += r["self"] + r["children"]
    print("\nfiles (CPU s):")
    for path, s in files.most_common(top):
        print(f"{s:8.1f}  {path}")
    print("\ntests (CPU s, wall s):")
    for r in sorted(rows, key=lambda r: -(r["self"] + r["children"]))[:top]:
        print(f"{r['self'] + r['children']:8.1f} {r['wall']:8.1f}  {r['id']}")


if __name__ == "__main__":
    report(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT)
