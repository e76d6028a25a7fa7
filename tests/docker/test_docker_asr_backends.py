"""The ASR backends other than the default one, in the asr-aligner image: the same metrics as locally.

These tests need a Docker engine and the component images (`make docker-up images`); .ci/run
provides both and sets DUPLEXEVAL_DOCKER_TESTS=1.
"""

import subprocess

import pytest

from duplexeval_common.jsonio import read_json

from ..conftest import command
from .conftest import needs_images

pytestmark = needs_images


@pytest.fixture(scope="module")
def homes(tmp_path_factory):
    """One home per runtime for both backends: the second reuses the dataset and runner stages."""
    return {runtime: tmp_path_factory.mktemp(runtime) for runtime in ("docker", "local")}


@pytest.mark.parametrize("asr", ["whisper-timestamped", "stable-ts"])
def test_other_asr_backends_run_in_docker_and_equal_local(homes, asr):
    # one turn-taking sample: the backend's transcription and word timing, not the dataset, is what
    # is compared (fdb-mini runs whole in both runtimes in test_docker_runtime.py)
    args = ["--model", "fixed-latency", "--judge", "none", "--subset", "synthetic_turn_taking", "--limit", "1",
            "--asr", asr]
    out = {}
    for runtime, home in homes.items():
        r = subprocess.run([command("duplexeval"), "--home", str(home), "eval", *args, "--runtime", runtime],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[-3000:]
        run = read_json(home / "runs" / "latest" / "run.json")
        assert run["stages"][2]["name"] == "asr" and not run["stages"][2]["cached"]
        out[runtime] = (home / "store" / run["stages"][-1]["key"] / "metrics.json").read_bytes()
    assert out["docker"] == out["local"]
