"""Scoring what can be scored (invalid samples excluded with a reason), the per-user VAD cache,
and the side-by-side report."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from duplexeval_aggregator.cli import main
from duplexeval_common.errors import InputError
from duplexeval_aggregator.pipeline_stage import make_stage
from duplexeval_fdb_v1.score.report import console_rows, render
from duplexeval_fdb_v1.score.score import build
from duplexeval_fdb_v1.score.tree import WORD_END_TOLERANCE_S
from duplexeval_common.vadcache import namespace
from duplexeval_common.cache import cache_namespace, private_dir, user_cache_dir
from duplexeval_fdb_v1.schemas import SCHEMAS

from .helpers import interrupt_ann, pause_ann, sample_dir, turn_ann, wav

AGGREGATOR = str(Path(sys.executable).parent / "aggregator")
BEFORE_START = ("output.json word 0 ends (1.000000 s) before it starts (2.000000 s)")
PAST_T = ("output.json word 0 ends at 12.000000 s, more than 0.5 s past the window end "
          "T = 10.000000 s")


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    """Never touch the real user cache."""
    monkeypatch.setenv("DUPLEXEVAL_CACHE", str(tmp_path / "user-cache"))
    return tmp_path / "user-cache"



def bad_tree(root: Path) -> Path:
    """Pause: 0 fine (official TOR 1), 1 a word ending before it starts (official TOR 0 if it
    were read), 2 a word ending 2 s past T; turn-taking: one fine sample."""
    sample_dir(root, "candor_pause_handling", "0", words=[(1.0, 1.4), (3.0, 3.5)], annotation=pause_ann((3, 4)))
    sample_dir(root, "candor_pause_handling", "1", words=[(2.0, 1.0)], annotation=pause_ann((3, 4)))
    sample_dir(root, "candor_pause_handling", "2", words=[(9.0, 12.0)], annotation=pause_ann((3, 4)))
    sample_dir(root, "candor_turn_taking", "0", words=[(2.5, 3.0)], annotation=turn_ann(2.0))
    return root


def read_out(out: Path):
    metrics = json.loads((out / "metrics.json").read_text())
    uni = json.loads((out / "unified.json").read_text())
    rows = {r["sample_id"]: r for r in map(json.loads, (out / "unified-samples.jsonl").read_text().splitlines())}
    SCHEMAS.validate("metrics", metrics)
    SCHEMAS.validate("unified", uni)
    for r in rows.values():
        SCHEMAS.validate("unified-sample", r)
    return metrics, uni, rows


def assert_partial(out: Path) -> None:
    metrics, uni, rows = read_out(out)
    ph = metrics["subsets"]["candor_pause_handling"]
    assert ph["n"] == 3 and ph["counts"]["eligible"] == 1 and ph["coverage"] == pytest.approx(1 / 3)
    assert ph["counts"]["ineligible_reasons"] == {"invalid:word-end-before-start": 1,
                                                  "invalid:word-end-past-window": 1}
    assert ph["official"] == {"tor": 1.0}  # the invalid samples are not read by the official rule
    pi = ph["unified"]["pause_intrusion_rate"]
    assert (pi["count"], pi["n"], pi["selected_bounds"]) == (1, 1, [1 / 3, 1.0])
    assert rows["candor_pause_handling/0"]["eligible"] is True
    r1, r2 = rows["candor_pause_handling/1"], rows["candor_pause_handling/2"]
    assert (r1["eligible"], r1["reasons"], r1["problem"]) == (False, ["invalid:word-end-before-start"],
                                                              BEFORE_START)
    assert (r2["eligible"], r2["reasons"], r2["problem"]) == (False, ["invalid:word-end-past-window"], PAST_T)
    assert uni["subsets"]["candor_pause_handling"]["invalid"] == [
        {"sample_id": "candor_pause_handling/1", "reason": "invalid:word-end-before-start", "problem": BEFORE_START},
        {"sample_id": "candor_pause_handling/2", "reason": "invalid:word-end-past-window", "problem": PAST_T}]
    assert uni["subsets"]["candor_turn_taking"]["invalid"] == []
    assert metrics["subsets"]["candor_turn_taking"]["official"] == {"tor": 0.0, "latency": None}
    assert metrics["subsets"]["candor_turn_taking"]["coverage"] == 1.0


# ---- the pipeline stage scores what it can ----

def test_pipeline_stage_excludes_invalid_samples_and_scores_the_rest(tmp_path, capsys):
    stage_in = tmp_path / "asr"
    bad_tree(stage_in / "samples")
    out = tmp_path / "aggregate"
    assert make_stage({"benchmark": "fdb-v1"}).run([stage_in], out, {"benchmark": "fdb-v1"}) == 0
    assert_partial(out)
    err = capsys.readouterr().err
    assert (f"[aggregator] excluded: candor_pause_handling/1: invalid:word-end-before-start "
            f"({BEFORE_START})") in err
    assert "[aggregator] excluded: candor_pause_handling/2: invalid:word-end-past-window" in err
    report = (out / "report.md").read_text()
    assert "official @ d7336bd | unified" in report
    assert "excluded: candor_pause_handling/1: invalid:word-end-before-start" in report
    assert "ineligible: invalid:word-end-before-start 1, invalid:word-end-past-window 1" in report


# ---- aggregator score: strict by default, --exclude-invalid on request ----

@pytest.mark.parametrize("sid,problem", [("1", BEFORE_START), ("2", PAST_T)])
def test_strict_stops_with_one_line_and_writes_nothing(tmp_path, sid, problem):
    t = tmp_path / "t"
    sample_dir(t, "candor_pause_handling", "0", words=[(1.0, 1.4)], annotation=pause_ann((3, 4)))
    bad = {"1": [(2.0, 1.0)], "2": [(9.0, 12.0)]}[sid]
    sample_dir(t, "candor_pause_handling", sid, words=bad, annotation=pause_ann((3, 4)))
    out = tmp_path / "o"
    p = subprocess.run([AGGREGATOR, "score", "--benchmark", "fdb-v1", "--tree", str(t), "--out", str(out)],
                       capture_output=True, text=True, env=os.environ.copy())
    assert p.returncode == 2
    assert p.stderr == f"error: candor_pause_handling/{sid}: {problem}\n"
    assert not out.exists() or not any(out.iterdir())


def test_word_end_tolerance_is_half_a_second(tmp_path):
    assert WORD_END_TOLERANCE_S == 0.5
    t = tmp_path / "t"
    sample_dir(t, "candor_pause_handling", "0", words=[(9.0, 10.5)], annotation=pause_ann((3, 4)))
    _, _, rows = build(t, out=tmp_path / "o")
    assert rows[0]["eligible"]  # 0.5 s past T is still accepted
    sample_dir(t, "candor_pause_handling", "0", words=[(9.0, 10.51)], annotation=pause_ann((3, 4)))
    with pytest.raises(InputError, match="more than 0.5 s past the window end"):
        build(t, out=tmp_path / "o")


def test_exclude_invalid_lists_each_sample_and_scores_the_rest(tmp_path):
    t = bad_tree(tmp_path / "t")
    out = tmp_path / "o"
    p = subprocess.run([AGGREGATOR, "score", "--benchmark", "fdb-v1", "--tree", str(t), "--out", str(out), "--exclude-invalid"],
                       capture_output=True, text=True, env=os.environ.copy())
    assert p.returncode == 0, p.stderr
    excluded = [x for x in p.stderr.splitlines() if x.startswith("excluded: ")]
    assert excluded == [
        f"excluded: candor_pause_handling/1: invalid:word-end-before-start ({BEFORE_START})",
        f"excluded: candor_pause_handling/2: invalid:word-end-past-window ({PAST_T})"]
    assert_partial(out)
    assert "official @ d7336bd | unified" in p.stdout


def test_exclude_invalid_covers_what_only_the_official_column_reads(tmp_path):
    """An ineligible sample whose output.json is not JSON (only the official rule reads it),
    a stereo backchannel output and a manifest hash mismatch: strict stops, exclude goes on."""
    t = tmp_path / "t"
    sample_dir(t, "candor_pause_handling", "0", words=[(1.0, 1.4), (3.0, 3.5)], annotation=pause_ann((3, 4)))
    d = sample_dir(t, "candor_pause_handling", "1", words=[], annotation=pause_ann((3, 4)), skip=("output.wav",))
    (d / "output.json").write_text("{nope")
    sample_dir(t, "candor_turn_taking", "0", words=[(2.5, 3.0)], annotation=turn_ann(2.0))
    sample_dir(t, "candor_turn_taking", "1", words=[(2.5, 3.0)], annotation=turn_ann(2.0))
    from duplexeval_common.vadcache import sha256_file
    rows = [{"subset": "candor_turn_taking", "id": i, "task": "smooth_turn_taking", "duration_s": 10,
             "files": {"turn_taking.json": sha256_file(t / "candor_turn_taking" / i / "turn_taking.json")}}
            for i in ("0", "1")]
    (t / "manifest.json").write_text(json.dumps({"dataset": "t", "samples": rows}))
    (t / "candor_turn_taking" / "1" / "turn_taking.json").write_text(json.dumps(turn_ann(2.5)))
    sample_dir(t, "icc_backchannel", "0", T=2.0, words=[])
    sample_dir(t, "icc_backchannel", "1", T=2.0, words=[])
    wav(t / "icc_backchannel" / "1" / "output.wav", audio=np.zeros((32000, 2), np.float32))
    with pytest.raises(InputError):
        build(t, out=tmp_path / "o", jobs=1, quiet=True)
    metrics, uni, _ = build(t, out=tmp_path / "o", jobs=1, quiet=True, exclude_invalid=True)
    SCHEMAS.validate("metrics", metrics)
    SCHEMAS.validate("unified", uni)
    inv = {x["sample_id"]: x["reason"] for s in uni["subsets"].values() for x in s["invalid"]}
    assert inv == {"candor_pause_handling/1": "invalid:bad-json",
                   "candor_turn_taking/1": "invalid:manifest-hash",
                   "icc_backchannel/1": "invalid:output-channels"}
    m = metrics["subsets"]
    assert m["candor_pause_handling"]["official"] == {"tor": 1.0}
    assert m["candor_pause_handling"]["counts"]["ineligible_reasons"] == {"invalid:bad-json": 1,
                                                                          "missing:output.wav": 1}
    assert m["candor_turn_taking"]["coverage"] == 0.5 and m["candor_turn_taking"]["official"]["tor"] == 0.0
    bc = m["icc_backchannel"]
    assert (bc["n"], bc["counts"]["eligible"], bc["official"]["freq"]) == (2, 1, 0.0)


# ---- the VAD cache lives in the user cache, whatever OUT is ----

def interrupt_tree(root: Path) -> Path:
    out = np.zeros(16000 * 6, np.float32)
    sample_dir(root, "synthetic_user_interruption", "0", T=6.0, output_audio=out,
               words=[("Okay.", 4.0, 4.3)], annotation=interrupt_ann(2.0, 3.0))
    sample_dir(root, "icc_backchannel", "0", T=4.0, words=[])
    return root


def test_rescore_into_a_new_out_folder_reuses_the_user_cache(tmp_path, private_cache):
    t = interrupt_tree(tmp_path / "t")
    runner = CliRunner()
    first = runner.invoke(main, ["score", "--benchmark", "fdb-v1", "--tree", str(t), "--out", str(tmp_path / "o1"), "--jobs", "1"])
    assert first.exit_code == 0, first.output
    assert "[vad] computing speech probabilities for 2 files" in first.stderr
    store = private_cache / "vad" / namespace("onnx")
    entries = sorted(store.rglob("*.npz"))
    assert len(entries) == 2 and not (tmp_path / "o1" / ".cache").exists()
    assert store.name.startswith("vad-onnx-ort") and store.name.endswith(
        json.loads((tmp_path / "o1" / "unified.json").read_text())["vad"]["model_sha256"][:16])
    assert stat.S_IMODE(private_cache.stat().st_mode) == 0o700
    mtimes = [p.stat().st_mtime_ns for p in entries]

    second = runner.invoke(main, ["score", "--benchmark", "fdb-v1", "--tree", str(t), "--out", str(tmp_path / "o2"), "--jobs", "1"])
    assert second.exit_code == 0, second.output
    assert "[vad]" not in second.stderr  # nothing computed
    assert sorted(store.rglob("*.npz")) == entries and [p.stat().st_mtime_ns for p in entries] == mtimes
    for name in ("metrics.json", "unified.json", "unified-samples.jsonl"):
        assert (tmp_path / "o1" / name).read_bytes() == (tmp_path / "o2" / name).read_bytes()


def test_cache_dir_overrides_the_root(tmp_path, private_cache):
    t = interrupt_tree(tmp_path / "t")
    build(t, cache_dir=tmp_path / "mine", out=tmp_path / "o", jobs=1, quiet=True)
    assert len(list((tmp_path / "mine" / namespace("onnx")).rglob("*.npz"))) == 2
    assert not private_cache.exists()


def test_user_cache_dir_and_namespace(tmp_path, monkeypatch):
    monkeypatch.setenv("DUPLEXEVAL_CACHE", str(tmp_path / "a"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert user_cache_dir() == tmp_path / "a"
    monkeypatch.delenv("DUPLEXEVAL_CACHE")
    assert user_cache_dir() == tmp_path / "x" / "duplexeval"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert user_cache_dir() == tmp_path / "home" / ".cache" / "duplexeval"
    assert not (tmp_path / "home").exists()  # created only when a cache writes
    d = private_dir(tmp_path / "home" / ".cache" / "duplexeval" / "vad")
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o700 for p in (d, d.parent, d.parent.parent))
    assert cache_namespace("vad-onnx", ort="1.32.0", model="ab" * 32) == "vad-onnx-ort1.32.0-" + "ab" * 8
    assert cache_namespace("vad-jit", torch="2.13.0+cpu", model="cd" * 32) == "vad-jit-torch2.13.0+cpu-" + "cd" * 8
    assert namespace("onnx") != namespace("jit")
    with pytest.raises(ValueError):
        cache_namespace("vad", ort=None)


# ---- the report: both columns side by side, from unified.json or metrics.json ----

def test_report_puts_official_and_unified_with_intervals_side_by_side(tmp_path):
    t = bad_tree(tmp_path / "t")
    (t / "candor_pause_handling" / "1").rename(t / "candor_pause_handling" / "9")  # keep one bad
    (t / "candor_pause_handling" / "2" / "output.json").write_text(json.dumps(
        {"text": "a", "chunks": [{"text": "a", "timestamp": [3.5, 3.9]}]}))
    interrupt_tree(t)
    (t / "judge.json").write_text(json.dumps({"judge": "llm", "model": "smollm2", "official": False}))
    metrics, uni, _ = build(t, out=tmp_path / "o", jobs=1, quiet=True, exclude_invalid=True)
    text = render(uni)
    lines = text.splitlines()
    head = lines.index("== candor_pause_handling (pause_handling): n 3, eligible 2, coverage 0.667")
    assert lines[head + 1].startswith("   official @ d7336bd | unified")
    row = lines[head + 2]
    assert row.split("|")[0].split() == ["tor", "0.5000"]  # samples 0 and 2; 9 excluded
    # the unified side: value, then the 95% interval [lo, hi], then count/n and the bounds
    assert row.split("|")[1].split()[:4] == ["pause_intrusion_rate", "1.0000", "[0.3424,", "1.0000]"]
    assert "2/2  bounds [0.6667, 1.0000]" in row
    assert "ineligible: invalid:word-end-before-start 1" in text
    assert "     excluded: candor_pause_handling/9: invalid:word-end-before-start (" in text
    ui = next(x for x in lines if x.startswith("== synthetic_user_interruption"))
    assert ui.endswith("coverage 1.000, exercised 0, rating smollm2")
    assert any(x.startswith("   rating[smollm2]") and "| " in x for x in lines)
    assert metrics["subsets"]["synthetic_user_interruption"]["rating_label"] == "smollm2"
    # the orchestrator's console: the same header and rows from metrics.json alone
    rows = console_rows(json.loads(json.dumps(metrics)))
    assert rows and all(x in lines for x in rows)
    assert [x for x in rows if x.startswith("== ")] == [x for x in lines if x.startswith("== ")]


def test_a_sample_its_runner_marked_ineligible_is_left_out_of_both_columns(tmp_path):
    """runner.json "status": "ineligible" (a realtime session whose pacing drifted): the output
    exists, but the sample counts in coverage as ineligible:drift and no column scores it."""
    t = tmp_path / "t"
    # sample 0 would give the official TOR 1 (speaks during the pause), sample 1 TOR 0
    sample_dir(t, "candor_pause_handling", "0", words=[(1.0, 1.4), (3.0, 3.5)], annotation=pause_ann((3, 4)))
    sample_dir(t, "candor_pause_handling", "1", words=[(1.0, 1.4)], annotation=pause_ann((3, 4)))
    metrics, _, _ = build(t)
    assert metrics["subsets"]["candor_pause_handling"]["official"]["tor"] == 0.5
    d0 = t / "candor_pause_handling" / "0"
    (d0 / "runner.json").write_text(json.dumps({
        "runner": "freeze-omni", "status": "ineligible",
        "ineligible": {"code": "drift", "reason": "send drift 31.0 ms > 20 ms at frame 12"}}))
    metrics, uni, rows = build(t)
    by_id = {r["sample_id"]: r for r in rows}
    assert not by_id["candor_pause_handling/0"]["eligible"]
    assert by_id["candor_pause_handling/0"]["reasons"] == ["ineligible:drift"]
    assert by_id["candor_pause_handling/1"]["eligible"]
    assert metrics["subsets"]["candor_pause_handling"]["official"]["tor"] == 0.0
    sub = uni["subsets"]["candor_pause_handling"]
    assert sub["coverage"] == 0.5
    assert sub["counts"]["ineligible_reasons"] == {"ineligible:drift": 1}
    assert sub["metrics"]["pause_intrusion_rate"]["value"] == 0.0
