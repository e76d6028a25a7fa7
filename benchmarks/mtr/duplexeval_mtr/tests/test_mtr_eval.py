"""End to end: `duplexeval eval --benchmark mtr` on mtr-mini, offline.

The control runners' values are known by construction: `silence` never takes the turn (smooth,
interruption and background success 0; pause success 1, in both the paper's and the released
code's column), `always-talk` talks over every pause (pause success 0). The dialogue-quality
dialogue goes through the dialogue ASR, the offline segmenter and the rounds stage; its user
turns are known from the script (dialogue.json). The cascade runs teacher-forced rounds and the
offline local-llm judge judges its instruction-following rounds.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from duplexeval_common.hashing import sha256_file
from duplexeval_common.jsonio import read_json, read_jsonl

from tests.conftest import command

RANGES = ("1", "1-2", "1-5", "1-10")


def evaluate(home, *args):
    r = subprocess.run([command("duplexeval"), "--home", str(home), "eval", "--benchmark", "mtr", *args],
                       capture_output=True, text=True)
    run = read_json(home / "runs" / "latest" / "run.json")
    stages = {s["name"]: home / "store" / s["key"] for s in run["stages"]}
    metrics = read_json(stages["aggregate"] / "metrics.json") if "aggregate" in stages else None
    return r, run, stages, metrics


def success(metrics, subset, rng="1-10"):
    cell = metrics["subsets"][subset]["ranges"][rng]
    return cell["paper"]["success"]["value"], cell["code"]["success"]["value"], cell["n"], cell["declared"]


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    return tmp_path_factory.mktemp("mtr-home")


@pytest.fixture(scope="module")
def silence(home):
    return evaluate(home, "--model", "silence")


def test_silence_on_the_whole_mini_set(silence):
    r, run, stages, metrics = silence
    assert r.returncode == 0, r.stdout + r.stderr
    assert run["benchmark"] == "mtr" and run["dataset"] == "mtr-mini" and run["judge"] == "none"
    assert list(stages) == ["dataset", "dialogue-asr", "segment", "rounds", "runner", "asr", "judge", "aggregate"]
    assert run["status"] == "ok" and run["missing"] == {} and metrics["missing"] == [] and metrics["invalid"] == []
    for subset in ("smooth_features", "interruption_features", "background_features", "mix_s_features",
                   "mix_si_features", "mix_sip_features", "mix_sipb_features"):
        for rng in RANGES:
            paper, code, n, declared = success(metrics, subset, rng)
            assert (paper, code) == (0.0, 0.0), (subset, rng)
            assert n == declared == int(rng.split("-")[-1])
    for rng in RANGES:
        assert success(metrics, "pause_features", rng)[:2] == (1.0, 1.0)
    assert len(metrics["subsets"]["pause_features"]["per_round"]) == 10
    for subset in ("smooth_instruction_following", "smooth_safety", "synthetic_dialogue_quality"):
        cell = metrics["subsets"][subset]["ranges"]["1"]
        assert cell["judgements"] == {"ok": 0, "unparsed": 0, "error": 0, "skipped": 1}, subset
    # the console: one line per subset over rounds 1, 1-2, 1-5, 1-10, and the run's summary
    assert "pause_features" in r.stdout and "1.00/1.00" in r.stdout and "not judged" in r.stdout
    assert "note: judge none" in r.stdout
    assert run["summary"]["pause_features"]["ranges"]["1-10"]["paper"]["success"] == 1.0


def test_silence_gives_the_bytes_of_before_the_packages(silence):
    """Benchmarks becoming packages changed no number: the scored files equal those the repository
    wrote before (golden/before_packages.json says the commit, the command and the one sentence of
    report.md that changed on purpose)."""
    _, _, stages, _ = silence
    golden = json.loads((Path(__file__).parent / "golden" / "before_packages.json").read_text())
    assert {n: sha256_file(stages["aggregate"] / n) for n in golden["files"]} == golden["files"]


def test_interruptions_outlast_tau(silence):
    """Every interruption of the built mtr-mini lasts over tau = 2 s plus 2 s, so the paper's window
    [start + tau, end] is never empty (benchmarks/mtr/datasets/mtr-synth/generate.py, MIN_INTERRUPT_WORDS)."""
    _, _, stages, _ = silence
    spans = []
    for p in (stages["dataset"] / "samples").glob("*/*/round.json"):
        ts = read_json(p)["encoding"]["timestamps"]
        if "interruption_start" in ts:
            spans.append(ts["interruption_end"] - ts["interruption_start"])
    assert len(spans) > 20 and min(spans) > 4.0


def test_round_outputs_hold_the_ground_truth_history(silence):
    """output.wav = history.wav before start_s (the GT) and the model (silence) after."""
    _, _, stages, _ = silence
    for subset, sid in (("interruption_features", "interruption-000-r05"),
                        ("synthetic_dialogue_quality", "dq-000-r03")):
        src = stages["rounds"] if subset.endswith("dialogue_quality") else stages["dataset"]
        rnd = read_json(src / "samples" / subset / sid / "round.json")
        hist, sr = sf.read(src / "samples" / subset / sid / "history.wav", dtype="int16")
        inp, _ = sf.read(src / "samples" / subset / sid / "input.wav", dtype="int16")
        out, sr_out = sf.read(stages["runner"] / "samples" / subset / sid / "output.wav", dtype="int16")
        k = round(rnd["start_s"] * sr)
        assert sr_out == sr and len(out) == len(inp) == len(hist) == round(rnd["end_s"] * sr)
        assert np.abs(hist[:k]).max() > 1000 and not hist[k:].any()
        assert np.abs(out[:k].astype(int) - hist[:k].astype(int)).max() <= 1  # int16 round trip
        assert not out[k:].any()
        for a, b in rnd["muted"]:
            assert not inp[round(a * sr):round(b * sr)].any()
        runner = read_json(stages["runner"] / "samples" / subset / sid / "runner.json")
        assert runner["round"]["history"] == "teacher-forced" and runner["round"]["start_s"] == rnd["start_s"]


def test_the_segmenter_finds_the_scripted_user_turns(silence):
    """The dialogue-quality dialogue's rounds come from its segmentation: one per scripted user
    turn (backchannels excepted), starts and ends within 0.1 s (the offline rule gap-v2 ends a
    turn from the VAD's probabilities, not at Silero's padded segment end: benchmarks/mtr/README.md,
    "Turn segmentation")."""
    _, _, stages, metrics = silence
    script = read_json(stages["dataset"] / "samples/synthetic_dialogue_quality/dq-000/dialogue.json")
    users = [ln for ln in script["lines"] if ln["role"] == "user" and not ln.get("backchannel")]
    seg = read_json(stages["segment"] / "samples/synthetic_dialogue_quality/dq-000/segmentation.json")
    assert len(seg["turns"]) == len(users) == metrics["subsets"]["synthetic_dialogue_quality"]["rounds_declared"]
    for u, t in zip(users, seg["turns"]):
        assert abs(t["start"] - u["start"]) <= 0.1 and abs(t["end"] - u["end"]) <= 0.1


def test_rerun_is_cached_and_the_tree_rescores_to_the_same_bytes(home, silence, tmp_path):
    _, _, stages, _ = silence
    r, run, _, _ = evaluate(home, "--model", "silence")
    assert r.returncode == 0 and all(s["cached"] for s in run["stages"])
    out = tmp_path / "rescored"
    s = subprocess.run([command("aggregator"), "score", "--benchmark", "mtr", "--tree", str(stages["aggregate"] / "tree"), "--out", str(out)],
                       capture_output=True, text=True)
    assert s.returncode == 0, s.stderr
    for name in ("metrics.json", "rounds.jsonl", "report.md"):
        assert (out / name).read_bytes() == (stages["aggregate"] / name).read_bytes(), name


def test_always_talk_fails_every_pause(home, silence):
    # pause_features alone: always-talk's ten smooth-feature rounds (as many again of ASR over
    # continuous speech) showed nothing the silence run and these do not
    r, run, stages, metrics = evaluate(home, "--model", "always-talk", "--subset", "pause_features")
    assert r.returncode == 0, r.stdout + r.stderr
    for rng in RANGES:
        assert success(metrics, "pause_features", rng)[:2] == (0.0, 0.0)
    rows = [row for row in read_jsonl(stages["aggregate"] / "rounds.jsonl")
            if row["dialogue"].startswith("pause_features/")]
    assert len(rows) == 10 and all(row["observed"] for row in rows)


def test_a_wrong_dataset_or_option_is_one_line(home):
    r = subprocess.run([command("duplexeval"), "--home", str(home), "eval", "--benchmark", "mtr", "--dataset",
                        "fdb-mini", "--model", "silence"], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.strip().splitlines()[-1].startswith("error: dataset 'fdb-mini' belongs")
    # fdb-v1's official_revision (once --official-revision) is a benchmark setting of fdb-v1, not mtr's:
    # refused before anything runs, in one line that names the setting and mtr's (none)
    from duplexeval_common import benchmarks
    assert "official_revision" in [o.name for o in benchmarks.get("fdb-v1").options]
    r = subprocess.run([command("duplexeval"), "--home", str(home), "eval", "--benchmark", "mtr",
                        "--benchmark-arg", "official_revision=d7336bd", "--model", "silence"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [
        "error: benchmark mtr has no setting official_revision (known: none)"], r.stderr


def test_cascade_teacher_forced_with_the_offline_judge(home, silence):
    """The real cascade on the instruction-following dialogue (10 rounds), teacher-forced and
    judged by SmolLM2 (local-llm): every round observed and judged, the ground-truth history in the
    LLM's context. (The feature subsets' scoring of the cascade's rounds is the same code as the
    controls', tested above; a second dialogue cost 75 s of CPU.)"""
    r, run, stages, metrics = evaluate(home, "--model", "cascade", "--judge", "local-llm",
                                       "--subset", "smooth_instruction_following")
    assert r.returncode == 0, r.stdout + r.stderr
    assert metrics["missing"] == []
    cell = metrics["subsets"]["smooth_instruction_following"]["ranges"]["1-10"]
    assert cell["n"] == 10 and cell["judgements"]["ok"] + cell["judgements"]["unparsed"] == 10
    key = "samples/smooth_instruction_following/if-smooth-000-r04"
    rj = read_json(stages["runner"] / key / "runner.json")
    assert rj["round"]["history"] == "teacher-forced"
    events = read_jsonl(stages["runner"] / key / "events.jsonl")
    context = next(e for e in events if e["type"] == "llm_context")["messages"]
    history = read_json(stages["dataset"] / key / "round.json")["history"]
    said = " ".join(m["content"] for m in context)
    assert len(history) == 7 and all(h["text"] in said for h in history)  # the GT history, in the LLM's context
    judge = read_json(stages["judge"] / "judge.json")
    assert judge["official"] is False and judge["judge"] == "local-llm"
    assert "not official" in r.stdout


def test_an_mtr_run_archives_and_rescores_to_the_same_bytes(home, silence, tmp_path):
    archive = tmp_path / "mtr.tar.zst"
    run_id = silence[1]["run_id"]
    for args in (["archive", run_id, "-o", str(archive)], ["verify", str(archive)]):
        r = subprocess.run([command("duplexeval"), "--home", str(home), *args], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    r = subprocess.run([command("duplexeval"), "--home", str(home), "rescore", str(archive), "-o",
                        str(tmp_path / "rescored")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == "identical: metrics.json report.md rounds.jsonl"
