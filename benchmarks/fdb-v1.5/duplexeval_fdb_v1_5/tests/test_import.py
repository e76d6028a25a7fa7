"""`duplexeval import fdb-v1.5`: the official v1.5 layout, every check (each broken sample named on
one line, the good ones kept), the manifest, and the dataset stage in import mode on the result;
and the round trip of a built sample through an import."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

from duplexeval import importing
from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.hashing import sha256_file
from duplexeval_common.jsonio import read_json

from duplexeval_fdb_v1_5 import importers
from duplexeval_fdb_v1_5.schemas import SCHEMAS
from duplexeval_fdb_v1_5.tasks import KINDS, SPEAKERS, TASKS

from tests.conftest import dx, silence, tone, tts_synth
from tests.conftest import write_json as js, write_wav as wav

from .conftest import MINI, synthesize


def import_v15(src, name, **kw):
    """The importer with the orchestrator's import service, as `duplexeval import fdb-v1.5` runs it."""
    return importers.import_release(importing, src, name, **kw)


def good_sample(d, sr=16000):
    """context tone 1 s, 2 s of silence, the event (another tone) 0.5 s, 1.5 s of silence: the
    window is exactly [3.0, 3.5] of a 5 s input; the clean twin is the same without the event."""
    ctx = np.concatenate([tone(1.0, sr), silence(2.0, sr)])
    wav(d / "clean_input.wav", np.concatenate([ctx, silence(2.0, sr)]), sr)
    wav(d / "input.wav", np.concatenate([ctx, tone(0.5, sr, freq=330.0), silence(1.5, sr)]), sr)
    js(d / "metadata.json", {"context_text": "Tell me about owls.", "current_turn_text": "Wait, which ones?",
                             "timestamps": [3.0, 3.5]})


def release(root, n=2, sr=16000):
    """A small official-layout release: n samples per subset, ids 1..n."""
    for subset in TASKS:
        for i in range(1, n + 1):
            good_sample(root / subset / str(i), sr)
    return root


def tree_state(root):
    return {p.relative_to(root).as_posix(): sha256_file(p) for p in sorted(root.rglob("*")) if p.is_file()}


def test_official_release_imports_whole_with_its_manifest(tmp_path):
    src = release(tmp_path / "download" / "v1_5")  # one level above the subsets
    (src / "user_interruption" / "1" / "notes.txt").write_text("not imported")
    before = tree_state(tmp_path / "download")
    lines = []
    got = import_v15(tmp_path / "download", "v15-test", home=tmp_path / "home", report=lines.append)
    assert lines == [] and got.excluded == [] and got.kept == 8
    out = tmp_path / "home" / "datasets" / "v15-test"
    m = read_json(out / "manifest.json")
    assert m["format"] == "duplexeval-import/1" and m["benchmark"] == "fdb-v1.5" and m["source"] == "fdb-v1.5"
    assert m["name"] == "v15-test" and m["source_path"] == str(src.resolve()) and m["root_files"] == {}
    assert [(r["subset"], r["id"], r["task"]) for r in m["samples"]] == \
        [(s, i, s) for s in sorted(TASKS) for i in ("1", "2")]
    for r in m["samples"]:
        assert set(r["files"]) == {"input.wav", "clean_input.wav", "metadata.json"}
        assert r["duration_s"] == 5.0 and r["sample_rate"] == 16000
        for name, digest in r["files"].items():
            assert sha256_file(out / r["subset"] / r["id"] / name) == digest == \
                sha256_file(src / r["subset"] / r["id"] / name)
    assert not (out / "user_interruption" / "1" / "notes.txt").exists()
    assert tree_state(tmp_path / "download") == before  # the source is never touched


def test_missing_subsets_are_noted_and_bad_folders_are_one_line(tmp_path):
    src = tmp_path / "v1_5"
    good_sample(src / "talking_to_other" / "7")
    lines = []
    got = import_v15(src, "part", home=tmp_path / "h", report=lines.append)
    assert got.kept == 1 and len(lines) == 3 and all(x.startswith("note: no ") for x in lines)
    (tmp_path / "empty" / "sub").mkdir(parents=True)
    with pytest.raises(DuplexEvalError, match="no Full-Duplex-Bench v1.5 subset folder"):
        import_v15(tmp_path / "empty", "y", home=tmp_path / "h")
    with pytest.raises(DuplexEvalError, match="no such folder"):
        import_v15(tmp_path / "nowhere", "y", home=tmp_path / "h")
    for two in ("a", "b"):
        good_sample(tmp_path / "two" / two / "user_backchannel" / "1")
    with pytest.raises(DuplexEvalError, match="several folders hold Full-Duplex-Bench v1.5 subsets"):
        import_v15(tmp_path / "two", "y", home=tmp_path / "h")
    with pytest.raises(DuplexEvalError, match="is a built-in dataset"):
        import_v15(src, "fdb-v1.5-mini", home=tmp_path / "h")
    with pytest.raises(DuplexEvalError, match="already exists .*--force replaces it"):
        import_v15(src, "part", home=tmp_path / "h", report=lambda _: None)


