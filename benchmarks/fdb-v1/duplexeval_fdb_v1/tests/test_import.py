"""`duplexeval import`: the official v1.0 layout and plain folders, every check, the manifest, and
an imported dataset used by name in a real `duplexeval eval`."""

import os

import numpy as np
import pytest

from duplexeval import catalog, importing
from duplexeval_fdb_v1 import importers
from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.hashing import sha256_file, sha256_tree
from duplexeval_common.jsonio import read_json

from tests.conftest import dx, silence, tone, tts_synth
from tests.conftest import write_json as js, write_wav as wav


def import_fdb_v1(src, name, **kw):
    """The importer with the orchestrator's import service, as `duplexeval import fdb-v1` runs it."""
    from duplexeval import importing
    return importers.import_release(importing, src, name, **kw)


def import_folder(src, name, **kw):
    from duplexeval import importing
    return importers.import_folder(importing, src, name, **kw)


def pause_sample(d, sr=48000):
    """tone 1 s, pause 1 s, tone 1 s: the pause is exactly [1.0, 2.0]."""
    wav(d / "input.wav", np.concatenate([tone(1.0, sr), silence(1.0, sr), tone(1.0, sr)]), sr)
    js(d / "pause.json", [{"text": "[PAUSE]", "timestamp": [1.0, 2.0]}])
    js(d / "transcription.json", {"text": "a b", "chunks": []})


def turn_sample(d, sr=16000):
    wav(d / "input.wav", np.concatenate([tone(1.5, sr), silence(2.5, sr)]), sr)
    js(d / "turn_taking.json", [{"text": "[TURN-TAKING]", "timestamp": [1.5, 1.9]}])


def interrupt_sample(d, sr=16000):
    ctx, intr = tone(1.0, sr), tone(0.5, sr, freq=330.0)
    wav(d / "context.wav", ctx, sr)
    wav(d / "interrupt.wav", intr, sr)
    wav(d / "input.wav", np.concatenate([ctx, silence(1.0, sr), intr, silence(2.0, sr)]), sr)
    js(d / "interrupt.json", [{"context": "tell me", "interrupt": "wait", "timestamp": [2.0, 2.5]}])


def backchannel_sample(d, sr=16000):
    wav(d / "input.wav", tone(2.0, sr), sr)


def release(root, n=2):
    """A small official-layout release: n samples per subset, ids 1..n, and the ICC ground truth."""
    for i in range(1, n + 1):
        pause_sample(root / "candor_pause_handling" / str(i))
        pause_sample(root / "synthetic_pause_handling" / str(i), sr=16000)
        turn_sample(root / "candor_turn_taking" / str(i))
        backchannel_sample(root / "icc_backchannel" / str(i))
        interrupt_sample(root / "synthetic_user_interruption" / str(i))
    js(root / importers.ICC_GT, {str(i): [0.25, 0.5, 0.25] for i in range(1, n + 1)})
    return root


def tree_state(root):
    return {p.relative_to(root).as_posix(): sha256_file(p) for p in sorted(root.rglob("*")) if p.is_file()}


# ---- the official layout ---------------------------------------------------------------------

def test_official_release_imports_whole_with_its_manifest(tmp_path):
    src = release(tmp_path / "download" / "Full-Duplex-Bench-v1")  # one level above the subsets
    before = tree_state(tmp_path / "download")
    lines = []
    got = import_fdb_v1(tmp_path / "download", "fdb-test", home=tmp_path / "home", report=lines.append)
    assert lines == [] and got.excluded == [] and got.kept == 10
    out = tmp_path / "home" / "datasets" / "fdb-test"
    assert got.path == out
    m = read_json(out / "manifest.json")
    assert m["format"] == "duplexeval-import/1" and m["name"] == "fdb-test" and m["source"] == "fdb-v1"
    assert m["source_path"] == str(src.resolve()) and m["created_by"]["package"] == "duplexeval"
    assert m["root_files"][importers.ICC_GT] == sha256_file(src / importers.ICC_GT) == sha256_file(out / importers.ICC_GT)
    rows = {(r["subset"], r["id"]): r for r in m["samples"]}
    assert len(rows) == 10 and m["excluded"] == []
    r = rows[("candor_pause_handling", "1")]
    assert r["task"] == "pause_handling" and r["sample_rate"] == 48000 and r["duration_s"] == 3.0
    assert set(r["files"]) == {"input.wav", "pause.json", "transcription.json"}
    assert set(rows[("synthetic_user_interruption", "2")]["files"]) == {"input.wav", "interrupt.json",
                                                                        "context.wav", "interrupt.wav"}
    assert set(rows[("icc_backchannel", "1")]["files"]) == {"input.wav"}
    for (subset, sid), row in rows.items():
        for name, digest in row["files"].items():
            assert sha256_file(out / subset / sid / name) == digest == sha256_file(src / subset / sid / name)
    assert tree_state(tmp_path / "download") == before  # the source is never touched
    assert not [p for p in (tmp_path / "home" / "datasets").iterdir() if p.name.startswith(".")]


