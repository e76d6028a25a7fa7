"""What both runtimes share: a stage invocation, its limits, its outcome and its log.

A runtime (runtime_local.py, runtime_docker_stage.py) runs one component command, `run` or
`check`, under the stage's limits: a wall-clock timeout, a memory cap and a CPU count. A stage
that passes a limit is killed and its outcome says why. The stage's output (stdout and stderr)
goes through `LogRelay`: every line is scrubbed of secrets, shown on the console (progress bars
included) and appended to the run's log file for that stage.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sys
import threading
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO

from duplexeval_common.secrets import scrub
from duplexeval_common.stage import numeric_environment

GiB = 1024 ** 3


def _total_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 16 * GiB


@dataclass(frozen=True)
class Limits:
    """Per-stage limits. Defaults: 6 hours, 3/4 of the machine's memory, every core."""

    timeout_s: float = 6 * 3600.0
    memory_bytes: int = field(default_factory=lambda: int(_total_memory() * 3 // 4))
    cpus: float = field(default_factory=lambda: float(os.cpu_count() or 1))

    def record(self) -> dict:
        return {"timeout_s": self.timeout_s, "memory_gib": round(self.memory_bytes / GiB, 3),
                "cpus": self.cpus}

    @staticmethod
    def make(timeout_s: float | None, memory_gb: float | None, cpus: float | None) -> "Limits":
        d = Limits()
        from duplexeval_common.errors import DuplexEvalError
        import math
        for name, v in (("--stage-timeout", timeout_s), ("--memory-gb", memory_gb), ("--cpus", cpus)):
            if v is not None and not (v > 0 and math.isfinite(v)):
                raise DuplexEvalError(f"{name} must be a positive finite number, got {v}")
        return Limits(timeout_s if timeout_s else d.timeout_s,
                      int(memory_gb * GiB) if memory_gb else d.memory_bytes,
                      min(float(cpus), float(os.cpu_count() or 1)) if cpus else d.cpus)


@dataclass
class Call:
    """One component command to run: `<component> run|check ...` with its environment."""

    component: str
    action: str                     # "run" or "check"
    config: Path                    # the stage's config file (secret references only)
    key: str = ""
    inputs: list[Path] = field(default_factory=list)
    output: Path | None = None
    cache: Path | None = None
    network: bool = False
    secret_env: dict[str, str] = field(default_factory=dict)  # values; never written
    pass_env: tuple[str, ...] = ()  # names passed through from our environment (keys)
    host_paths: list[str] = field(default_factory=list)  # files a setting names (mounted read-only)
    log_file: Path | None = None
    quiet: bool = False             # log file only, nothing on the console
    invocation: str = field(default_factory=lambda: uuid.uuid4().hex)
    lock_fds: list[int] = field(default_factory=list)  # the stage's store locks: held by whoever runs it

    def env(self, identity: str) -> dict[str, str]:
        """The non-secret settings every stage gets (the runtimes add the secrets)."""
        env = {"DUPLEXEVAL_IDENTITY": identity, "DUPLEXEVAL_STAGE_KEY": self.key,
               "DUPLEXEVAL_INVOCATION": self.invocation,
               "DUPLEXEVAL_PROGRESS": "bar" if sys.stderr.isatty() else "lines"}
        if self.cache is not None:
            env["DUPLEXEVAL_CACHE"] = str(self.cache)
        return env


@dataclass
class Outcome:
    rc: int | None                  # exit code; None when the stage was killed
    reason: str = ""                # why it was killed or stopped, one line
    last_error: str = ""            # the last `error: ...` line the stage printed

    def record(self) -> dict:
        return asdict(self)


_SPLIT = re.compile(rb"(\r\n|\n|\r)")
# A log line is kept up to MAX_LINE characters (scrubbed whole first, then cut, with a marker);
# a line that grows past MAX_PENDING bytes without ending is scrubbed and written at that point,
# and the rest of it, up to its end, is counted and dropped. So a stage that prints one line of
# 10 MB costs its length once, and its log keeps 64 KiB of it.
MAX_LINE = 1 << 16
MAX_PENDING = 1 << 22


class LogRelay:
    """Scrubbed copy of a stage's output: to the console as it comes, to a log file by line."""

    def __init__(self, log_file: Path | None, quiet: bool = False):
        self.console: IO[str] | None = None if quiet else sys.stderr
        self.file = open(log_file, "a", encoding="utf-8") if log_file else None
        self._buf = bytearray()
        self._dropping = 0  # bytes dropped of an over-long line, until its end
        self._line = ""  # the current log line (a \r rewrites it, as a terminal would)
        self.last_error = ""
        self._lock = threading.Lock()

    def feed(self, data: bytes) -> None:
        with self._lock:
            start = max(0, len(self._buf) - 1)  # a \r\n may straddle two chunks
            self._buf += data
            last = 0
            for m in _SPLIT.finditer(self._buf, start):
                if m.group(0) == b"\r" and m.end() == len(self._buf):
                    break  # a \r at the end may be the first half of \r\n: wait for more
                self._line_done(bytes(self._buf[last:m.start()]), m.group(0).decode())
                last = m.end()
            del self._buf[:last]
            if len(self._buf) > MAX_PENDING:
                if not self._dropping:
                    self._emit(self._buf.decode("utf-8", "replace"), "\n")
                self._dropping += len(self._buf)
                self._buf.clear()

    def _line_done(self, raw: bytes, sep: str) -> None:
        if self._dropping:  # the end of an over-long line already written
            self._dropping = 0
            return
        self._emit(raw.decode("utf-8", "replace"), sep)

    def _emit(self, text: str, sep: str) -> None:
        text = scrub(text)
        if len(text) > MAX_LINE:
            text = text[:MAX_LINE] + f" [... {len(text) - MAX_LINE} more characters not kept]"
        if self.console is not None:
            self.console.write(text + sep)
            self.console.flush()
        if sep == "\r":
            self._line = text
            return
        line = text or self._line
        self._line = ""
        if line.startswith(("error:", "Error:")):
            self.last_error = line.split(":", 1)[1].strip()
        if self.file is not None:
            self.file.write(line + "\n")
            self.file.flush()

    def close(self) -> None:
        with self._lock:
            if self._buf and not self._dropping:
                self._emit(self._buf.decode("utf-8", "replace"), "\n")
            self._buf.clear()
            self._dropping = 0
            if self.file is not None:
                self.file.close()
                self.file = None

    def pump(self, stream) -> threading.Thread:
        """Read a binary stream to its end in a thread."""
        def run():
            for chunk in iter(lambda: stream.read1(4096) if hasattr(stream, "read1") else stream.read(4096), b""):
                self.feed(chunk)
        t = threading.Thread(target=run, daemon=True)
        t.start()
        return t


def numeric_env() -> dict[str, str]:
    """OPENBLAS_*, OMP_*, MKL_* and thread counts of our environment: the same in both runtimes."""
    return numeric_environment()


# ---- signals ------------------------------------------------------------------------------------

class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised in the main thread: handled where a Ctrl-C is (the stage's
    processes are stopped, run.json says interrupted); `signum` gives the exit code 128 + signum."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextlib.contextmanager
def interrupt_on_signals(signums=(signal.SIGTERM, signal.SIGHUP)):
    """While inside: the first SIGTERM or SIGHUP raises Terminated; later ones are ignored, so the
    clean-up the first started is not cut short (kill -9 still ends everything; the watchdog,
    duplexeval_common/watchdog.py, stops the stages then). Outside the main thread: nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    fired: list[int] = []

    def handler(signum, frame):
        if fired:
            return
        fired.append(signum)
        raise Terminated(signum)
    old = {n: signal.signal(n, handler) for n in signums}
    try:
        yield
    finally:
        for n, h in old.items():
            signal.signal(n, h)


def exit_code(exc: BaseException) -> int:
    """128 + the signal's number: 130 for Ctrl-C (SIGINT), 143 for SIGTERM, 129 for SIGHUP."""
    return 128 + getattr(exc, "signum", signal.SIGINT)


def interrupted_by(exc: BaseException) -> str:
    """`by SIGTERM` (SIGHUP) or `by the user` (Ctrl-C), for run.json's reason."""
    return f"by {exc.args[0]}" if isinstance(exc, Terminated) else "by the user"
