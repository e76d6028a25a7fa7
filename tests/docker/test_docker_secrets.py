"""Secrets and a realtime runner image in the docker runtime: a key planted in the environment reaches no file,
and the freeze-omni pipeline check runs with its runner stage in duplexeval/runner-freeze-omni.

These tests need a Docker engine and the component images (`make docker-up images`); .ci/run
provides both and sets DUPLEXEVAL_DOCKER_TESTS=1.
"""

import pytest

from duplexeval_common.jsonio import read_json

from ..duplex_runner.test_freeze_omni import cert, server  # noqa: F401  (fixtures)
from ..orchestrator.test_repair_and_secrets import chat, planted_secret_runs  # noqa: F401
from .conftest import needs_images

pytestmark = needs_images


def test_planted_secrets_never_reach_a_file_docker(tmp_path, server, cert, chat):  # noqa: F811
    planted_secret_runs(tmp_path, server, cert, chat, "docker")


@pytest.mark.serial  # real-time sessions (make test runs it alone, after the parallel tests)
def test_freeze_omni_in_its_runner_image_latency_barge_in_and_repair(tmp_path, server, cert):  # noqa: F811
    """The freeze-omni pipeline check (tests/e2e/test_runner_freeze_omni.py) with RUNTIME=docker:
    the runner stage runs in duplexeval/runner-freeze-omni, a client-only image."""
    from ..e2e.test_runner_freeze_omni import latency_barge_in_and_repair
    latency_barge_in_and_repair(tmp_path, server, cert, "docker")
    run = read_json(tmp_path / "runs" / "latest" / "run.json")
    (runner,) = [s for s in run["stages"] if s["name"] == "runner"]
    assert runner["component"] == "runner-freeze-omni", runner
