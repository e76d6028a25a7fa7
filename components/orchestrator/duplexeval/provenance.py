"""What produced a run: the project's commit, the installed packages, the machine.

Recorded in run.json so that two runs can be told apart: the git commit and whether the work
tree had uncommitted changes, a hash of the resolved package set (the list itself is written
beside run.json as packages.txt), the numeric environment, and the machine (CPU model, cores,
load average at the start and the end of the run; a measured-clock runner's latencies depend on
them).
"""

from __future__ import annotations

import os
import platform
import subprocess

from duplexeval_common.hashing import sha256_json
from duplexeval_common.stage import installed_packages, numeric_environment

from .paths import REPO


def git_state() -> dict:
    def git(*args: str) -> str | None:
        try:
            r = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return r.stdout.strip() if r.returncode == 0 else None
    commit = git("rev-parse", "HEAD")
    if commit is None:
        return {"commit": None, "dirty": None, "note": "not a git work tree"}
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": bool(status) if status is not None else None}


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def machine() -> dict:
    return {"cpu_model": cpu_model(), "cores": os.cpu_count(),
            "affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
            "load_average_start": load_average()}


def packages() -> tuple[str, list[str]]:
    pk = installed_packages()
    return sha256_json(pk), [f"{k}=={v}" for k, v in pk.items()]


def boot_id() -> str | None:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            return f.read().strip() or None
    except OSError:
        return None


def process_start(pid: int) -> int | None:
    """When a process started (clock ticks since boot, /proc/<pid>/stat), or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        return int(stat[stat.rfind(b")") + 2:].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def orchestrator() -> dict:
    """Who runs this run: host, boot, pid and the process's start time, so that a later command
    can tell that a run still `running` has lost its orchestrator (store.Store.settle)."""
    return {"host": platform.node(), "boot_id": boot_id(), "pid": os.getpid(), "start": process_start(os.getpid())}


def orchestrator_gone(info: object) -> bool:
    """Whether the orchestrator a run records has certainly ended: it ran on this host and either
    the machine booted since, or no process has its pid and start time. A run from another host
    (a shared store) is never judged from here."""
    if not isinstance(info, dict) or info.get("host") != platform.node() or not isinstance(info.get("pid"), int):
        return False
    boot = boot_id()
    if boot is not None and info.get("boot_id") not in (None, boot):
        return True
    start = process_start(info["pid"])
    return start is None or (info.get("start") is not None and start != info["start"])


def environment() -> dict:
    sha, _ = packages()
    return {"python": platform.python_version(), "platform": platform.platform(),
            "git": git_state(), "packages_sha256": sha, "numeric": numeric_environment(),
            "machine": machine(), "orchestrator": orchestrator()}
