"""The repository's root conftest: pytest imports it first, with this folder on sys.path, so the
benchmark packages' tests (benchmarks/<name>/<package>/tests/) reach the shared test helpers in
tests/ as `tests.conftest`, `tests.judge.chat_server` and so on."""

# The shared fixtures (tests/conftest.py's), for every test of the repository.
from tests.conftest import isolated_user_cache, speak, sr  # noqa: E402,F401
