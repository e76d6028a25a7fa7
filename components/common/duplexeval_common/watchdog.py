"""A watchdog that outlives its parent: what a process must not leave behind when it is killed.

A parent (the orchestrator) starts one watchdog (`Watchdog`, on first use), a small process in a
session of its own that holds the other end of a socket pair, and tells it, as it goes, what to
clean up should the parent end without doing so itself:

    token = wd.watch("group", [pgid], fds=[lock_fd])        kill this process group
    token = wd.watch("call", ["pkg.module", "function", [args...]])   call this to stop something
                                                           (a container, Slurm jobs)
    token = wd.watch("finally", ["pkg.module", "function", [args...]]) call this once all is stopped
                                                           (mark a run interrupted)
    wd.drop(token)                                         done by the parent itself: forget it

`fds` are descriptors the watchdog holds (duplicated, passed over the socket) until the thing
they belong to is gone: a stage's lock stays held while the stage may still run.

When the parent ends for any reason (kill -9 included) the kernel closes its end of the socket;
the watchdog sees the end of the stream and, in this order: sends SIGTERM to every group and makes
every "call", waits up to GRACE_S for the groups to be gone, sends SIGKILL to what is left, makes
every "finally" call, closes the descriptors it holds (releasing the locks) and exits. A parent
that drops everything it watched leaves the watchdog nothing to do: it exits when its parent
does. The watchdog runs with only the standard library (the module it calls is imported then).
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

GRACE_S = 5.0
_MAX_MESSAGE = 1 << 16
_MAX_FDS = 64


# ---- the parent's side ----------------------------------------------------------------------------

class Watchdog:
    """The parent's handle: `watch` and `drop` (thread-safe). The process starts on first use."""

    def __init__(self):
        self._sock: socket.socket | None = None
        self._proc: subprocess.Popen | None = None
        self._lock = threading.Lock()
        self._n = 0
        self._owner = os.getpid()

    def _ensure(self) -> None:
        if self._proc is not None and self._proc.poll() is None and self._sock is not None:
            return
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        from .secrets import SECRET_ENV_PREFIX, is_secret_name
        env = {k: v for k, v in os.environ.items()
               if not (k.startswith(SECRET_ENV_PREFIX) or is_secret_name(k))}
        try:
            self._proc = subprocess.Popen([sys.executable, "-m", "duplexeval_common.watchdog"], stdin=theirs,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                          start_new_session=True, close_fds=True, env=env, cwd="/")
        finally:
            theirs.close()
        self._sock = mine

    def _send(self, msg: dict, fds=()) -> None:
        data = json.dumps(msg).encode()
        if len(data) > _MAX_MESSAGE:
            raise ValueError("watchdog message too long")
        if fds:
            socket.send_fds(self._sock, [data], list(fds))
        else:
            self._sock.send(data)

    def watch(self, kind: str, args: list, fds=()) -> str:
        if kind not in ("group", "call", "finally"):
            raise ValueError(f"unknown watchdog entry {kind!r}")
        with self._lock:
            self._ensure()
            self._n += 1
            token = str(self._n)
            self._send({"op": "watch", "id": token, "kind": kind, "args": args}, fds)
            return token

    def drop(self, token: str | None) -> None:
        if token is None:
            return
        with self._lock:
            if self._sock is None:
                return
            try:
                self._send({"op": "drop", "id": token})
            except OSError:  # the watchdog is gone: nothing to withdraw
                pass

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None


_WATCHDOG: list[Watchdog] = []


def watchdog() -> Watchdog:
    """This process's watchdog (one per process; started on the first `watch`)."""
    if not _WATCHDOG or _WATCHDOG[0]._owner != os.getpid():  # a forked child gets its own
        _WATCHDOG[:] = [Watchdog()]
    return _WATCHDOG[0]


# ---- process groups ------------------------------------------------------------------------------

def group_members(pgid: int) -> list[int]:
    """The live (not zombie) processes of a process group, from /proc."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        rest = stat[stat.rfind(b")") + 2:].split()  # the name may hold spaces and brackets
        try:
            if rest[0] != b"Z" and int(rest[2]) == pgid:
                out.append(int(d))
        except (IndexError, ValueError):
            continue
    return out


def kill_groups(pgids: list[int], grace_s: float = GRACE_S, before_wait=None) -> None:
    """SIGTERM to each group, `before_wait()`, then up to grace_s for them to end, then SIGKILL."""
    for g in pgids:
        try:
            os.killpg(g, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass
    if before_wait is not None:
        before_wait()
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(group_members(g) for g in pgids):
        time.sleep(0.05)
    for g in pgids:
        if group_members(g):
            try:
                os.killpg(g, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


# ---- the watchdog's side -------------------------------------------------------------------------

def _call(spec: list) -> None:
    module, name, args = spec
    try:
        getattr(importlib.import_module(module), name)(*args)
    except Exception:  # noqa: BLE001 - one failed clean-up must not stop the others
        pass


def _clean(entries: dict) -> None:
    groups = [int(e["args"][0]) for e in entries.values() if e["kind"] == "group"]
    calls = [e["args"] for e in entries.values() if e["kind"] == "call"]
    finals = [e["args"] for e in entries.values() if e["kind"] == "finally"]
    kill_groups(groups, before_wait=lambda: [_call(c) for c in calls])
    for c in finals:
        _call(c)
    for e in entries.values():
        for fd in e["fds"]:
            try:
                os.close(fd)
            except OSError:
                pass


class _Stop(Exception):
    pass


def _stop(*_) -> None:
    raise _Stop()


def main() -> None:
    """The watchdog process: read entries until the parent is gone (or SIGTERM), then clean up."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # a Ctrl-C at the terminal is the parent's
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _stop)           # asked to stop: clean up as if the parent ended
    sock = socket.socket(fileno=0)
    entries: dict[str, dict] = {}
    while True:
        try:
            msg, fds, _flags, _addr = socket.recv_fds(sock, _MAX_MESSAGE, _MAX_FDS)
        except _Stop:
            break
        except OSError:
            break
        if not msg:
            break  # the parent is gone
        try:
            m = json.loads(msg)
        except ValueError:
            m = {}
        if m.get("op") == "watch":
            entries[str(m["id"])] = {"kind": m["kind"], "args": m["args"], "fds": fds}
        else:
            for fd in fds:
                os.close(fd)
            gone = entries.pop(str(m.get("id")), None)
            for fd in (gone or {}).get("fds", []):
                os.close(fd)
    _clean(entries)


if __name__ == "__main__":
    main()
    sys.exit(0)
