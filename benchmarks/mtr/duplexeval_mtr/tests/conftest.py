"""This benchmark's tests never write the real user cache (~/.cache/duplexeval): the shared
package-scoped fixture of tests/conftest.py, autouse here; the judge tests' chat-completions test
server (tests/judge/chat_server.py: scripted answers, not a model) as the `server` fixture."""

from __future__ import annotations

import pytest

from tests.conftest import isolated_user_cache  # noqa: F401  (the fixture used below)
from tests.judge.conftest import server  # noqa: F401  (the chat-completions test server fixture)


@pytest.fixture(scope="package", autouse=True)
def _isolated_user_cache(isolated_user_cache):
    yield
