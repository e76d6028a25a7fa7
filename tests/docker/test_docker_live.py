"""Live sessions (fdb-v2) in the docker runtime: the cascade's runner image carries the examiner, and
a run there gives the local runtime's bytes; an image without an examiner refuses with one line.

These tests need a Docker engine and the component images (`make docker-up images`); .ci/run
provides both and sets DUPLEXEVAL_DOCKER_TESTS=1.
"""

import subprocess

from duplexeval_common.jsonio import read_json

from ..conftest import command
from .conftest import needs_images

pytestmark = needs_images

ARGS = ["--benchmark", "fdb-v2", "--benchmark-arg", "duration_s=20"]


def test_fdb_v2_with_the_cascade_in_docker_equals_the_local_run(tmp_path):
    """The cascade on its fixed clock against the cascade examiner (offline LLM): every stage of the
    mini set gives the same content digest in both runtimes and metrics.json is the same bytes."""
    from duplexeval.store import content_digest
    args = [*ARGS, "--model", "cascade", "--runner-arg", "clock=fixed"]
    runs = {}
    for runtime in ("docker", "local"):
        home = tmp_path / runtime
        r = subprocess.run([command("duplexeval"), "--home", str(home), "eval", *args, "--runtime", runtime],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
        runs[runtime] = (home, read_json(home / "runs" / "latest" / "run.json"))
    (dh, drun), (lh, lrun) = runs["docker"], runs["local"]
    assert [s["name"] for s in drun["stages"]] == ["dataset", "runner", "aggregate"]
    assert all(s["identity"].startswith("image:sha256:") for s in drun["stages"])
    for d, loc in zip(drun["stages"], lrun["stages"]):
        assert content_digest(read_json(dh / "store" / d["key"] / "stage.json")) == \
            content_digest(read_json(lh / "store" / loc["key"] / "stage.json")), d["name"]
    m = [(h / "store" / run["stages"][-1]["key"] / "metrics.json").read_bytes() for h, run in runs.values()]
    assert m[0] == m[1]
    daily = read_json(dh / "store" / drun["stages"][-1]["key"] / "metrics.json")["subsets"]["daily"]
    assert daily["unified"]["response_rate"]["value"] > 0  # the cascade answers the examiner


def test_an_image_without_an_examiner_refuses_with_one_line(tmp_path):
    r = subprocess.run([command("duplexeval"), "--home", str(tmp_path / "h"), "eval", *ARGS, "--model", "silence",
                        "--runtime", "docker"], capture_output=True, text=True)
    assert r.returncode != 0
    lines = [ln for ln in (r.stdout + r.stderr).splitlines() if "examiner 'cascade' is not installed" in ln]
    assert lines and "local runtime" in lines[0], r.stdout[-2000:] + r.stderr[-2000:]
