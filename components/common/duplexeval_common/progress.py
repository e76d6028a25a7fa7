"""Logging and a progress line for long stages, on stderr."""

from __future__ import annotations

import sys
import time


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


class Progress:
    """Prints `[name] i/n item  elapsed  eta` per item; cheap and log-friendly."""

    def __init__(self, name: str, total: int):
        self.name, self.total, self.done = name, total, 0
        self.t0 = time.monotonic()

    def step(self, item: str, status: str = "") -> None:
        self.done += 1
        elapsed = time.monotonic() - self.t0
        eta = elapsed / self.done * (self.total - self.done)
        extra = f" {status}" if status else ""
        log(f"[{self.name}] {self.done}/{self.total} {item}{extra}  "
            f"{elapsed:.1f}s elapsed, ~{eta:.0f}s left")
