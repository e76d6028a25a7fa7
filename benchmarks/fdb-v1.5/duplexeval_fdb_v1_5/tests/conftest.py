"""This benchmark's tests never write the real user cache (~/.cache/duplexeval): the shared
package-scoped fixture of tests/conftest.py, autouse here."""

from __future__ import annotations

import pytest

from tests.conftest import isolated_user_cache  # noqa: F401  (the fixture used below)


@pytest.fixture(scope="package", autouse=True)
def _isolated_user_cache(isolated_user_cache):
    yield
