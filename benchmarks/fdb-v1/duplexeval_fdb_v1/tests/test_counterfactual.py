"""Counterfactual controls (counterfactual.py): each interruption sample rerun with the
interruption muted, each pause sample with its pauses cut out, by the runner core's paired
sessions, and the paired difference per sample and per subset.

By construction: `silence` never speaks and `always-talk` never stops, so the event changes
nothing (difference 0 everywhere); `fixed-latency` stops at the start of any user speech, so with a
phrase longer than the interruption it stopped in every exercised original and in none of the
muted twins (difference 1 in every exercised sample).
"""

import subprocess

import numpy as np
import pytest
import soundfile as sf

from duplexeval_common.jsonio import read_json, read_jsonl
from duplexeval_fdb_v1 import counterfactual as cf

from tests.conftest import command

SUBSETS = ["--subset", "synthetic_user_interruption", "--subset", "synthetic_pause_handling"]
LONG = ("Sure, I can help with that. Let me think about it for a moment, because there are several "
        "things to weigh here, and I would like to go through each of them carefully with you.")


def evaluate(home, model, *args):
    r = subprocess.run([command("duplexeval"), "--home", str(home), "eval", "--model", model, "--limit", "2",
                        "--judge", "none", "--benchmark-arg", "counterfactual=true", *SUBSETS, *args],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    run = read_json(home / "runs" / "latest" / "run.json")
    stages = {s["name"]: home / "store" / s["key"] for s in run["stages"]}
    return run, stages, read_json(stages["aggregate"] / "unified.json")["subsets"], \
        {r["sample_id"]: r for r in read_jsonl(stages["aggregate"] / "unified-samples.jsonl")}


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    return tmp_path_factory.mktemp("cf")


def test_twins_equal_the_original_outside_the_event(home):
    _, stages, _, _ = evaluate(home, "silence")
    ds = stages["dataset"] / "samples"
    for d in sorted((ds / "synthetic_user_interruption").iterdir()):
        a, sr = sf.read(str(d / "input.wav"), dtype="int16")
        b, sr2 = sf.read(str(d / "cf_input.wav"), dtype="int16")
        rec = read_json(d / "cf.json")
        (s, e), = rec["windows_samples"]
        assert sr == sr2 and len(a) == len(b) == rec["input_samples"] == rec["twin_samples"]
        assert np.array_equal(a[:s], b[:s]) and np.array_equal(a[e:], b[e:])
        assert not b[s:e].any() and a[s:e].any()
    for d in sorted((ds / "synthetic_pause_handling").iterdir()):
        a, _ = sf.read(str(d / "input.wav"), dtype="int16")
        b, _ = sf.read(str(d / "cf_input.wav"), dtype="int16")
        rec = read_json(d / "cf.json")
        keep = np.ones(len(a), bool)
        for s, e in rec["windows_samples"]:
            keep[s:e] = False
        assert np.array_equal(a[keep], b) and len(b) == rec["twin_samples"] < len(a)
    # the runner ran both sessions of each sample, and said which input made which output
    rd = stages["runner"] / "samples" / "synthetic_user_interruption"
    for d in sorted(rd.iterdir()):
        rec = read_json(d / "cf_runner.json")
        assert rec["session"]["name"] == "cf" and rec["session"]["input"] == "cf_input.wav"
        main = read_json(d / "runner.json")["session"]
        assert main["name"] == "main" and main["input"] == "input.wav" and main["input_sha256"] != \
            rec["session"]["input_sha256"]


@pytest.mark.parametrize("model", ["silence", "always-talk"])
def test_controls_that_ignore_the_user_show_no_difference(home, model):
    _, _, subsets, rows = evaluate(home, model)
    for sub in ("synthetic_user_interruption", "synthetic_pause_handling"):
        c = subsets[sub]["counterfactual"]
        assert c["n"] == 2 and c["mean_difference"] == 0 and c["interval"] == [0.0, 0.0], (model, sub, c)
        assert c["original_rate"] == c["twin_rate"]
    assert all(r["counterfactual"]["difference"] == 0 for r in rows.values())


def test_a_runner_that_stops_on_any_speech_differs_by_one_in_every_exercised_sample(home):
    _, stages, subsets, rows = evaluate(home, "fixed-latency", "--runner-arg", f"phrase={LONG}",
                                        "--runner-arg", "delay_s=0.3")
    c = subsets["synthetic_user_interruption"]["counterfactual"]
    inter = [r for k, r in rows.items() if k.startswith("synthetic_user_interruption/")]
    assert inter and all(r["exercised"] for r in inter)
    assert all(r["counterfactual"] == {"kind": "interruption_muted", "quantity": "stopped", "original": True,
                                       "twin": False, "difference": 1} for r in inter)
    assert c["mean_difference"] == 1 and c["interval"] == [1.0, 1.0] and c["original_rate"] == 1
    report = (stages["aggregate"] / "report.md").read_text()
    assert "counterfactual (interruption_muted): stopped 1.000 with the event, 0.000 without" in report


def test_off_by_default_and_the_stage_keys_do_not_move(home):
    """Without the option nothing of it is in any stage's settings, so runs made before it keep
    their keys (and their bytes)."""
    r = subprocess.run([command("duplexeval"), "--home", str(home), "eval", "--model", "silence", "--limit", "1",
                        "--judge", "none", "--subset", "synthetic_user_interruption"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    run = read_json(home / "runs" / "latest" / "run.json")
    for s in run["stages"]:
        cfg = read_json(home / "store" / "configs" / f"{s['key']}.json")
        assert "options" not in cfg and "sessions" not in cfg


def test_pause_twin_windows_by_construction():
    audio = np.arange(1, 101, dtype=np.int16)
    out, spans = cf.twin(audio, 10, "pauses_cut", [(2.0, 3.0), (5.0, 6.5)])
    assert spans == [(20, 30), (50, 65)]
    assert list(out) == list(range(1, 21)) + list(range(31, 51)) + list(range(66, 101))
    # pause 1 at 20 samples (2.0 s), pause 2 at 50 - 10 = 40 samples (4.0 s), lasting 1.0 and 1.5 s
    assert cf.cut_windows(spans, 10) == [(2_000_000, 3_000_000), (4_000_000, 5_500_000)]
    segs = [(4_200_000, 4_600_000, False)]
    rec = {"kind": "pauses_cut", "quantity": "onset_in_window", "sample_rate": 10, "windows_samples": spans}
    assert cf.sample_row(rec, [], segs) == {"kind": "pauses_cut", "quantity": "onset_in_window", "original": False,
                                            "twin": True, "difference": -1}