def test_reimport_refuses_without_force_and_force_replaces(tmp_path):
    src = release(tmp_path / "v1", n=1)
    home = tmp_path / "home"
    import_fdb_v1(src, "x", home=home, report=lambda _: None)
    with pytest.raises(DuplexEvalError, match="already exists .*--force replaces it"):
        import_fdb_v1(src, "x", home=home, report=lambda _: None)
    (home / "datasets" / "x" / "stray").write_text("old")
    import_fdb_v1(src, "x", home=home, force=True, report=lambda _: None)
    assert not (home / "datasets" / "x" / "stray").exists()
    assert sorted(p.name for p in (home / "datasets").iterdir()) == ["x"]


def test_bad_names_and_overlapping_folders_are_one_line_errors(tmp_path):
    src = release(tmp_path / "v1", n=1)
    for name, message in (("fdb-mini", "is a built-in dataset"), ("../up", "path separator"),
                          ("a b", "not a plain name")):
        with pytest.raises(DuplexEvalError, match=message):
            import_fdb_v1(src, name, home=tmp_path / "h")
    (tmp_path / "empty" / "sub").mkdir(parents=True)
    with pytest.raises(DuplexEvalError, match="no Full-Duplex-Bench v1.0 subset folder"):
        import_fdb_v1(tmp_path / "empty", "y", home=tmp_path / "h2")
    # a release lying where the import would go: --force would replace the source
    inside = release(tmp_path / "h3" / "datasets" / "v1", n=1)
    with pytest.raises(DuplexEvalError, match="overlap"):
        import_fdb_v1(inside, "v1", home=tmp_path / "h3", force=True)
    assert (inside / "candor_pause_handling" / "1" / "input.wav").is_file()
    with pytest.raises(DuplexEvalError, match="--icc-gt .*no such file"):
        import_fdb_v1(src, "z", icc_gt=tmp_path / "nope.json", home=tmp_path / "h")


@pytest.mark.parametrize("value", ["..", "a/b", "/etc", "...", "x..y", "a b", "-1", "é", "x\ny", "", "a" * 129])
def test_path_traversal_and_odd_ids_are_refused(value):
    assert importing.id_problem(value) is not None


@pytest.mark.parametrize("value", ["0", "17", "a-b.c", "S_01"])
def test_plain_ids_pass(value):
    assert importing.id_problem(value) is None


def broken_release(root):
    """Two good samples per subset, then one of each problem."""
    release(root)
    cp, sp, tt, ui, bc = (root / s for s in ("candor_pause_handling", "synthetic_pause_handling",
                                               "candor_turn_taking", "synthetic_user_interruption",
                                               "icc_backchannel"))
    pause_sample(cp / "3")
    (cp / "3" / "input.wav").write_bytes(b"RIFF\x00\x00not a wav at all")
    pause_sample(cp / "4")
    js(cp / "4" / "pause.json", [{"text": "[PAUSE]"}])                       # schema: no timestamp
    pause_sample(cp / "5")
    js(cp / "5" / "pause.json", [{"text": "[PAUSE]", "timestamp": [1.0, 9.0]}])  # T is 3 s
    pause_sample(cp / "6")
    (cp / "6" / "pause.json").write_text('[{"text": "[PAUSE]", "timestamp": [NaN, 2.0]}]')
    pause_sample(cp / "7")
    js(cp / "7" / "pause.json", [{"text": "[PAUSE]", "timestamp": [1.5, 2.0]},
                                 {"text": "[PAUSE]", "timestamp": [0.5, 1.0]}])  # not sorted
    turn_sample(tt / "3")
    (tt / "3" / "turn_taking.json").unlink()                                 # a missing file
    turn_sample(tt / "03")                                                   # "03" and "3": one sample
    turn_sample(tt / "4")
    js(tt / "4" / "turn_taking.json", [{"text": "[TURN-TAKING]", "timestamp": [1.5, 1.2]}])  # end < start
    pause_sample(sp / "x..y", sr=16000)                                      # '..' in the id
    pause_sample(sp / "...", sr=16000)                                       # hidden: not a sample
    pause_sample(sp / "bad id", sr=16000)
    pause_sample(root.parent / "elsewhere" / "9", sr=16000)
    os.symlink(root.parent / "elsewhere" / "9", sp / "9")                    # a link leading out
    interrupt_sample(ui / "3")
    wav(ui / "3" / "input.wav", np.stack([tone(4.5), tone(4.5)], axis=1), 16000)  # stereo
    interrupt_sample(ui / "4")
    js(ui / "4" / "interrupt.json", [{"context": "c", "interrupt": "i", "timestamp": [2.5, 2.0]}])  # S > R
    interrupt_sample(ui / "5")
    wav(ui / "5" / "context.wav", np.zeros(0, dtype=np.float32), 16000)     # an empty supplementary file
    backchannel_sample(bc / "3")                                             # no ground truth for 3
    backchannel_sample(bc / "x4")                                            # not a number
    return root


