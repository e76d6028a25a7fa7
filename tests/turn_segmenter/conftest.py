"""Fixtures of the turn-segmenter tests: an isolated user cache (the judge cache lives there),
no endpoint or key from the caller's environment, and the judge tests' chat-completions test
double (tests/judge/chat_server.py: a protocol double that replays scripted replies, not a
model)."""

from __future__ import annotations

# the judge tests' fixtures, one copy: an isolated user cache and no endpoint or key from the caller's
# environment (autouse), and server(script) -> a running chat-completions double
from ..judge.conftest import _isolated_user_cache, server  # noqa: F401

SECRET = "test-secret-value-never-written-51c0de"
