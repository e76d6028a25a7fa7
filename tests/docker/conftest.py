"""The docker tests wait for the images when .ci/run builds them beside the other tests.

.ci/run starts `make images` in the background as soon as the environments are set up and runs
`make test` at once, so the tests that need no engine use the CPUs while the images build. It
names a file in DUPLEXEVAL_IMAGES_STATUS that `make images`' exit status is written to when it
ends; every test of this folder waits for it (once per process) and fails, naming the build's log,
when the build failed. Without the variable (images built beforehand, or no engine) nothing waits.
"""

import os
from pathlib import Path

import pytest

from ..conftest import background_step_failure

IMAGES_WAIT_S = 3600.0

# the mark of every test here that runs an image
needs_images = pytest.mark.skipif(os.environ.get("DUPLEXEVAL_DOCKER_TESTS") != "1",
                                  reason="needs a Docker engine and the images (DUPLEXEVAL_DOCKER_TESTS=1)")


def images_build_status() -> str | None:
    """None when the images are there; else why they are not (the build failed or took too long)."""
    if os.environ.get("DUPLEXEVAL_DOCKER_TESTS") != "1":
        return None
    return background_step_failure("DUPLEXEVAL_IMAGES_STATUS", "DUPLEXEVAL_IMAGES_LOG", "make images", IMAGES_WAIT_S)


@pytest.fixture(autouse=True)
def _images_built():
    why = images_build_status()
    if why is not None:
        pytest.fail(why, pytrace=False)


def eval_in_both_runtimes(tmp_path: Path, args: list[str]) -> dict:
    """`duplexeval eval ARGS` in the docker runtime, then the local one, each in a home of its own
    under tmp_path: {runtime: (home, run.json)} (a failed run fails the test with its output)."""
    import subprocess

    from duplexeval_common.jsonio import read_json

    from ..conftest import command
    runs = {}
    for runtime in ("docker", "local"):
        home = tmp_path / runtime
        r = subprocess.run([command("duplexeval"), "--home", str(home), "eval", *args, "--runtime", runtime],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
        runs[runtime] = (home, read_json(home / "runs" / "latest" / "run.json"))
    return runs


def assert_same_stages(runs: dict, numeric: bool = False) -> None:
    """Every docker stage ran from an image, and each stage's content digest (its outputs' sha256 and
    sample statuses) is the local run's; `numeric`: their numeric environments too."""
    from duplexeval.store import content_digest

    from duplexeval_common.jsonio import read_json
    (dh, drun), (lh, lrun) = runs["docker"], runs["local"]
    assert all(s["identity"].startswith("image:sha256:") for s in drun["stages"])
    assert [s["name"] for s in drun["stages"]] == [s["name"] for s in lrun["stages"]]
    for d, loc in zip(drun["stages"], lrun["stages"]):
        dr = read_json(dh / "store" / d["key"] / "stage.json")
        lr = read_json(lh / "store" / loc["key"] / "stage.json")
        assert content_digest(dr) == content_digest(lr), d["name"]
        if numeric:
            assert dr["environment"]["numeric"] == lr["environment"]["numeric"], d["name"]


def final_metrics(runs: dict) -> list[bytes]:
    """metrics.json of each run's last stage, docker's first."""
    return [(home / "store" / run["stages"][-1]["key"] / "metrics.json").read_bytes() for home, run in runs.values()]
