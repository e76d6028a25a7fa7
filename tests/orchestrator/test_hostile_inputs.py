"""Hostile sample ids and links against every component's stage: refused with one line, and
nothing outside the stage's output folder changes."""

import hashlib
import json
import os
import subprocess

import numpy as np
import pytest

from duplexeval_common import wavio

from ..conftest import command

COMPONENTS = {"duplex-runner": {"runner": "silence"}, "asr-aligner": {"benchmark": "fdb-v1"},
              "judge": {"benchmark": "fdb-v1", "judge": "none"}, "aggregator": {"benchmark": "fdb-v1"}}


def snapshot(root, skip):
    out = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        if os.path.realpath(dirpath).startswith(os.path.realpath(skip)):
            continue
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            if os.path.realpath(p).startswith(os.path.realpath(skip)):
                continue
            st = os.lstat(p)
            data = b""
            if os.path.isfile(p) and not os.path.islink(p):
                data = open(p, "rb").read()
            out[os.path.relpath(p, root)] = (st.st_mode, hashlib.sha256(data).hexdigest(),
                                            os.readlink(p) if os.path.islink(p) else None)
    return out


def stage_folder(root, rows, make_dirs=True):
    root.mkdir(parents=True, exist_ok=True)
    rows_out = []
    for subset, sid in rows:
        if make_dirs and isinstance(sid, str) and "/" not in sid and ".." not in sid and sid:
            d = root / "samples" / subset / sid
            d.mkdir(parents=True, exist_ok=True)
            wavio.write_wav(d / "input.wav", np.zeros(1600, np.float32), 16000)
        rows_out.append({"subset": subset, "id": sid, "task": "pause_handling", "duration_s": 0.1,
                         "files": {}})
    (root / "manifest.json").write_text(json.dumps({"dataset": "hostile", "samples": rows_out}))
    return root


def run_stage(component, inp, out, cfg_path):
    return subprocess.run([command(component), "run", "--input", str(inp), "--output", str(out),
                           "--config", str(cfg_path)], capture_output=True, text=True)


