"""What a runner is: the contract every model adapter implements.

A runner maps the user's audio to the model's audio on the same timeline.
The harness (harness.py) owns everything else: reading and writing files,
resampling to `in_sr` and back from `out_sr`, fitting the output to exactly
the input's length, the event log file and runner.json.

An adapter (silence, fixed-latency, cascade here; Moshi WebSocket,
Freeze-Omni socket.io, OpenAI realtime later) is a class registered in
registry.py and built as `cls(**runner_args, seed=seed)`:

- `name`, `clock` ("lockstep", "realtime" or "simulated", as in
  runner-record.schema.json), `in_sr` and `out_sr` (None: any rate / the
  rate it was given);
- `setup()`: load models once per stage; cheap when called again;
- `run(user, sr, *, log)`: one session per call, float32 mono at `sr` in,
  float32 mono at `out_sr` out, placed with a TimelineBuffer; log events
  with `log.emit(type, t, ...)`;
- `settings()`: the resolved settings recorded in runner.json;
- `models()`: `{name: {"package", "version", "files": {file: sha256}}}`.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from .events import EventLog

CLOCKS = ("lockstep", "realtime", "simulated")


class Runner(Protocol):
    name: str
    clock: str
    in_sr: int | None
    out_sr: int | None

    def setup(self) -> None: ...

    def run(self, user: np.ndarray, sr: int, *, log: EventLog) -> np.ndarray: ...

    def settings(self) -> dict[str, Any]: ...

    def models(self) -> dict[str, Any]: ...


class BaseRunner:
    """Defaults for the optional parts of the contract.

    `deterministic`: the output depends only on the input, settings and seed (no wall clock), so
    the event log omits wall times and the same input gives the same bytes."""

    name = "base"
    clock = "simulated"
    deterministic = False
    in_sr: int | None = None
    out_sr: int | None = None

    def setup(self) -> None:
        pass

    def settings(self) -> dict[str, Any]:
        return {}

    def models(self) -> dict[str, Any]:
        return {}


def resolve_args(runner: str, defaults: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """Defaults overridden by `given`; an unknown name is a one-line error."""
    from duplexeval_common.errors import DuplexEvalError
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise DuplexEvalError(f"runner {runner!r}: unknown runner_args {', '.join(unknown)} "
                              f"(known: {', '.join(sorted(defaults))})")
    return {**defaults, **given}