EXPECTED = {
    "candor_pause_handling/3": "input.wav is not readable audio",
    "candor_pause_handling/4": "pause.json does not satisfy the pause schema: at 0: 'timestamp' is a required",
    "candor_pause_handling/5": "pause 0 ends at 9.000000 s is outside the window [0, 3.000000]",
    "candor_pause_handling/6": "pause.json is not valid JSON (NaN is not JSON",
    "candor_pause_handling/7": "pause 1 starts before pause 0 ends",
    "candor_turn_taking/3": "duplicate id: '03' and '3' name the same sample (equal as numbers)",
    "candor_turn_taking/03": "duplicate id: '03' and '3' name the same sample (equal as numbers)",
    "candor_turn_taking/4": "turn_taking.json item 0 ends (1.200000 s) before it starts (1.500000 s)",
    "synthetic_pause_handling/x..y": "sample id 'x..y' contains '..'",
    "synthetic_pause_handling/bad id": "sample id 'bad id' is not a plain name",
    "synthetic_pause_handling/9": "the sample folder is a link leading out of",
    "synthetic_user_interruption/3": "input.wav has 2 channels; the benchmark's inputs are mono",
    "synthetic_user_interruption/4": "interruption onset S is after its end R",
    "synthetic_user_interruption/5": "context.wav is empty",
    "icc_backchannel/3": "no ground-truth distribution for id 3 in icc_gt_distribution.json",
    "icc_backchannel/x4": "a backchannel id must be a number",
}


def test_broken_release_keeps_the_good_samples_and_names_each_bad_one(tmp_path):
    src = broken_release(tmp_path / "v1")
    before = tree_state(src)
    lines = []
    got = import_fdb_v1(src, "broken", home=tmp_path / "home", report=lines.append)
    reported = dict(line.split(": ", 1) for line in lines)
    assert set(reported) == set(EXPECTED), lines
    for key, reason in EXPECTED.items():
        assert reason in reported[key], (key, reported[key])
    assert all("\n" not in line for line in lines)
    m = read_json(got.path / "manifest.json")
    kept = sorted(f"{r['subset']}/{r['id']}" for r in m["samples"])
    assert kept == sorted(f"{s}/{i}" for s in importers.FDB_V1_SUBSETS for i in ("1", "2"))
    excluded = {f"{r['subset']}/{r['id']}": r["reason"] for r in m["excluded"]}
    assert excluded == reported
    # nothing of an excluded sample is written, and the source is as it was
    assert not (got.path / "candor_pause_handling" / "3").exists()
    assert not (got.path / "synthetic_pause_handling" / "9").exists()
    assert tree_state(src) == before


def test_a_turn_taking_end_past_the_window_is_caught_beyond_the_aggregator(tmp_path):
    src = release(tmp_path / "v1", n=1)
    js(src / "candor_turn_taking" / "1" / "turn_taking.json",
       [{"text": "[TURN-TAKING]", "timestamp": [1.5, 4.5]}])  # T is 4 s; the aggregator reads only 1.5
    lines = []
    import_fdb_v1(src, "t", home=tmp_path / "h", report=lines.append)
    assert lines == ["candor_turn_taking/1: turn_taking.json item 0 end 4.500000 s is outside the window "
                     "[0, 4.000000] of input.wav"]