def broken_release(root):
    """Two good samples per subset, then one of each problem."""
    release(root)
    ui, ub, to, bg = (root / s for s in TASKS)
    good_sample(ui / "3")
    (ui / "3" / "clean_input.wav").unlink()                                        # no clean twin
    good_sample(ui / "4")
    (ui / "4" / "metadata.json").unlink()                                          # no metadata
    good_sample(ui / "5")
    wav(ui / "5" / "clean_input.wav", silence(5.0, 8000), 8000)                    # another rate
    good_sample(ui / "6")
    wav(ui / "6" / "clean_input.wav", silence(4.0), 16000)                         # another length
    good_sample(ui / "7")
    wav(ui / "7" / "input.wav", np.stack([tone(5.0), tone(5.0)], axis=1), 16000)   # stereo
    good_sample(ui / "8")
    (ui / "8" / "clean_input.wav").write_bytes(b"RIFF\x00\x00not a wav at all")    # unreadable
    good_sample(ub / "3")
    (ub / "3" / "metadata.json").write_text('{"context_text": "a", "current_turn_text": "b", '
                                            '"timestamps": [NaN, 3.5]}')           # not strict JSON
    good_sample(ub / "4")
    (ub / "4" / "metadata.json").write_text('{"context_text": "a", "context_text": "b", '
                                            '"current_turn_text": "c", "timestamps": [3.0, 3.5]}')  # key twice
    good_sample(ub / "5")
    js(ub / "5" / "metadata.json", {"context_text": "a", "timestamps": [3.0, 3.5]})  # a field missing
    good_sample(ub / "6")
    js(ub / "6" / "metadata.json", {"context_text": 1, "current_turn_text": "b", "timestamps": [3.0, 3.5]})
    good_sample(ub / "7")
    js(ub / "7" / "metadata.json", {"context_text": "a", "current_turn_text": "b", "timestamps": ["3", "4"]})
    good_sample(ub / "8")
    js(ub / "8" / "metadata.json", {"context_text": "a", "current_turn_text": "b", "timestamps": [3.0, 3.5, 4]})
    good_sample(to / "3")
    js(to / "3" / "metadata.json", {"context_text": "a", "current_turn_text": "b", "timestamps": [3.5, 3.0]})
    good_sample(to / "4")
    js(to / "4" / "metadata.json", {"context_text": "a", "current_turn_text": "b", "timestamps": [3.0, 5.5]})
    good_sample(to / "5")
    js(to / "5" / "metadata.json", {"context_text": "a", "current_turn_text": "b", "timestamps": [-0.1, 3.5]})
    good_sample(to / "6")
    js(to / "6" / "metadata.json", {"context_text": "a", "current_turn_text": "b", "timestamps": [True, 3.5]})
    good_sample(bg / "x..y")                                                       # '..' in the id
    good_sample(bg / "bad id")
    good_sample(bg / "²")                                                          # a digit to isdigit only
    good_sample(bg / "-1")
    good_sample(bg / ".hidden")                                                    # not a sample
    good_sample(bg / "01")                                                         # "01" and "1": one sample
    good_sample(bg / "A7")
    good_sample(bg / "a7")                                                         # the same ignoring case
    good_sample(root.parent / "elsewhere" / "9")
    os.symlink(root.parent / "elsewhere" / "9", bg / "9")                          # a folder link leading out
    good_sample(bg / "10")
    (bg / "10" / "clean_input.wav").unlink()
    os.symlink(root.parent / "elsewhere" / "9" / "clean_input.wav", bg / "10" / "clean_input.wav")  # a file link out
    good_sample(bg / "11")
    os.symlink("clean_input.wav", bg / "11" / "input.wav.link")                    # a link inside: harmless
    (bg / "12").mkdir()
    os.symlink(root.parent / "nowhere.wav", bg / "12" / "input.wav")              # a dangling link
    return root


