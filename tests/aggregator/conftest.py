"""The aggregator tests never write the real user cache (~/.cache/duplexeval)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="package", autouse=True)
def _isolated_user_cache(tmp_path_factory):
    """DUPLEXEVAL_CACHE points to a temporary folder while this package's tests run, so a
    score without --cache-dir (the user-cache default) stays inside the test's temp dir."""
    mp = pytest.MonkeyPatch()
    mp.setenv("DUPLEXEVAL_CACHE", str(tmp_path_factory.mktemp("user-cache")))
    mp.delenv("XDG_CACHE_HOME", raising=False)
    yield
    mp.undo()
