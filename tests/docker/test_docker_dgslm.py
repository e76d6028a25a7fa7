"""dGSLM in both runtimes: the tiny random-weight model (MODEL_DIR=tiny:0) on one sample of every
Full-Duplex-Bench v1.0 task of fdb-mini gives the same bytes in the runner image as in its own local
environment (.venvs/runner-dgslm), each sample in its task's mode.

The lockstep runner reads no clock and samples with the stage's seed, so every stage's outputs (their
sha256 and statuses: the content digest) and metrics.json must be equal; the numeric environment
(OPENBLAS_* and the like) is passed into the container. Needs the images (`make docker-up images`;
.ci/run provides both and sets DUPLEXEVAL_DOCKER_TESTS=1).
"""

import pytest

from duplexeval_common.jsonio import read_json

from ..conftest import dx_model, stage_dir
from .conftest import needs_images

pytestmark = [needs_images, pytest.mark.own_env("runner-dgslm")]

ARGS = ["eval", "--model", "dgslm", "--dataset", "fdb-mini", "--judge", "none", "--limit", "1",
        "--runner-arg", "threads=1", "--runner-arg", "hubert_context=10", "--runner-arg", "vocoder_context=8"]
MODES = {"synthetic_pause_handling": "teacher_force", "synthetic_backchannel": "teacher_force",
         "synthetic_turn_taking": "turn_taking", "synthetic_user_interruption": "interruption"}


def evaluate(home, runtime: str) -> dict:
    r = dx_model(home, *ARGS, "--runtime", runtime, env={"MODEL_DIR": "tiny:0"}, timeout=1500)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    return read_json(home / "runs" / "latest" / "run.json")


def test_tiny_dgslm_gives_the_same_bytes_in_docker_as_locally_on_every_fdb_task(tmp_path):
    from duplexeval.store import content_digest
    docker_home, local_home = tmp_path / "docker", tmp_path / "local"
    docker_run, local_run = evaluate(docker_home, "docker"), evaluate(local_home, "local")
    (runner,) = [s for s in docker_run["stages"] if s["name"] == "runner"]
    assert runner["identity"].startswith("image:sha256:") and runner["component"] == "runner-dgslm"
    assert [s["name"] for s in docker_run["stages"]] == [s["name"] for s in local_run["stages"]]
    for d, loc in zip(docker_run["stages"], local_run["stages"]):
        dr = read_json(stage_dir(docker_home, docker_run, d["name"]) / "stage.json")
        lr = read_json(stage_dir(local_home, local_run, loc["name"]) / "stage.json")
        assert content_digest(dr) == content_digest(lr), d["name"]
        assert dr["environment"]["numeric"] == lr["environment"]["numeric"], d["name"]
    samples = stage_dir(docker_home, docker_run, "runner") / "samples"
    keys = sorted(read_json(stage_dir(docker_home, docker_run, "runner") / "stage.json")["samples"])
    assert sorted(k.split("/")[0] for k in keys) == sorted(MODES)
    for key in keys:
        rec = read_json(samples / key / "runner.json")
        assert rec["stats"]["mode"] == MODES[key.split("/")[0]], key
        local_out = stage_dir(local_home, local_run, "runner") / "samples" / key / "output.wav"
        assert (samples / key / "output.wav").read_bytes() == local_out.read_bytes(), key
    metrics = [stage_dir(h, r, "aggregate") / "metrics.json" for h, r in ((docker_home, docker_run),
                                                                         (local_home, local_run))]
    assert metrics[0].read_bytes() == metrics[1].read_bytes()
