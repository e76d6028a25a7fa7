"""MTR-DuplexBench in the docker runtime: every stage, the turn-segmenter image's included, gives the
local runtime's bytes.

These tests need a Docker engine and the component images (`make docker-up images`); .ci/run
provides both and sets DUPLEXEVAL_DOCKER_TESTS=1.
"""


from duplexeval_common.jsonio import read_json

from .conftest import assert_same_stages, eval_in_both_runtimes, final_metrics, needs_images

pytestmark = needs_images


# Two of mtr-mini's eleven subsets: the one that mixes every kind of event (pause rounds among
# them) and the dialogue-quality dialogue, which between them go through every stage. The whole
# mini set in both runtimes took 617 s of a 2-core CI run, three subsets 424 s; the stages' code
# is the same for every subset, and fdb-mini, the default dataset, runs whole in both runtimes
# (test_docker_runtime.py).
SUBSETS = ["mix_sipb_features", "synthetic_dialogue_quality"]


def test_mtr_docker_run_equals_local_run_on_two_subsets(tmp_path):
    """MTR-DuplexBench in both runtimes (always-talk, judge none): every stage, the turn-segmenter
    image's segment and rounds stages included, gives the same content digest, and metrics.json is
    the same bytes."""
    args = ["--benchmark", "mtr", "--model", "always-talk", *(a for s in SUBSETS for a in ("--subset", s))]
    runs = eval_in_both_runtimes(tmp_path, args)
    dh, drun = runs["docker"]
    assert [s["name"] for s in drun["stages"]] == ["dataset", "dialogue-asr", "segment", "rounds", "runner", "asr",
                                                   "judge", "aggregate"]
    assert_same_stages(runs)
    m = final_metrics(runs)
    assert m[0] == m[1]
    cell = read_json(dh / "store" / drun["stages"][-1]["key"] / "metrics.json")["subsets"]["mix_sipb_features"]
    assert cell["ranges"]["1-10"]["n"] == 10
