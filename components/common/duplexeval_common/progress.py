"""Logging and one progress bar per long stage, on stderr.

On a terminal (or when the orchestrator, itself on a terminal, sets DUPLEXEVAL_PROGRESS=bar) a
stage shows one updating tqdm bar; otherwise (CI logs, files, DUPLEXEVAL_PROGRESS=lines) it
prints one plain line per item, which reads well in a log.
"""

from __future__ import annotations

import os
import sys
import time

from .secrets import scrub

_BAR = None  # the active bar, so that log lines print above it instead of breaking it


def log(msg: str) -> None:
    msg = scrub(msg)
    if _BAR is not None:
        _BAR.write(msg, file=sys.stderr)
    else:
        print(msg, file=sys.stderr, flush=True)


def bars_wanted() -> bool:
    mode = os.environ.get("DUPLEXEVAL_PROGRESS", "auto")
    if mode in ("bar", "lines"):
        return mode == "bar"
    return sys.stderr.isatty()


class Progress:
    """`step(item, status)` once per item: a tqdm bar, or `[name] i/n item  elapsed  eta` lines."""

    def __init__(self, name: str, total: int):
        global _BAR
        self.name, self.total, self.done = name, total, 0
        self.t0 = time.monotonic()
        self.bar = None
        if bars_wanted() and total > 0:
            try:
                from tqdm import tqdm
            except ImportError:  # tqdm is a pinned dependency; plain lines if it is absent anyway
                tqdm = None
            if tqdm is not None:
                self.bar = tqdm(total=total, desc=name, unit="sample", file=sys.stderr, leave=True,
                                dynamic_ncols=True, mininterval=0.2)
                _BAR = self.bar

    def step(self, item: str, status: str = "") -> None:
        self.done += 1
        if self.bar is not None:
            if status and status != "cached":
                self.bar.write(scrub(f"[{self.name}] {item} {status}"), file=sys.stderr)
            self.bar.set_postfix_str(item[-40:], refresh=False)
            self.bar.update(1)
            if self.done >= self.total:
                self.close()
            return
        elapsed = time.monotonic() - self.t0
        eta = elapsed / self.done * (self.total - self.done)
        extra = f" {status}" if status else ""
        log(f"[{self.name}] {self.done}/{self.total} {item}{extra}  "
            f"{elapsed:.1f}s elapsed, ~{eta:.0f}s left")

    def close(self) -> None:
        global _BAR
        if self.bar is not None:
            self.bar.close()
            if _BAR is self.bar:
                _BAR = None
            self.bar = None
