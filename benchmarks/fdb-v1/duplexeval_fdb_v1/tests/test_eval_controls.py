"""End to end: `duplexeval eval` on two samples per task with the control runners.

The control runners' metric values are known by construction: `silence`
never takes the turn; `fixed-latency` starts speaking 1.0 s after each end of
user speech, so its turn-taking latency is 1.0 s up to ASR word timing.
"""

import hashlib
import json
import subprocess
import time
from pathlib import Path

import pytest

from duplexeval_common.hashing import sha256_file
from duplexeval_common.jsonio import dumps, read_json

from tests.conftest import command

ASR_TOLERANCE_S = 0.15


def evaluate(home, model, judge="none"):
    t0 = time.monotonic()
    r = subprocess.run([command("duplexeval"), "--home", str(home), "eval", "--model", model,
                        "--limit", "2", "--judge", judge], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    run = read_json(home / "runs" / "latest" / "run.json")
    metrics = read_json(home / "store" / run["stages"][-1]["key"] / "metrics.json")
    return run, metrics["subsets"], r, time.monotonic() - t0


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    return tmp_path_factory.mktemp("home")


@pytest.fixture(scope="module")
def silence_run(home):
    return evaluate(home, "silence")


def test_silence_never_takes_the_turn(silence_run):
    run, subsets, r, _ = silence_run
    assert subsets["synthetic_pause_handling"]["official"]["tor"] == 0
    assert subsets["synthetic_turn_taking"]["official"]["tor"] == 0
    assert subsets["synthetic_user_interruption"]["official"]["tor"] == 0
    assert subsets["synthetic_pause_handling"]["unified"]["pause_intrusion_rate"]["value"] == 0
    assert subsets["synthetic_turn_taking"]["unified"]["no_response_rate"]["value"] == 1
    assert [s["name"] for s in run["stages"]] == ["dataset", "runner", "asr", "judge", "aggregate"]
    assert "synthetic_turn_taking" in r.stdout  # the metrics table


def test_fixed_latency_responds_after_one_second(home, silence_run):
    run, subsets, _, _ = evaluate(home, "fixed-latency")
    tt = subsets["synthetic_turn_taking"]
    assert tt["official"]["tor"] == 1
    assert abs(tt["official"]["latency"] - 1.0) < ASR_TOLERANCE_S
    assert abs(tt["unified"]["response_latency_s"]["value"] - 1.0) < ASR_TOLERANCE_S
    assert [s["cached"] for s in run["stages"]][0] is True  # the dataset is shared with the silence run


def test_fixed_latency_gives_the_bytes_of_before_the_packages(home, silence_run):
    """Benchmarks becoming packages changed no number: the scored files equal those the repository
    wrote before (golden/before_packages.json says the commit, the command and the one line of
    report.md that changed on purpose)."""
    run, _, _, _ = evaluate(home, "fixed-latency")   # cached: the run of the test above
    golden = json.loads((Path(__file__).parent / "golden" / "before_packages.json").read_text())
    out = home / "store" / run["stages"][-1]["key"]
    got = {n: sha256_file(out / n) for n in golden["files"]}
    # unified.json (golden "changed_on_purpose"): without the key added since and without the hash
    # of the synthesized audio, whose bytes depend on the machine; the numbers byte for byte
    uni = read_json(out / "unified.json")
    assert uni["vad"].pop("sequence_model")["file"] == "silero_vad_16k_sequence.onnx"
    assert len(uni["inputs"].pop("manifest_sha256")) == 64
    got.pop("unified.json")
    assert got == {n: h for n, h in golden["files"].items() if n != "unified.json"}
    assert hashlib.sha256(dumps(uni).encode()).hexdigest() == golden["unified_json_without_inputs_manifest"]


def test_second_eval_reuses_every_stage(home, silence_run):
    _, first, _, first_s = silence_run
    run, again, r, seconds = evaluate(home, "silence")
    assert all(s["cached"] for s in run["stages"])
    assert again == first
    assert "cached" in r.stderr


def test_runs_and_show_list_the_runs(home, silence_run):
    out = subprocess.run([command("duplexeval"), "--home", str(home), "runs"], capture_output=True, text=True)
    assert out.returncode == 0 and "silence" in out.stdout
    show = subprocess.run([command("duplexeval"), "--home", str(home), "show"], capture_output=True, text=True)
    assert show.returncode == 0 and "synthetic_pause_handling" in show.stdout


@pytest.mark.parametrize("asr", ["whisper-timestamped", "stable-ts"])
def test_eval_with_other_asr_backends_offline(tmp_path, asr):
    """`make eval ASR=whisper-timestamped|stable-ts` runs offline (tiny.en converted from the shipped
    CTranslate2 model) and gives the control's latency of 1.0 s up to word timing: on one
    turn-taking sample, the subset whose number is checked (the other subsets' samples went
    through the same backend code and cost it a minute of CPU)."""
    r = subprocess.run([command("duplexeval"), "--home", str(tmp_path), "eval", "--model", "fixed-latency",
                        "--subset", "synthetic_turn_taking", "--limit", "1", "--judge", "none", "--asr", asr],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    run = read_json(tmp_path / "runs" / "latest" / "run.json")
    tt = read_json(tmp_path / "store" / run["stages"][-1]["key"] / "metrics.json")["subsets"]["synthetic_turn_taking"]
    assert tt["official"]["tor"] == 1 and abs(tt["official"]["latency"] - 1.0) < 0.2
