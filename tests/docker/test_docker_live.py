"""Live sessions (fdb-v2) in the docker runtime: the cascade's runner image carries the examiner, and
a run there gives the local runtime's bytes; an image without an examiner refuses with one line.

These tests need a Docker engine and the component images (`make docker-up images`); .ci/run
provides both and sets DUPLEXEVAL_DOCKER_TESTS=1.
"""

import subprocess

from duplexeval_common.jsonio import read_json

from ..conftest import command
from .conftest import assert_same_stages, eval_in_both_runtimes, final_metrics, needs_images

pytestmark = needs_images

ARGS = ["--benchmark", "fdb-v2", "--benchmark-arg", "duration_s=20"]


def test_fdb_v2_with_the_cascade_in_docker_equals_the_local_run(tmp_path):
    """The cascade on its fixed clock against the cascade examiner (offline LLM), on the mini set's
    daily task (the other three run the same code: fdb-v2's controls run them all, locally): every
    stage gives the same content digest in both runtimes and metrics.json is the same bytes."""
    runs = eval_in_both_runtimes(tmp_path, [*ARGS, "--model", "cascade", "--runner-arg", "clock=fixed",
                                            "--subset", "daily"])
    assert [s["name"] for s in runs["docker"][1]["stages"]] == ["dataset", "runner", "aggregate"]
    assert_same_stages(runs)
    m = final_metrics(runs)
    assert m[0] == m[1]
    dh, drun = runs["docker"]
    daily = read_json(dh / "store" / drun["stages"][-1]["key"] / "metrics.json")["subsets"]["daily"]
    assert daily["unified"]["response_rate"]["value"] > 0  # the cascade answers the examiner


def test_an_image_without_an_examiner_refuses_with_one_line(tmp_path):
    r = subprocess.run([command("duplexeval"), "--home", str(tmp_path / "h"), "eval", *ARGS, "--model", "silence",
                        "--runtime", "docker"], capture_output=True, text=True)
    assert r.returncode != 0
    lines = [ln for ln in (r.stdout + r.stderr).splitlines() if "examiner 'cascade' is not installed" in ln]
    assert lines and "local runtime" in lines[0], r.stdout[-2000:] + r.stderr[-2000:]