def test_a_bad_ground_truth_file_stops_the_import_and_a_missing_one_is_noted(tmp_path):
    src = release(tmp_path / "v1", n=1)
    (src / importers.ICC_GT).write_text("[1, 2]")
    with pytest.raises(DuplexEvalError, match="expected an object"):
        import_fdb_v1(src, "g", home=tmp_path / "h")
    assert not (tmp_path / "h" / "datasets" / "g").exists()
    (src / importers.ICC_GT).unlink()
    lines = []
    got = import_fdb_v1(src, "g", home=tmp_path / "h", report=lines.append)
    assert any("no icc_gt_distribution.json" in line for line in lines) and got.excluded == []
    assert importers.ICC_GT not in read_json(got.path / "manifest.json")["root_files"]
    gt = tmp_path / "gt.json"
    js(gt, {"1": [0.2, 0.2]})  # sums to 0.4
    lines = []
    import_fdb_v1(src, "g2", icc_gt=gt, home=tmp_path / "h", report=lines.append)
    assert lines == ["icc_backchannel/1: the ground-truth distribution for id 1 in icc_gt_distribution.json "
                     "sums to 0.400000, not 1"]


def test_cli_exit_codes_and_one_line_reports(tmp_path):
    src = broken_release(tmp_path / "v1")
    r = dx(tmp_path / "home", "import", "fdb-v1", str(src), "--name", "b")
    assert r.returncode == 1, r.stderr
    assert "imported 10 samples in 5 subsets" in r.stdout and "16 samples excluded" in r.stdout
    err = [line for line in r.stderr.splitlines() if not line.startswith("note:")]
    assert len(err) == len(EXPECTED) and "Traceback" not in r.stderr
    r = dx(tmp_path / "home", "import", "fdb-v1", str(src), "--name", "b")
    assert r.returncode == 2 and r.stderr.startswith("error: dataset 'b' already exists")
    r = dx(tmp_path / "home", "import", "fdb-v1", str(tmp_path / "nowhere"))
    assert r.returncode == 2 and "no such folder" in r.stderr
    r = dx(tmp_path / "home", "import", "list")
    assert r.returncode == 0 and "dataset b" in r.stdout and "10 samples in 5 subsets, 16 excluded" in r.stdout


# ---- plain folders ---------------------------------------------------------------------------

def plain_folder(root):
    pause_sample(root / "p1", sr=16000)
    turn_sample(root / "t1")
    interrupt_sample(root / "i1")
    backchannel_sample(root / "none")                  # no annotation file
    pause_sample(root / "both", sr=16000)
    js(root / "both" / "turn_taking.json", [{"text": "[TURN-TAKING]", "timestamp": [1.0, 1.2]}])
    pause_sample(root / "late", sr=16000)
    js(root / "late" / "pause.json", [{"text": "[PAUSE]", "timestamp": [2.5, 3.5]}])
    turn_sample(root / "Q7")
    turn_sample(root / "q7")                           # the same id ignoring case
    wav(root / "x.y" / "input.wav", tone(1.0), 16000)  # schema-invalid interrupt.json
    js(root / "x.y" / "interrupt.json", [{"timestamp": [0.1, 0.2]}])
    (root / "README.txt").write_text("not a sample")
    return root


def test_folder_import_derives_subsets_from_the_annotation_and_names_each_bad_sample(tmp_path):
    src = plain_folder(tmp_path / "mine")
    before = tree_state(src)
    lines = []
    got = import_folder(src, "mine", home=tmp_path / "home", report=lines.append)
    m = read_json(got.path / "manifest.json")
    assert m["source"] == "folder" and m["root_files"] == {}
    assert sorted((r["subset"], r["id"], r["task"]) for r in m["samples"]) == [
        ("mine_pause_handling", "p1", "pause_handling"), ("mine_turn_taking", "t1", "smooth_turn_taking"),
        ("mine_user_interruption", "i1", "user_interruption")]
    reported = dict(line.split(": ", 1) for line in lines)
    assert reported.keys() == {"mine/none", "mine/both", "mine_pause_handling/late", "mine_turn_taking/Q7",
                               "mine_turn_taking/q7", "mine_user_interruption/x.y"}
    assert reported["mine/none"].startswith("no annotation file")
    assert "more than one annotation file" in reported["mine/both"]
    assert "pause 0 ends at 3.500000 s is outside the window [0, 3.000000]" in reported["mine_pause_handling/late"]
    assert "equal ignoring case" in reported["mine_turn_taking/q7"]
    assert "does not satisfy the interrupt schema" in reported["mine_user_interruption/x.y"]
    assert {f"{r['subset']}/{r['id']}": r["reason"] for r in m["excluded"]} == reported
    assert (got.path / "mine_pause_handling" / "p1" / "pause.json").is_file()
    assert tree_state(src) == before


