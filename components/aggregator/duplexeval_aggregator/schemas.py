"""Validation of what the aggregator writes against schemas/*.schema.json (draft 2020-12).

A violation here is a bug of the aggregator, not bad input, so it is an internal error.
"""

from __future__ import annotations

from duplexeval_common.schemas import problem


def validate(name: str, obj, where: str) -> None:
    msg = problem(name, obj)
    if msg:
        raise RuntimeError(f"internal error: {where} does not satisfy {msg}")
