"""aggregator score (fdb-v1) and compare end to end on a small five-subset tree with real Silero VAD."""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from jsonschema import Draft202012Validator

from duplexeval_aggregator.cli import main

from .helpers import interrupt_ann, pause_ann, sample_dir, turn_ann

SCHEMAS = Path(__file__).resolve().parents[1] / "schemas"  # this benchmark's own


def place(T, sr, parts):
    a = np.zeros(int(round(T * 16000)) * sr // 16000, np.float32)
    for t, clip in parts:
        i = int(round(t * sr))
        a[i:i + len(clip)] += clip[: len(a) - i]
    return a


@pytest.fixture(scope="module")
def tree(tmp_path_factory, speak):
    root = tmp_path_factory.mktemp("tree")
    answer = speak("Yes, I think that is right, and here is why.", 24000)
    reply = speak("Okay, sure.", 24000)
    yeah = speak("Yeah.", 16000)
    # interruption 0: speaking at S, silent at R, a reply 0.6 s after R
    start, end = 2.0, 2.0 + len(answer) / 24000
    S, R = round(start + 0.4, 3), round(end + 1.0, 3)
    out = place(12.0, 24000, [(start, answer), (R + 0.6, reply)])
    sample_dir(root, "synthetic_user_interruption", "0", T=12.0, output_audio=out, output_sr=24000,
               words=[("Okay,", R + 0.6, R + 0.9), ("sure,", R + 0.95, R + 1.2), ("fine.", R + 1.3, R + 1.7)], annotation=interrupt_ann(S, R))
    sample_dir(root, "synthetic_user_interruption", "1", T=12.0, output_sr=24000, words=[],
               annotation=interrupt_ann(S, R))
    (root / "synthetic_user_interruption" / "0" / "rating.json").write_text(
        json.dumps({"analysis": "fine", "rating": 4}))
    # backchannel: short "yeah"s, one silent sample
    sample_dir(root, "icc_backchannel", "0", T=8.0, output_audio=place(8.0, 16000, [(2.0, yeah), (5.0, yeah)]),
               words=[("Yeah.", 2.05, 2.3), ("Yeah.", 5.05, 5.3)])
    sample_dir(root, "icc_backchannel", "1", T=8.0, words=[])
    # pause and turn-taking: words only (output.wav silent)
    sample_dir(root, "candor_pause_handling", "0", words=[(1.0, 1.4), (3.0, 3.5)], annotation=pause_ann((3, 4)))
    sample_dir(root, "candor_pause_handling", "1", words=[(5, 6)], annotation=pause_ann((3, 4)),
               skip=("output.wav",))
    sample_dir(root, "synthetic_pause_handling", "0", words=[], annotation=pause_ann((2, 3), (5, 6)))
    sample_dir(root, "candor_turn_taking", "0", words=[(2.5, 3.0), (3.1, 3.9)], annotation=turn_ann(2.0))
    sample_dir(root, "candor_turn_taking", "1", words=[(1.5, 1.7)], annotation=turn_ann(2.0))
    gt = {k: list(np.full(41, 1 / 41)) for k in ("0", "1")}
    (root / "gt.json").write_text(json.dumps(gt))
    return root


def run(tree, out, *extra):
    res = CliRunner().invoke(main, ["score", "--benchmark", "fdb-v1", "--tree", str(tree), "--out", str(out), "--icc-gt",
                                    str(tree / "gt.json"), "--jobs", "1", *extra])
    assert res.exit_code == 0, res.output
    return res


def files(out):
    return {n: (out / n).read_bytes() for n in ("metrics.json", "unified.json", "unified-samples.jsonl")}


@pytest.fixture(scope="module")
def scored(tree, tmp_path_factory):
    out = tmp_path_factory.mktemp("out")
    res = run(tree, out, "--cache-dir", str(out / "cache"))
    return out, res.output


def validator(name):
    return Draft202012Validator(json.loads((SCHEMAS / f"{name}.schema.json").read_text()))


def test_writes_three_valid_files(scored):
    out, _ = scored
    metrics = json.loads((out / "metrics.json").read_text())
    uni = json.loads((out / "unified.json").read_text())
    rows = [json.loads(x) for x in (out / "unified-samples.jsonl").read_text().splitlines()]
    validator("metrics").validate(metrics)
    validator("unified").validate(uni)
    for r in rows:
        validator("unified-sample").validate(r)
    assert metrics["definitions"] == uni["definitions"] == "fdb-v1.0-unified-4"
    assert set(metrics["subsets"]) == {"candor_pause_handling", "synthetic_pause_handling",
                                       "candor_turn_taking", "icc_backchannel", "synthetic_user_interruption"}
    assert uni["vad"]["version"] == "6.2.3" and len(uni["vad"]["model_sha256"]) == 64
    assert uni["vad"]["unified"]["speech_pad_ms"] == 0
    assert len(rows) == 7  # backchannel has no rows


def test_official_and_unified_values(scored):
    out, _ = scored
    m = json.loads((out / "metrics.json").read_text())["subsets"]
    assert m["candor_pause_handling"]["official"] == {"tor": 1.0}  # both have output.json: both count
    assert m["candor_pause_handling"]["n"] == 2 and m["candor_pause_handling"]["coverage"] == 0.5
    pi = m["candor_pause_handling"]["unified"]["pause_intrusion_rate"]
    assert (pi["count"], pi["n"], pi["selected_bounds"]) == (1, 1, [0.5, 1.0])
    tt = m["candor_turn_taking"]
    assert tt["official"] == {"tor": 0.5, "latency": 0.5}
    assert tt["unified"]["early_start_rate"]["count"] == 1
    assert tt["unified"]["response_latency_s"]["value"] == 0.5
    ui = m["synthetic_user_interruption"]
    # no judge.json, but the tree holds rating.json files (as upstream's example data does): read
    assert ui["official"]["tor"] == 0.5 and ui["official"]["rating"] == 4.0
    assert ui["counts"]["outcomes"] == {"not_exercised": 1, "speaking_at_end": 0, "response": 1,
                                        "no_response": 0}
    assert ui["unified"]["response_latency_s"]["value"] == pytest.approx(0.6, abs=1e-6)
    bc = m["icc_backchannel"]
    assert bc["unified"] == {} and bc["official"]["tor"] == 0.0
    assert bc["official"]["freq"] == pytest.approx((2 / 8 + 0) / 2)
    assert 0 < bc["official"]["jsd"] < 1


def test_report_prints_values_bounds_and_official(scored):
    _, text = scored
    assert "== synthetic_user_interruption (user_interruption)" in text
    assert "official @ d7336bd" in text and "bounds [" in text and "p90" in text
    # both columns side by side: the official number left of "|", a unified metric with its
    # 95% interval right of it
    row = next(x for x in text.splitlines() if x.split("|")[0].split()[:1] == ["latency"]
               and "response_rate_1s" in x)
    assert re.search(r"response_rate_1s +\d\.\d{4}  \[\d\.\d{4}, \d\.\d{4}\]", row.split("|")[1])
    assert "ineligible: missing:output.wav 1" in text


def test_rerun_writes_the_same_bytes(scored, tree, tmp_path):
    out, _ = scored
    before = files(out)
    run(tree, out, "--cache-dir", str(out / "cache"))              # warm cache, same folder
    assert files(out) == before
    run(tree, tmp_path / "o2", "--cache-dir", str(tmp_path / "c2"))  # cold cache elsewhere
    assert files(tmp_path / "o2") == before


def test_judge_label_and_rating(tree, tmp_path):
    t = tmp_path / "t"
    shutil.copytree(tree, t)
    (t / "judge.json").write_text(json.dumps({"judge": "llm", "model": "smollm2", "official": False}))
    res = run(t, tmp_path / "o", "--cache-dir", str(tmp_path / "c"))
    m = json.loads((tmp_path / "o" / "metrics.json").read_text())["subsets"]
    assert m["synthetic_user_interruption"]["official"]["rating"] == 4.0
    assert re.search(r"rating\[smollm2\] +4\.0000 \|", res.output)
    assert "exercised 1, rating smollm2" in res.output


def test_bad_input_exits_2_with_one_line_and_writes_nothing(tree, tmp_path):
    t = tmp_path / "t"
    shutil.copytree(tree, t, ignore=shutil.ignore_patterns("icc_backchannel", "*user_interruption"))
    (t / "candor_turn_taking" / "1" / "turn_taking.json").write_text(json.dumps(turn_ann(99.0)))
    out = tmp_path / "o"
    agg = str(Path(sys.executable).parent / "aggregator")
    p = subprocess.run([agg, "score", "--benchmark", "fdb-v1", "--tree", str(t), "--out", str(out)], capture_output=True, text=True)
    assert p.returncode == 2
    assert p.stderr == ("error: candor_turn_taking/1: turn end E at 99.000000 s is outside the window "
                        "[0, 10.000000]\n")
    assert not out.exists() or not any(out.glob("*.json*"))


def test_compare(scored, tree, tmp_path):
    out, _ = scored
    t = tmp_path / "t"
    shutil.copytree(tree, t)
    (t / "candor_turn_taking" / "1" / "output.json").write_text(json.dumps(
        {"text": "hi", "chunks": [{"text": "hi", "timestamp": [2.2, 2.5]}]}))
    (t / "candor_pause_handling" / "0" / "output.wav").unlink()
    run(t, tmp_path / "b", "--cache-dir", str(out / "cache"))
    res = CliRunner().invoke(main, ["compare", str(out), str(tmp_path / "b"), "--json-out",
                                    str(tmp_path / "cmp.json")])
    assert res.exit_code == 0, res.output
    c = json.loads((tmp_path / "cmp.json").read_text())["subsets"]
    tt = c["candor_turn_taking"]["metrics"]
    assert tt["early_start_rate"]["diff"] == -0.5 and tt["response_rate_1s"]["diff"] == 0.5
    assert tt["early_start_rate"]["interval"][0] <= -0.5 <= tt["early_start_rate"]["interval"][1]
    assert c["candor_pause_handling"]["pairs"]["eligible_in_both"] == 0
    assert c["candor_pause_handling"]["pairs"]["eligible_in_neither"] == 1
    ui = c["synthetic_user_interruption"]["pairs"]
    assert (ui["exercised_in_both"], ui["exercised_only_a"], ui["exercised_in_neither"]) == (1, 0, 1)
    assert "paired comparison" in res.output


def test_compare_refuses_an_unscored_folder(tmp_path):
    res = CliRunner().invoke(main, ["compare", str(tmp_path), str(tmp_path)])
    assert res.exit_code == 2 and "no unified-samples.jsonl" in res.output