def test_folder_import_with_a_subset_keeps_only_its_task(tmp_path):
    src = plain_folder(tmp_path / "mine")
    lines = []
    got = import_folder(src, "m2", subset="ours_turn_taking", home=tmp_path / "h", report=lines.append)
    assert [(r["subset"], r["id"]) for r in got.manifest["samples"]] == [("ours_turn_taking", "t1")]
    assert "ours_turn_taking/p1: pause.json makes it a pause_handling sample, but subset ours_turn_taking " \
           "is smooth_turn_taking" in lines
    with pytest.raises(DuplexEvalError, match="must end with pause_handling"):
        import_folder(src, "m3", subset="ours", home=tmp_path / "h")
    with pytest.raises(DuplexEvalError, match="no sample folders"):
        import_folder(tmp_path / "h" / "datasets" / "m2" / "ours_turn_taking" / "t1", "m4",
                                home=tmp_path / "h2")


def test_nothing_passing_writes_nothing(tmp_path):
    src = tmp_path / "src"
    backchannel_sample(src / "a")
    with pytest.raises(DuplexEvalError, match="no sample passed the checks"):
        import_folder(src, "n", home=tmp_path / "h", report=lambda _: None)
    assert list((tmp_path / "h" / "datasets").iterdir()) == []


# ---- used by name ----------------------------------------------------------------------------

def test_catalog_finds_imported_datasets_and_builtins_win(tmp_path, monkeypatch):
    monkeypatch.setenv("DUPLEXEVAL_HOME", str(tmp_path))
    import_fdb_v1(release(tmp_path / "v1", n=1), "mine", home=tmp_path, report=lambda _: None)
    comp, folder, _ = catalog.dataset("mine")
    assert comp == "tts-synth" and folder == tmp_path / "datasets" / "mine"
    assert "mine" in catalog.datasets() and "fdb-mini" in catalog.datasets()
    assert "imported (fdb-v1)" in catalog.datasets()["mine"][2]
    (tmp_path / "datasets" / "fdb-mini").mkdir()  # a folder under a built-in name never wins
    (tmp_path / "datasets" / "fdb-mini" / "manifest.json").write_text(
        (tmp_path / "datasets" / "mine" / "manifest.json").read_text())
    assert catalog.dataset("fdb-mini") == catalog.builtin()["fdb-mini"]
    with pytest.raises(DuplexEvalError, match=r"unknown dataset 'nope'; built-in: .*fdb-mini.*; imported: .*mine"):
        catalog.dataset("nope")
    with pytest.raises(DuplexEvalError, match="unknown dataset '../mine'"):
        catalog.dataset("../mine")
    (tmp_path / "datasets" / "mine" / "manifest.json").write_text("{")
    with pytest.raises(DuplexEvalError, match="manifest.json is not readable"):
        catalog.dataset("mine")