EXPECTED = {
    "user_interruption/3": "clean_input.wav is missing (the input without the overlap event)",
    "user_interruption/4": "metadata.json is missing (the overlap window)",
    "user_interruption/5": "clean_input.wav is 40000 samples at 8000 Hz; input.wav is 80000 at 16000",
    "user_interruption/6": "clean_input.wav is 64000 samples at 16000 Hz; input.wav is 80000 at 16000",
    "user_interruption/7": "input.wav has 2 channels; the benchmark's inputs are mono",
    "user_interruption/8": "clean_input.wav is not readable audio",
    "user_backchannel/3": "metadata.json is not valid JSON (NaN is not JSON",
    "user_backchannel/4": "metadata.json is not valid JSON (",
    "user_backchannel/5": "metadata.json does not satisfy the metadata schema: at (root): 'current_turn_text' "
                          "is a required property",
    "user_backchannel/6": "metadata.json does not satisfy the metadata schema: at context_text: 1 is not of type",
    "user_backchannel/7": "is not of type 'number'",
    "user_backchannel/8": "metadata.json does not satisfy the metadata schema: at timestamps: [3.0, 3.5, 4] is too long",
    "talking_to_other/3": "metadata.json timestamps [3.500000, 3.000000] are reversed",
    "talking_to_other/4": "metadata.json timestamps end 5.500000 s is outside input.wav [0, 5.000000] s",
    "talking_to_other/5": "metadata.json timestamps start -0.100000 s is outside input.wav [0, 5.000000] s",
    "talking_to_other/6": "metadata.json does not satisfy the metadata schema: at timestamps/0: True is not of type",
    "background_speech/x..y": "sample id 'x..y' contains '..'",
    "background_speech/bad id": "sample id 'bad id' is not a plain name",
    "background_speech/\\xb2": "is not a plain name",
    "background_speech/-1": "is not a plain name",
    "background_speech/01": "duplicate id: '01' and '1' name the same sample (equal as numbers)",
    "background_speech/1": "duplicate id: '01' and '1' name the same sample (equal as numbers)",
    "background_speech/A7": "duplicate id: 'A7' and 'a7' name the same sample (equal ignoring case)",
    "background_speech/a7": "duplicate id: 'A7' and 'a7' name the same sample (equal ignoring case)",
    "background_speech/9": "the sample folder is a link leading out of",
    "background_speech/10": "clean_input.wav is a link leading out of",
    "background_speech/12": "input.wav is missing",
}


def test_broken_release_keeps_the_good_samples_and_names_each_bad_one(tmp_path):
    src = broken_release(tmp_path / "v1_5")
    before = tree_state(src)
    lines = []
    got = import_v15(src, "broken", home=tmp_path / "home", report=lines.append)
    reported = dict(line.split(": ", 1) for line in lines)
    assert set(reported) == set(EXPECTED), lines
    for key, reason in EXPECTED.items():
        assert reason in reported[key], (key, reported[key])
    assert all("\n" not in line for line in lines)
    m = read_json(got.path / "manifest.json")
    kept = sorted(f"{r['subset']}/{r['id']}" for r in m["samples"])
    assert kept == sorted([f"{s}/{i}" for s in TASKS for i in ("1", "2") if (s, i) != ("background_speech", "1")]
                          + ["background_speech/11"])
    assert {f"{r['subset']}/{r['id']}": r["reason"] for r in m["excluded"]} == reported
    # nothing of an excluded sample is written, nothing outside the three files, the source unchanged
    assert not (got.path / "user_interruption" / "3").exists()
    assert not (got.path / "background_speech" / "9").exists()
    assert sorted(p.name for p in (got.path / "background_speech" / "11").iterdir()) == \
        ["clean_input.wav", "input.wav", "metadata.json"]
    assert tree_state(src) == before


@pytest.mark.parametrize("value", ["../x", "..", "a/b", "/etc", "x..y", "a b", "-1", "²", "é", "x\ny", "", "a" * 129])
def test_hostile_ids_are_refused(value):
    assert importing.id_problem(value) is not None


def test_cli_exit_codes_and_one_line_reports(tmp_path):
    src = broken_release(tmp_path / "v1_5")
    r = dx(tmp_path / "home", "import", "fdb-v1.5", str(src), "--name", "b")
    assert r.returncode == 1, r.stderr
    assert "imported 8 samples in 4 subsets" in r.stdout and f"{len(EXPECTED)} samples excluded" in r.stdout
    err = [line for line in r.stderr.splitlines() if not line.startswith("note:")]
    assert len(err) == len(EXPECTED) and "Traceback" not in r.stderr
    r = dx(tmp_path / "home", "import", "fdb-v1.5", str(src), "--name", "b")
    assert r.returncode == 2 and r.stderr.startswith("error: dataset 'b' already exists")
    r = dx(tmp_path / "home", "import", "fdb-v1.5", str(tmp_path / "nowhere"))
    assert r.returncode == 2 and "no such folder" in r.stderr
    r = dx(tmp_path / "home", "import", "list")
    assert r.returncode == 0 and "dataset b" in r.stdout and f"8 samples in 4 subsets, {len(EXPECTED)} excluded" in r.stdout
    r = dx(tmp_path / "home", "import", "--help")
    assert r.returncode == 0 and "fdb-v1.5" in r.stdout


