"""The runner event log (events.jsonl).

Each line is `{"t": input-timeline seconds, "wall": monotonic seconds,
"type": ..., ...}` and satisfies schemas/runner-event.schema.json. `t` says
where on the input timeline the event belongs; `wall` says when the harness
saw it, so compute time and drift can be read off the log.

`stats` collects per-sample numbers a runner wants in runner.json; keep them
deterministic for deterministic runners (wall-clock numbers belong in the log).

No text is kept whole past MAX_TEXT_CHARS: every string in an event (a server's text piece, an
error's reason, a nested field, a key) is cut there and marked `…[truncated N characters]`
(`cap_text`), so a server sending one huge text frame cannot fill events.jsonl or slow down the
writing of it (every string written is scrubbed of secrets, which costs more the longer it is).
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable

from duplexeval_common import schemas

SCHEMA = "runner-event"
MAX_TEXT_CHARS = 4000  # the most of any one text an event keeps


def cap_text(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    """`text`, or its first `limit` characters and `…[truncated N characters]` (N: those dropped)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}…[truncated {len(text) - limit} characters]"


class EventLog:
    def __init__(self, wall: Callable[[], float] = time.monotonic, record_wall: bool = True):
        """record_wall False (deterministic runners): lines carry no `wall`, so the same input gives
        the same bytes; wall time is still measured (`elapsed`) for stage.json's timings."""
        self._wall = wall
        self.record_wall = record_wall
        self.rows: list[dict] = []
        self.stats: dict[str, Any] = {}
        self.wall0 = wall()

    def emit(self, type: str, t: float, **fields: Any) -> dict:
        """Append one event at input-timeline time t; raise ValueError if it breaks the schema."""
        if not isinstance(t, (int, float)) or not math.isfinite(t):
            raise ValueError(f"event {type!r}: time {t!r} is not a finite number")
        row = {"t": round(float(t), 6), "type": type}
        if self.record_wall:
            row["wall"] = round(self._wall(), 6)
        row.update({k: _plain(v) for k, v in fields.items()})
        msg = schemas.problem(SCHEMA, row)
        if msg:
            raise ValueError(f"bad event: {msg}")
        self.rows.append(row)
        return row

    def elapsed(self) -> float:
        """Wall seconds since the log was opened."""
        return self._wall() - self.wall0

    def of_type(self, type: str) -> list[dict]:
        return [r for r in self.rows if r["type"] == type]


def _plain(v: Any) -> Any:
    """numpy scalars and tuples to JSON values; floats rounded to microseconds; texts capped."""
    if hasattr(v, "item") and not isinstance(v, (list, dict, str)):
        v = v.item()
    if isinstance(v, str):
        return cap_text(v)
    if isinstance(v, float):
        return round(v, 6)
    if isinstance(v, tuple):
        return [_plain(x) for x in v]
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {cap_text(str(k)): _plain(x) for k, x in v.items()}
    return v
