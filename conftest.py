"""The repository's root conftest: pytest imports it first, with this folder on sys.path, so the
benchmark packages' tests (benchmarks/<name>/<package>/tests/) reach the shared test helpers in
tests/ as `tests.conftest`, `tests.judge.chat_server` and so on."""

# The shared fixtures (tests/conftest.py's), for every test of the repository.
from tests.conftest import isolated_user_cache, speak, sr  # noqa: E402,F401


# The longest test files first (measured: docs/performance.md lists the slowest tests), so that
# `make test`'s parallel pass, which hands out whole files in collection order, does not end with
# three processes idle while the fourth works through a long file it was given last. The order of
# the tests inside a file is kept; everything not named keeps its collection order after these.
LONGEST_FIRST = (
    "tests/docker/test_docker_runtime.py",
    "tests/orchestrator/test_slurm.py",
    "benchmarks/mtr/duplexeval_mtr/tests/test_mtr_eval.py",
    "tests/docker/test_archive_docker.py",
    "benchmarks/fdb-v1.5/duplexeval_fdb_v1_5/tests/test_eval_controls.py",
    "benchmarks/fdb-v1/duplexeval_fdb_v1/tests/test_eval_controls.py",
    "benchmarks/fdb-v1/duplexeval_fdb_v1/tests/test_datasets.py",
    "tests/orchestrator/test_repair_and_secrets.py",
    "tests/orchestrator/test_sensitivity.py",
    "tests/e2e/test_default_path.py",
    "benchmarks/fdb-v1.5/duplexeval_fdb_v1_5/tests/test_datasets.py",
    "tests/orchestrator/test_hostile_docker.py",
    "benchmarks/fdb-v1/duplexeval_fdb_v1/tests/test_counterfactual.py",
    "tests/duplex_runner/test_moshi.py",
    "tests/orchestrator/test_eval_cli.py",
    "tests/orchestrator/test_benchmark_package.py",
)


def pytest_collection_modifyitems(config, items):
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(LONGEST_FIRST)))