def test_dataset_stage_in_import_mode_copies_verifies_and_annotates(tmp_path):
    src = release(tmp_path / "v1_5")
    good_sample(src / "background_speech" / "3", sr=24000)
    got = import_v15(src, "s", home=tmp_path, report=lambda _: None)
    bad = got.path / "talking_to_other" / "2" / "metadata.json"
    bad.write_text(bad.read_text().replace("owls", "OWLS"))  # changed after the import
    r = tts_synth(got.path, tmp_path / "out", {"benchmark": "fdb-v1.5", "dataset": "s"})
    assert r.returncode == 1, r.stderr
    assert "talking_to_other/2: metadata.json differs from the import manifest" in r.stderr
    out = tmp_path / "out"
    stage = read_json(out / "stage.json")
    assert stage["samples"]["talking_to_other/2"]["status"] == "failed"
    assert sum(s["status"] == "ok" for s in stage["samples"].values()) == 8
    for subset in TASKS:
        d = out / "samples" / subset / "1"
        assert {p.name for p in d.iterdir() if not p.name.startswith("_")} == \
            {"input.wav", "clean_input.wav", "metadata.json", "sample.json"}
        for name in ("input.wav", "clean_input.wav", "metadata.json"):
            assert sha256_file(d / name) == sha256_file(src / subset / "1" / name)
        s = read_json(d / "sample.json")
        assert SCHEMAS.problem("sample", s) is None
        assert s["task"] == subset and s["dataset"] == "s" and s["duration_s"] == 5.0 and s["sample_rate"] == 16000
        assert s["overlap"] == {"start": 3.0, "end": 3.5, "start_sample": 48000, "end_sample": 56000,
                                "kind": KINDS[subset], "text": "Wait, which ones?", "speaker": SPEAKERS[subset],
                                "level_db": None, "lowpass_hz": None}
        assert s["context"] == {"text": "Tell me about owls.", "start": None, "end": None,
                                "start_sample": None, "end_sample": None}
        assert s["segments"] == [{"speaker": SPEAKERS[subset], "text": "Wait, which ones?", "start": 3.0,
                                  "end": 3.5, "role": "overlap"}]
    s24 = read_json(out / "samples" / "background_speech" / "3" / "sample.json")
    assert (s24["sample_rate"], s24["overlap"]["start_sample"], s24["overlap"]["end_sample"]) == (24000, 72000, 84000)
    man = read_json(out / "manifest.json")
    rows = {f"{r['subset']}/{r['id']}": r for r in man["samples"]}
    assert rows["talking_to_other/2"]["status"] == "failed" and man["source"]["mode"] == "imported"
    assert man["source"]["imported"]["benchmark"] == "fdb-v1.5"


def test_a_built_dataset_imports_and_keeps_its_window(tmp_path):
    """fdb-v1.5-mini laid out as the release (input.wav, clean_input.wav, metadata.json per sample)
    imports whole, and the imported sample.json has the built one's window, to the sample."""
    built = synthesize(MINI, tmp_path / "built", jobs=2, limit=1)
    src = tmp_path / "release"
    for d in sorted((built / "samples").glob("*/*")):
        dst = src / d.parent.name / d.name
        dst.mkdir(parents=True)
        for name in ("input.wav", "clean_input.wav", "metadata.json"):
            shutil.copyfile(d / name, dst / name)
    got = import_v15(src, "mini-again", home=tmp_path / "home", report=lambda _: None)
    assert got.kept == 4 and got.excluded == []
    r = tts_synth(got.path, tmp_path / "out", {"benchmark": "fdb-v1.5"})
    assert r.returncode == 0, r.stderr
    for d in sorted((built / "samples").glob("*/*")):
        a = read_json(d / "sample.json")
        b = read_json(tmp_path / "out" / "samples" / d.parent.name / d.name / "sample.json")
        keep = ("start", "end", "start_sample", "end_sample", "kind", "text", "speaker")
        assert {k: a["overlap"][k] for k in keep} == {k: b["overlap"][k] for k in keep}
        assert a["context"]["text"] == b["context"]["text"] and a["duration_s"] == b["duration_s"]
