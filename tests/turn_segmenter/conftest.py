"""Fixtures of the turn-segmenter tests: an isolated user cache (the judge cache lives there),
no endpoint or key from the caller's environment, and the judge tests' chat-completions test
double (tests/judge/chat_server.py: a protocol double that replays scripted replies, not a
model)."""

from __future__ import annotations

import pytest

from ..judge import chat_server

SECRET = "test-secret-value-never-written-51c0de"


@pytest.fixture(autouse=True)
def _isolated_user_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DUPLEXEVAL_CACHE", str(tmp_path / "user-cache"))
    for var in ("XDG_CACHE_HOME", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def server():
    """start(script) -> a running ChatServer; all are shut down after the test."""
    servers = []

    def start(script):
        servers.append(chat_server.start(script))
        return servers[-1]
    yield start
    for s in servers:
        s.shutdown()
        s.server_close()