def test_dataset_stage_in_import_mode_copies_verifies_and_annotates(tmp_path):
    got = import_fdb_v1(release(tmp_path / "v1"), "s", home=tmp_path, report=lambda _: None)
    before = sha256_tree(got.path)
    bad = got.path / "synthetic_user_interruption" / "2" / "interrupt.json"
    bad.write_text(bad.read_text().replace("wait", "WAIT"))  # tampered after the import
    assert sha256_tree(got.path) != before  # the stage key (plan.Source) follows the content
    r = tts_synth(got.path, tmp_path / "out", {"benchmark": "fdb-v1", "dataset": "s", "limit": 2})
    assert r.returncode == 1, r.stderr
    assert "synthetic_user_interruption/2: interrupt.json differs from the import manifest" in r.stderr
    out = tmp_path / "out"
    stage = read_json(out / "stage.json")
    assert stage["samples"]["synthetic_user_interruption/2"]["status"] == "failed"
    assert sum(s["status"] == "ok" for s in stage["samples"].values()) == 9
    s = read_json(out / "samples" / "synthetic_user_interruption" / "1" / "sample.json")
    assert s["interrupt"] == {"start": 2.0, "end": 2.5, "context": "tell me", "interrupt": "wait"}
    assert s["turn_end_s"] == 2.5 and s["duration_s"] == 4.5 and s["dataset"] == "s"
    p = read_json(out / "samples" / "candor_pause_handling" / "1" / "sample.json")
    assert p["pauses"] == [[1.0, 2.0]] and p["sample_rate"] == 48000
    assert read_json(out / "samples" / "candor_turn_taking" / "2" / "sample.json")["turn_end_s"] == 1.5
    assert sha256_file(out / "samples" / "candor_pause_handling" / "1" / "input.wav") == \
        sha256_file(got.path / "candor_pause_handling" / "1" / "input.wav")
    assert sha256_file(out / "icc_gt_distribution.json") == got.manifest["root_files"][importers.ICC_GT]
    man = read_json(out / "manifest.json")
    rows = {f"{r['subset']}/{r['id']}": r for r in man["samples"]}
    assert rows["synthetic_user_interruption/2"]["status"] == "failed"
    assert man["source"]["mode"] == "imported" and man["source"]["imported"]["source"] == "fdb-v1"
    r = tts_synth(got.path, tmp_path / "out1", {"benchmark": "fdb-v1", "dataset": "s", "limit": 1, "engine": "espeak-ng"})
    assert r.returncode == 2 and "setting engine does not apply to an imported dataset" in r.stderr


def test_eval_on_an_imported_dataset_scores_and_a_tampered_file_fails_its_sample(tmp_path):
    src = tmp_path / "v1"
    pause_sample(src / "candor_pause_handling" / "1")
    turn_sample(src / "candor_turn_taking" / "1")
    home = tmp_path / "home"
    r = dx(home, "import", "fdb-v1", str(src), "--name", "tiny")
    assert r.returncode == 0, r.stderr
    r = dx(home, "eval", "--dataset", "tiny", "--model", "fixed-latency", "--judge", "none", "--limit", "1")
    assert r.returncode == 0, r.stderr[-3000:]
    run = read_json(home / "runs" / "latest" / "run.json")
    assert run["status"] == "ok" and run["dataset"] == "tiny"
    metrics = read_json(home / "store" / run["stages"][-1]["key"] / "metrics.json")
    assert set(metrics["subsets"]) == {"candor_pause_handling", "candor_turn_taking"}
    assert all(s["counts"]["eligible"] == 1 for s in metrics["subsets"].values())
    wav_ = home / "datasets" / "tiny" / "candor_pause_handling" / "1" / "input.wav"
    data = bytearray(wav_.read_bytes())
    data[-2:] = b"\x01\x02"
    wav_.write_bytes(bytes(data))
    r = dx(home, "eval", "--dataset", "tiny", "--model", "fixed-latency", "--judge", "none", "--limit", "1")
    assert r.returncode == 1, r.stderr[-3000:]
    run2 = read_json(home / "runs" / "latest" / "run.json")
    assert run2["status"] == "partial" and run2["stages"][0]["key"] != run["stages"][0]["key"]
    assert "input.wav differs from the import manifest" in run2["missing"]["candor_pause_handling/1"]
    assert list(run2["missing"]) == ["candor_pause_handling/1"]


def test_odd_digit_ids_are_one_line_not_a_crash(tmp_path):
    """"²" is a digit to str.isdigit but not to int(): a sample folder so named is excluded with
    its reason (it once crashed `import folder` and `import fdb-v1` and lost the good samples)."""
    src = tmp_path / "plain"
    pause_sample(src / "p1", sr=16000)
    pause_sample(src / "²", sr=16000)
    lines = []
    got = import_folder(src, "odd", home=tmp_path / "h", report=lines.append)
    assert got.kept == 1 and [e["id"] for e in got.excluded] == ["\\xb2"]
    assert len(lines) == 1 and "not a plain name" in lines[0]
    rel = release(tmp_path / "v1", n=1)
    pause_sample(rel / "synthetic_pause_handling" / "²", sr=16000)
    lines = []
    got = import_fdb_v1(rel, "odd2", home=tmp_path / "h", report=lines.append)
    assert got.kept == 5 and [e["id"] for e in got.excluded] == ["\\xb2"] and len(lines) == 1