@pytest.fixture
def arena(tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious.txt").write_text("keep me")
    (tmp_path / "a" / "b" / "c").mkdir(parents=True)
    return tmp_path


HOSTILE = {
    "dotdot id": [("synthetic_pause_handling", "../../../victim")],
    "absolute id": [("synthetic_pause_handling", "/tmp/victim-abs")],
    "dotdot subset": [("../victim", "0")],
    "empty id": [("synthetic_pause_handling", "")],
    "separator id": [("synthetic_pause_handling", "a/b")],
    "duplicate id": [("synthetic_pause_handling", "0"), ("synthetic_pause_handling", "0")],
    "hidden id": [("synthetic_pause_handling", ".0")],
}


@pytest.mark.parametrize("component", sorted(COMPONENTS))
@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_manifest_is_refused_and_nothing_outside_changes(arena, component, case):
    inp = stage_folder(arena / "a" / "b" / "c" / "in", HOSTILE[case])
    out = arena / "a" / "b" / "c" / "out"
    cfg = arena / "cfg.json"
    cfg.write_text(json.dumps(COMPONENTS[component]))
    before = snapshot(arena, out)
    r = run_stage(component, inp, out, cfg)
    assert r.returncode == 2, (r.returncode, r.stderr)
    errors = [line for line in r.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in r.stderr, r.stderr
    assert snapshot(arena, out) == before
    assert (arena / "victim" / "precious.txt").read_text() == "keep me"


@pytest.mark.parametrize("component", sorted(COMPONENTS))
def test_sample_folder_link_leaving_the_input_is_refused(arena, component):
    inp = arena / "in"
    (inp / "samples" / "synthetic_pause_handling").mkdir(parents=True)
    os.symlink(arena / "victim", inp / "samples" / "synthetic_pause_handling" / "0")
    out = arena / "out"
    cfg = arena / "cfg.json"
    cfg.write_text(json.dumps(COMPONENTS[component]))
    before = snapshot(arena, out)
    r = run_stage(component, inp, out, cfg)
    assert r.returncode == 2, r.stderr
    assert "link leaving" in r.stderr and "Traceback" not in r.stderr
    assert snapshot(arena, out) == before


def test_file_link_leaving_the_input_fails_only_that_sample(arena):
    inp = stage_folder(arena / "in", [("synthetic_pause_handling", "0"), ("synthetic_pause_handling", "1")])
    target = inp / "samples" / "synthetic_pause_handling" / "1" / "input.wav"
    target.unlink()
    wavio.write_wav(arena / "victim" / "input.wav", np.zeros(1600, np.float32), 16000)
    os.symlink(arena / "victim" / "input.wav", target)
    cfg = arena / "cfg.json"
    cfg.write_text(json.dumps({"runner": "silence"}))
    r = run_stage("duplex-runner", inp, arena / "out", cfg)
    assert r.returncode == 1, r.stderr
    rec = json.loads((arena / "out" / "stage.json").read_text())
    assert rec["samples"]["synthetic_pause_handling/0"]["status"] == "ok"
    st = rec["samples"]["synthetic_pause_handling/1"]
    assert st["status"] == "failed" and "link leaving" in st["reason"]


def test_run_without_input_and_bad_output(arena):
    cfg = arena / "cfg.json"
    cfg.write_text("{}")
    r = subprocess.run([command("duplex-runner"), "run", "--output", str(arena / "o"), "--config", str(cfg)],
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.strip() == ("error: run needs at least one --input folder (a stage "
                                                      "folder, or the dataset's source folder)")
    inp = stage_folder(arena / "in", [("synthetic_pause_handling", "0")])
    (arena / "file").write_text("x")
    r = run_stage("duplex-runner", inp, arena / "file", cfg)
    assert r.returncode == 2 and "is not a folder" in r.stderr


@pytest.mark.parametrize("component", sorted(COMPONENTS))
def test_unknown_config_key_is_one_line(arena, component):
    inp = stage_folder(arena / "in", [("synthetic_pause_handling", "0")])
    cfg = arena / "cfg.json"
    cfg.write_text(json.dumps({**COMPONENTS[component], "no_such_setting": 1}))
    r = run_stage(component, inp, arena / "out", cfg)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "no_such_setting" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


# ---- make score (aggregator score on a tree) ----------------------------------------------------

def score_tree_dir(root, ids=("0",)):
    from duplexeval_fdb_v1.tests.helpers import sample_dir
    for sid in ids:
        sample_dir(root, "synthetic_pause_handling", sid, words=[(1.0, 1.2)],
                   annotation=[{"text": "[PAUSE]", "timestamp": [2.0, 3.0]}])
    return root


def make_score(tree, out):
    return subprocess.run(["make", "-s", "-C", str(REPO), "score", f"TREE={tree}", f"OUT={out}"],
                          capture_output=True, text=True)


from pathlib import Path  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("row", [{"subset": "synthetic_pause_handling", "id": "../../victim"},
                                 {"subset": "synthetic_pause_handling", "id": "/abs"},
                                 {"subset": "../victim", "id": "0"}])
def test_make_score_refuses_hostile_manifest_ids(arena, row):
    tree = score_tree_dir(arena / "tree")
    (tree / "manifest.json").write_text(json.dumps({"dataset": "x", "samples": [
        {"subset": "synthetic_pause_handling", "id": "0", "task": "pause_handling", "duration_s": 1, "files": {}},
        {**row, "task": "pause_handling", "duration_s": 1, "files": {}}]}))
    out = arena / "out"
    before = snapshot(arena, out)
    r = make_score(tree, out)
    assert r.returncode != 0 and "error: manifest.json: sample row 1" in r.stderr, r.stderr
    assert snapshot(arena, out) == before and not out.exists()


def test_make_score_refuses_a_sample_folder_link_leaving_the_tree(arena):
    tree = score_tree_dir(arena / "tree")
    outside = score_tree_dir(arena / "victim" / "elsewhere", ids=("7",))
    os.symlink(outside / "synthetic_pause_handling" / "7", tree / "synthetic_pause_handling" / "7")
    r = make_score(tree, arena / "out")
    assert r.returncode != 0 and "link leaving the tree" in r.stderr, r.stderr
    assert not (arena / "out").exists()


def test_make_score_argument_errors(arena):
    r = subprocess.run(["make", "-s", "-C", str(REPO), "score"], capture_output=True, text=True)
    assert r.returncode != 0 and "error: make score needs TREE=" in r.stderr
    tree = score_tree_dir(arena / "tree")
    (arena / "afile").write_text("x")
    r = make_score(tree, arena / "afile")
    assert r.returncode != 0 and "exists and is not a folder" in r.stderr


def test_a_linked_output_subfolder_is_refused_before_anything_is_removed(arena):
    inp = stage_folder(arena / "in", [("synthetic_pause_handling", "0")])
    (arena / "victim" / ".precious.partial").mkdir()
    out = arena / "out"
    (out / "samples").mkdir(parents=True)
    os.symlink(arena / "victim", out / "samples" / "synthetic_pause_handling")
    cfg = arena / "cfg.json"
    cfg.write_text(json.dumps({"runner": "silence"}))
    r = run_stage("duplex-runner", inp, out, cfg)
    assert r.returncode == 2 and "link leaving" in r.stderr, r.stderr
    assert sorted(p.name for p in (arena / "victim").iterdir()) == [".precious.partial", "precious.txt"]


def test_an_id_with_a_trailing_newline_is_refused(arena):
    inp = stage_folder(arena / "in", [("synthetic_pause_handling", "abc\n")])
    cfg = arena / "cfg.json"
    cfg.write_text(json.dumps({"runner": "silence"}))
    r = run_stage("duplex-runner", inp, arena / "out", cfg)
    assert r.returncode == 2 and not (arena / "out" / "samples" / "synthetic_pause_handling" / "abc\n").exists()


def test_make_score_refuses_file_links_leaving_the_tree_and_out_inside_it(arena):
    tree = score_tree_dir(arena / "tree")
    target = tree / "synthetic_pause_handling" / "0" / "output.wav"
    os.replace(target, arena / "victim" / "output.wav")
    os.symlink(arena / "victim" / "output.wav", target)
    r = make_score(tree, arena / "out")
    assert r.returncode != 0 and "output.wav is a link leaving the tree" in r.stderr, r.stderr
    tree2 = score_tree_dir(arena / "tree2")
    r = make_score(tree2, tree2 / "out_pause_handling")
    assert r.returncode != 0 and "lies inside the tree" in r.stderr


def test_config_with_duplicate_keys_or_deep_nesting_is_one_line(arena):
    inp = stage_folder(arena / "in", [("synthetic_pause_handling", "0")])
    cfg = arena / "cfg.json"
    for text, message in (('{"runner": "silence", "runner": "fixed-latency"}', "duplicate key"),
                          ("[" * 100000, "nested too deeply")):
        cfg.write_text(text)
        r = run_stage("duplex-runner", inp, arena / "out", cfg)
        assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr, r.stderr
