"""Rescoring archives in the docker runtime: the aggregator image, network off, byte for byte.

- the archive of a local run, rescored with --runtime docker, gives the archived bytes;
- the archive of a docker run, rescored with --runtime docker and with --runtime local, too;
- --aggregator-image names the image the stage ran with (rescore.json's identity is its ID).

These tests need a Docker engine and the component images (`make docker-up images`); .ci/run
provides both and sets DUPLEXEVAL_DOCKER_TESTS=1.
"""

import os
import subprocess

import pytest

from duplexeval_common.jsonio import read_json

from ..conftest import command

pytestmark = pytest.mark.skipif(os.environ.get("DUPLEXEVAL_DOCKER_TESTS") != "1",
                                reason="needs a Docker engine and the images (DUPLEXEVAL_DOCKER_TESTS=1)")

ARGS = ["--model", "fixed-latency", "--judge", "none", "--limit", "1"]
COMPARED = ("metrics.json", "report.md", "unified-samples.jsonl", "unified.json")  # sorted, as rescore lists them


def dx(home, *args):
    return subprocess.run([command("duplexeval"), "--home", str(home), *args], capture_output=True, text=True,
                          env={**os.environ, "DUPLEXEVAL_CACHE": str(home / "cache")}, timeout=1800)


def archived_run(home, runtime):
    r = dx(home, "eval", *ARGS, "--runtime", runtime)
    assert r.returncode == 0, r.stderr[-3000:]
    run = read_json(home / "runs" / "latest" / "run.json")
    r = dx(home, "archive", "-o", str(home / "run.tar.zst"))
    assert r.returncode == 0, r.stderr
    return run, home / "run.tar.zst"


def rescored(home, run, archive, out, *extra):
    r = dx(home, "rescore", str(archive), "-o", str(out), *extra)
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    assert r.stdout.splitlines()[0] == "identical: " + " ".join(COMPARED)
    # the docker runtime mounts the extracted folder: it was made beside the output, and removed
    assert not list(out.parent.glob("duplexeval-archive-*"))
    agg = home / "store" / run["stages"][-1]["key"]
    for name in COMPARED:
        assert (out / name).read_bytes() == (agg / name).read_bytes(), name
    return read_json(out / "rescore.json")


@pytest.fixture(scope="module")
def local_archive(tmp_path_factory):
    home = tmp_path_factory.mktemp("local")
    return (home, *archived_run(home, "local"))


@pytest.fixture(scope="module")
def docker_archive(tmp_path_factory):
    home = tmp_path_factory.mktemp("docker")
    return (home, *archived_run(home, "docker"))


def test_local_archive_rescored_in_docker(local_archive, tmp_path):
    home, run, archive = local_archive
    rec = rescored(home, run, archive, tmp_path / "out", "--runtime", "docker")
    assert rec["identity"].startswith("image:sha256:")


def test_docker_archive_rescored_in_docker_and_locally(docker_archive, tmp_path):
    home, run, archive = docker_archive
    env = read_json_member(archive, "environment.json")
    assert all(s["image_id"].startswith("sha256:") for s in env["stages"].values())
    rec = rescored(home, run, archive, tmp_path / "docker", "--runtime", "docker")
    assert rec["identity"] == f"image:{env['stages']['aggregate']['image_id']}"
    rescored(home, run, archive, tmp_path / "local", "--runtime", "local")


def test_aggregator_image_is_the_one_used(docker_archive, tmp_path):
    from duplexeval.runtime_docker_stage import DockerRuntime
    home, run, archive = docker_archive
    image = DockerRuntime().image("aggregator")
    rec = rescored(home, run, archive, tmp_path / "out", "--runtime", "docker", "--aggregator-image", image)
    from duplexeval_common import benchmarks
    assert rec["identity"] == DockerRuntime({"aggregator": image}).identity("aggregator") + \
        f"+benchmark:fdb-v1:sha256:{benchmarks.get('fdb-v1').digest()}"
    r = dx(home, "rescore", str(archive), "--runtime", "docker", "--aggregator-image", "duplexeval/no-such:0",
           "-o", str(tmp_path / "none"))
    assert r.returncode == 2 and "image duplexeval/no-such:0 not found" in r.stderr
    r = dx(home, "rescore", str(archive), "--aggregator-image", image, "-o", str(tmp_path / "none"))
    assert r.returncode == 2 and "--aggregator-image applies to the docker runtime" in r.stderr
    assert not (tmp_path / "none").exists()


def read_json_member(archive, name):
    import json

    from duplexeval.archive import extracted
    with extracted(archive) as root:
        return json.loads((root / name).read_text())
