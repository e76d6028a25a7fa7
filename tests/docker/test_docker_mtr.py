"""MTR-DuplexBench in the docker runtime: every stage, the turn-segmenter image's included, gives the
local runtime's bytes.

These tests need a Docker engine and the component images (`make docker-up images`); .ci/run
provides both and sets DUPLEXEVAL_DOCKER_TESTS=1.
"""

import subprocess

from duplexeval_common.jsonio import read_json

from ..conftest import command
from .conftest import needs_images

pytestmark = needs_images


# Three of mtr-mini's eleven subsets: the pause rounds (whose success always-talk fails by
# construction), the one that mixes every kind of event, and the dialogue-quality dialogue. The
# whole mini set in both runtimes took 617 s of a 2-core CI run; the stages' code is the same for
# every subset, and fdb-mini, the default dataset, runs whole in both runtimes
# (test_docker_runtime.py).
SUBSETS = ["pause_features", "mix_sipb_features", "synthetic_dialogue_quality"]


def test_mtr_docker_run_equals_local_run_on_three_subsets(tmp_path):
    """MTR-DuplexBench in both runtimes (always-talk, judge none): every stage, the turn-segmenter
    image's segment and rounds stages included, gives the same content digest, and metrics.json is
    the same bytes."""
    from duplexeval.store import content_digest
    args = ["--benchmark", "mtr", "--model", "always-talk", *(a for s in SUBSETS for a in ("--subset", s))]
    runs = {}
    for runtime in ("docker", "local"):
        home = tmp_path / runtime
        r = subprocess.run([command("duplexeval"), "--home", str(home), "eval", *args, "--runtime", runtime],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
        runs[runtime] = (home, read_json(home / "runs" / "latest" / "run.json"))
    (dh, drun), (lh, lrun) = runs["docker"], runs["local"]
    assert [s["name"] for s in drun["stages"]] == ["dataset", "dialogue-asr", "segment", "rounds", "runner", "asr",
                                                   "judge", "aggregate"]
    assert all(s["identity"].startswith("image:sha256:") for s in drun["stages"])
    for d, loc in zip(drun["stages"], lrun["stages"]):
        dr = read_json(dh / "store" / d["key"] / "stage.json")
        lr = read_json(lh / "store" / loc["key"] / "stage.json")
        assert content_digest(dr) == content_digest(lr), d["name"]
    m = [(h / "store" / run["stages"][-1]["key"] / "metrics.json").read_bytes() for h, run in (runs["docker"], runs["local"])]
    assert m[0] == m[1]
    assert read_json(dh / "store" / drun["stages"][-1]["key"] / "metrics.json")["subsets"]["pause_features"][
        "ranges"]["1-10"]["paper"]["success"]["value"] == 0.0
