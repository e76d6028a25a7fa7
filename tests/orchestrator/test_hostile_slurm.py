"""Under the Slurm executor, a stage's jobs end with the orchestrator: SIGTERM cancels them (scancel)
before run.json says interrupted, and after kill -9 the orchestrator's watchdog cancels them.

The cluster is test_slurm.py's (a real single-node Slurm started by the test; skipped unless the
binaries are installed)."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest

from duplexeval_common.jsonio import read_json

from ..conftest import command, wait_for
from .test_slurm import EVAL, MISSING, _squeue, cluster  # noqa: F401 (the fixture)

pytestmark = pytest.mark.skipif(bool(MISSING), reason=f"slurm not installed ({', '.join(MISSING)})")


def _jobs(cluster, state: str | None = None) -> list[str]:
    return [jobid for jobid, name, st in _squeue(cluster, "-o", "%i %j %T")
            if name.startswith("duplexeval-") and (state is None or st == state)]


def _start(cluster, home: Path, log: Path) -> subprocess.Popen:
    return subprocess.Popen([command("duplexeval"), "--home", str(home), *EVAL, "--limit", "4", "--executor",
                             "slurm", "--slurm-shards", "2"], env=cluster.env, stdout=open(log, "w"),
                            stderr=subprocess.STDOUT, text=True)


def _run_json(home: Path) -> Path:
    runs = [p for p in (home / "runs").iterdir() if p.is_dir() and not p.is_symlink()]
    assert len(runs) == 1
    return runs[0] / "run.json"


def _wait(cond, timeout: float, what: str):
    return wait_for(cond, timeout, what, interval=0.2)


@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_the_stages_jobs_end_with_the_orchestrator(cluster, tmp_path, how):  # noqa: F811
    home = tmp_path / "home"
    proc = _start(cluster, home, tmp_path / "eval.log")
    try:
        _wait(lambda: _jobs(cluster, "RUNNING"), 240, "a running job")
        proc.send_signal(getattr(signal, how))
        rc = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    log = (tmp_path / "eval.log").read_text()
    if how == "SIGTERM":
        assert rc == 143, log[-3000:]
        assert _jobs(cluster) == [], "scancel before the orchestrator exits"
    else:
        assert rc == -signal.SIGKILL
        _wait(lambda: not _jobs(cluster), 60, "the watchdog's scancel")
    run = _wait(lambda: (lambda r: r if r["status"] != "running" else None)(read_json(_run_json(home))), 30,
                "run.json to say interrupted")
    assert run["status"] == "interrupted", run
