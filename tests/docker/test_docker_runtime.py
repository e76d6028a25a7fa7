"""The docker runtime: same metrics as the local runtime, and swapping one image.

These tests need a Docker engine and the component images (`make docker-up
images`); .ci/run provides both and sets DUPLEXEVAL_DOCKER_TESTS=1.
"""

import io
import os
import subprocess

import pytest

from duplexeval_common.jsonio import read_json

from ..conftest import command

pytestmark = pytest.mark.skipif(os.environ.get("DUPLEXEVAL_DOCKER_TESTS") != "1",
                                reason="needs a Docker engine and the images (DUPLEXEVAL_DOCKER_TESTS=1)")

ARGS = ["--model", "fixed-latency", "--limit", "2", "--judge", "none"]
COMPONENTS = ["tts-synth", "duplex-runner", "asr-aligner", "judge", "aggregator"]


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


def test_docker_metrics_equal_local_metrics_byte_for_byte(docker_run, tmp_path):
    run, docker_metrics = docker_run
    assert all(s["identity"].startswith("image:sha256:") for s in run["stages"])
    _, local_metrics = evaluate(tmp_path / "local", "--runtime", "local")
    assert docker_metrics.read_bytes() == local_metrics.read_bytes()


def test_swapping_the_asr_image_reruns_asr_and_downstream_only(docker_run, tmp_path):
    import docker
    from duplexeval.runtime_docker_stage import DockerRuntime
    run, metrics = docker_run
    home = metrics.parents[2]
    client = docker.DockerClient(base_url=_host())
    base = DockerRuntime().image("asr-aligner")
    dockerfile = f"FROM {base}\nLABEL org.duplexeval.test=swap\n".encode()
    swapped, _ = client.images.build(fileobj=io.BytesIO(dockerfile), tag="duplexeval/asr-aligner:swap-test",
                                     network_mode="none", rm=True)
    assert swapped.id != client.images.get(base).id
    again, _ = evaluate(home, "--runtime", "docker", "--image", "asr-aligner=duplexeval/asr-aligner:swap-test")
    cached = {s["name"]: s["cached"] for s in again["stages"]}
    assert cached == {"dataset": True, "runner": True, "asr": False, "judge": False, "aggregate": False}
    assert again["stages"][2]["identity"] == f"image:{swapped.id}"


def _host() -> str:
    from duplexeval.runtime_docker import docker_host
    return docker_host()
