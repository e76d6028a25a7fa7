"""The local runtime: components run as commands of this virtualenv.

A component's identity here is the hash of its source, its requirements, the shared library and
the schemas, so editing any of them changes the stage key.

Limits: the stage runs in its own process group; a monitor kills the whole group when the
stage passes its timeout or its memory cap (the resident memory of the group, read from /proc),
and the CPU count is applied as the group's CPU affinity.

The stage's processes end with it and with the orchestrator: what is left of its group when the
stage exits is killed; a Ctrl-C, SIGTERM or SIGHUP of the orchestrator stops the group (SIGTERM,
then SIGKILL after 5 s) before the orchestrator records the run as interrupted; and the group is
registered with the orchestrator's watchdog (duplexeval_common/watchdog.py), which stops it should
the orchestrator be killed outright (kill -9). The stage's store locks are passed to the stage
process (and held by the watchdog while it runs), so a lock is held for as long as anything that
runs the stage lives, not only as long as the orchestrator does.
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.hashing import sha256_json, sha256_tree
from duplexeval_common.watchdog import group_members, kill_groups, watchdog

from .paths import COMPONENTS, REPO, component_command, component_dir, component_sources, own_environment
from .runtime import GiB, Call, Limits, LogRelay, Outcome

_POLL_S = 0.25
_PACKAGES: list[str] = []


def _packages() -> str:
    """sha256 of this environment's installed distributions and versions (computed once)."""
    if not _PACKAGES:
        from duplexeval_common.stage import installed_packages
        _PACKAGES.append(sha256_json(installed_packages()))
    return _PACKAGES[0]


def _venv_packages(venv: Path) -> str:
    """sha256 of the distributions installed in another virtualenv (its dist-info folder names)."""
    names = sorted(p.name for p in venv.glob("lib/python*/site-packages/*.dist-info"))
    return sha256_json(names)


def _group_rss(pgid: int) -> int:
    """Resident bytes of every process in a process group (Linux /proc)."""
    total = 0
    page = os.sysconf("SC_PAGE_SIZE")
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            if os.getpgid(int(d)) != pgid:
                continue
            with open(f"/proc/{d}/statm") as f:
                total += int(f.read().split()[1]) * page
        except (OSError, ValueError, IndexError):
            continue
    return total


def _exited(proc: subprocess.Popen) -> bool:
    """Whether the stage process has exited, without reaping it: while it is an unreaped zombie
    its pid (the group's id) cannot be reused, so the group can still be signalled safely."""
    try:
        return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:  # already reaped
        return True


def _exit_waiter(proc: subprocess.Popen):
    """wait(seconds) -> whether the stage process has exited, waking as soon as it does (a
    pidfd readable on exit, not reaping it) instead of at the end of a sleep; a sleep where the
    kernel has no pidfd."""
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        def wait(seconds: float) -> bool:
            time.sleep(seconds)
            return _exited(proc)
        return wait, lambda: None

    def wait(seconds: float) -> bool:
        select.select([fd], [], [], seconds)
        return _exited(proc)
    return wait, lambda: os.close(fd)


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGTERM to the stage's group, up to 5 s for all of it to end, then SIGKILL; not reaped."""
    kill_groups([proc.pid], 5.0)
    deadline = time.monotonic() + 5.0
    while not _exited(proc) and time.monotonic() < deadline:
        time.sleep(0.02)


def _kill_leftovers(proc: subprocess.Popen) -> None:
    """Processes of the stage's group still running once the stage process has exited."""
    if group_members(proc.pid):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


class LocalRuntime:
    name = "local"

    def __init__(self):
        self._ids: dict[str, str] = {}

    def identity(self, component: str) -> str:
        if component not in self._ids:
            if not component_dir(component).is_dir():
                raise DuplexEvalError(f"no component {component!r} in {COMPONENTS}")
            venv = own_environment(component)
            # The source, and the installed packages it runs with (a pip upgrade changes results).
            packages = _venv_packages(venv) if venv else _packages()
            digest = sha256_json([sha256_tree(*component_sources(component), COMPONENTS / "common",
                                              REPO / "schemas"), packages])
            self._ids[component] = f"source:sha256:{digest}"
        return self._ids[component]

    def provenance(self, component: str) -> dict:
        venv = own_environment(component)
        return {"identity": self.identity(component), **({"environment": str(venv)} if venv else {})}

    def command(self, component: str) -> str:
        name = component_command(component)
        venv = own_environment(component)
        if venv is not None:
            exe = venv / "bin" / name
            if not exe.is_file():
                raise DuplexEvalError(f"{component} runs in its own environment {venv}, which is missing: "
                                      f"run `make setup` (scripts/setup-runner-venv.sh "
                                      f"{component_dir(component).name})")
            return str(exe)
        exe = Path(sys.executable).parent / name
        found = str(exe) if exe.is_file() else shutil.which(name)
        if not found:
            raise DuplexEvalError(f"command {name!r} not found: run `make setup`")
        return found

    def args(self, call: Call) -> list[str]:
        args = [self.command(call.component), call.action, "--config", str(call.config)]
        if call.action == "run":
            args += ["--output", str(call.output)]
            for d in call.inputs:
                args += ["--input", str(d)]
        return args

    def run(self, call: Call, limits: Limits) -> Outcome:
        env = {**os.environ, **call.env(self.identity(call.component)), **call.secret_env}
        args = self.args(call)
        relay = LogRelay(call.log_file, call.quiet)
        wd = watchdog()
        token = None
        try:
            proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True, pass_fds=call.lock_fds)
        except BaseException:
            relay.close()
            raise
        try:
            token = wd.watch("group", [proc.pid], fds=call.lock_fds)
            pump = relay.pump(proc.stdout)
        except BaseException:
            _kill_group(proc)
            proc.wait()
            relay.close()
            wd.drop(token)
            raise
        reason = ""
        try:
            ncpu = max(1, int(limits.cpus))
            if ncpu < (os.cpu_count() or 1):
                os.sched_setaffinity(proc.pid, sorted(os.sched_getaffinity(0))[:ncpu])
        except (OSError, AttributeError):
            pass
        t0 = time.monotonic()
        last_mem = 0.0
        wait, close = _exit_waiter(proc)
        try:
            while not _exited(proc) and not wait(_POLL_S):
                now = time.monotonic()
                if now - t0 > limits.timeout_s:
                    reason = f"timed out after {limits.timeout_s:g} s (the stage timeout) and was killed"
                    _kill_group(proc)
                    break
                if now - last_mem >= 1.0:
                    last_mem = now
                    rss = _group_rss(proc.pid)
                    if rss > limits.memory_bytes:
                        reason = (f"used {rss / GiB:.2f} GiB of memory, over its limit of "
                                  f"{limits.memory_bytes / GiB:.2f} GiB, and was killed")
                        _kill_group(proc)
                        break
            _kill_leftovers(proc)
        except KeyboardInterrupt:  # Ctrl-C, or SIGTERM/SIGHUP (runtime.Terminated)
            _kill_group(proc)
            raise
        finally:
            close()
            proc.wait()
            pump.join(timeout=10)
            relay.close()
            wd.drop(token)
        return Outcome(None if reason else proc.returncode, reason, relay.last_error)
