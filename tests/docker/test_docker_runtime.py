"""The docker runtime: same metrics as the local runtime, and swapping one image.

The other docker-runtime checks have files of their own, so that `make test`'s parallel pass can
run them side by side: test_docker_mtr.py (MTR-DuplexBench), test_docker_asr_backends.py (the
other ASR backends), test_docker_secrets.py (planted secrets, a realtime runner image).

These tests need a Docker engine and the component images (`make docker-up
images`); .ci/run provides both and sets DUPLEXEVAL_DOCKER_TESTS=1.
"""

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from duplexeval_common.jsonio import read_json

from ..conftest import command
from .conftest import needs_images

pytestmark = needs_images

ARGS = ["--model", "fixed-latency", "--judge", "none"]  # the full default dataset (fdb-mini)
# every image: the components, and runner-<name> for each runner package (docker/images.py)
COMPONENTS = subprocess.run([sys.executable, str(Path(__file__).resolve().parents[2] / "docker" / "images.py"), "list"],
                            capture_output=True, text=True, check=True).stdout.split()


def evaluate(home, *extra):
    r = subprocess.run([command("duplexeval"), "--home", str(home), "eval", *ARGS, *extra],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr[-4000:]
    run = read_json(home / "runs" / "latest" / "run.json")
    return run, home / "store" / run["stages"][-1]["key"] / "metrics.json"


@pytest.fixture(scope="module")
def docker_run(tmp_path_factory):
    return evaluate(tmp_path_factory.mktemp("docker"), "--runtime", "docker")


def test_every_image_answers_help_without_network():
    from duplexeval.runtime_docker_stage import DockerRuntime
    rt = DockerRuntime()
    for c in COMPONENTS:
        r = subprocess.run(["docker", "run", "--rm", "--network", "none", rt.image(c), "--help"],
                           capture_output=True, text=True, env={**os.environ, "DOCKER_HOST": _host()})
        assert r.returncode == 0 and "Usage:" in r.stdout, (c, r.stderr)


def test_docker_run_equals_local_run_byte_for_byte_on_the_full_dataset(docker_run, tmp_path):
    """Every stage's outputs (their sha256 and sample statuses: the content digest) and metrics.json
    are the same bytes in both runtimes, on all of fdb-mini, with this machine's numeric
    environment (OPENBLAS_* and the like are passed into the containers)."""
    from duplexeval.store import content_digest
    run, docker_metrics = docker_run
    assert all(s["identity"].startswith("image:sha256:") for s in run["stages"])
    local_run, local_metrics = evaluate(tmp_path / "local", "--runtime", "local")
    docker_home, local_home = docker_metrics.parents[2], local_metrics.parents[2]
    for d, loc in zip(run["stages"], local_run["stages"]):
        dr = read_json(docker_home / "store" / d["key"] / "stage.json")
        lr = read_json(local_home / "store" / loc["key"] / "stage.json")
        assert content_digest(dr) == content_digest(lr), d["name"]
        assert dr["environment"]["numeric"] == lr["environment"]["numeric"], d["name"]
    n = sum(1 for s in read_json(docker_home / "store" / run["stages"][0]["key"] / "manifest.json")["samples"])
    assert n == 39   # fdb-mini: 12 pause, 12 turn-taking, 12 interruption, 3 backchannel
    assert docker_metrics.read_bytes() == local_metrics.read_bytes()


def test_containers_run_as_the_invoking_user(docker_run):
    run, metrics = docker_run
    home = metrics.parents[2]
    owners = {p.stat().st_uid for s in run["stages"] for p in (home / "store" / s["key"]).rglob("*")}
    assert owners == {os.getuid()}


def test_swapping_the_asr_image_reruns_asr_and_keys_downstream_by_content(docker_run, tmp_path):
    """A new asr-aligner image (another ID, another setting) re-runs the asr stage; what runs after
    it depends on the content it produced: the swapped image computes the same bytes, so judge and
    aggregate, whose keys hash the asr stage's content, are reused. An image made FROM the engine's
    that only adds a label is the same engine and keeps its identity (the label
    org.duplexeval.engine it inherits is trusted only over the engine's own layers and settings)."""
    import docker
    from duplexeval.runtime_docker_stage import DockerRuntime
    from duplexeval.store import content_digest
    from duplexeval_common import benchmarks
    run, metrics = docker_run
    home = metrics.parents[2]
    client = docker.DockerClient(base_url=_host())
    base = DockerRuntime().image("asr-aligner")
    relabelled, _ = client.images.build(fileobj=io.BytesIO(f"FROM {base}\nLABEL org.duplexeval.test=relabel\n".encode()),
                                        tag="duplexeval/asr-aligner:relabel-test", network_mode="none", rm=True)
    assert relabelled.id != client.images.get(base).id
    assert DockerRuntime({"asr-aligner": "duplexeval/asr-aligner:relabel-test"}).identity("asr-aligner") == \
        DockerRuntime().identity("asr-aligner")
    dockerfile = f"FROM {base}\nENV DUPLEXEVAL_SWAP_TEST=1\n".encode()
    swapped, _ = client.images.build(fileobj=io.BytesIO(dockerfile), tag="duplexeval/asr-aligner:swap-test",
                                     network_mode="none", rm=True)
    assert swapped.id != client.images.get(base).id
    again, _ = evaluate(home, "--runtime", "docker", "--image", "asr-aligner=duplexeval/asr-aligner:swap-test")
    cached = {s["name"]: s["cached"] for s in again["stages"]}
    assert cached == {"dataset": True, "runner": True, "asr": False, "judge": True, "aggregate": True}
    assert again["stages"][2]["identity"] == f"image:{swapped.id}+benchmark:fdb-v1:sha256:" \
        f"{benchmarks.get('fdb-v1').digest()}"
    assert again["stages"][2]["key"] != run["stages"][2]["key"]
    digests = [content_digest(read_json(home / "store" / r["stages"][2]["key"] / "stage.json")) for r in (run, again)]
    assert digests[0] == digests[1]


def _host() -> str:
    from duplexeval.runtime_docker import docker_host
    return docker_host()


def test_a_stage_past_its_timeout_is_killed_in_docker(tmp_path):
    r = subprocess.run([command("duplexeval"), "--home", str(tmp_path), "eval", "--runtime", "docker",
                        "--model", "silence", "--judge", "none", "--stage-timeout", "2"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "timed out after 2 s" in r.stderr, r.stderr[-2000:]
    run = read_json(tmp_path / "runs" / "latest" / "run.json")
    assert run["status"] == "failed" and "timed out" in run["stages"][0]["reason"]
