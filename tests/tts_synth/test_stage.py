"""The stage: byte-identical reruns, per-sample failures, one-line errors, engines."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

from duplexeval_common.errors import DuplexEvalError, MissingDependency
from duplexeval_common.jsonio import read_json
from duplexeval_tts import synthesize
from duplexeval_tts.cli import main
from duplexeval_tts.engines import ENGINES, TRIM_THRESHOLD

from .conftest import DATASET, write_config


def files(out):
    return {p.relative_to(out).as_posix(): p.read_bytes()
            for p in sorted(out.rglob("*")) if p.is_file() and p.name != "stage.json"}


def run_inproc(args):
    return CliRunner().invoke(main, ["run", *map(str, args)])


def test_rerun_gives_identical_bytes(mini, tmp_path):
    # a second, in-process run (the fixture ran in a subprocess) into a fresh folder
    cfg = write_config(tmp_path / "cfg.json", {"benchmark": "fdb-v1", "dataset": "fdb-mini", "limit": 1})
    r = run_inproc(["--input", DATASET, "--output", tmp_path / "out", "--config", cfg])
    assert r.exit_code == 0, r.output
    assert files(tmp_path / "out") == files(mini)


def test_rerun_in_place_is_cached(mini, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(mini, out)
    cfg = write_config(tmp_path / "cfg.json", {"benchmark": "fdb-v1", "dataset": "fdb-mini", "limit": 1})
    r = run_inproc(["--input", DATASET, "--output", out, "--config", cfg])
    assert r.exit_code == 0, r.output
    assert all(s.get("cached") for s in read_json(out / "stage.json")["samples"].values())
    assert files(out) == files(mini)


def scripts(folder, turn_samples, interruption_samples=None):
    folder.mkdir()
    (folder / "synthetic_turn_taking.json").write_text(json.dumps(
        {"format": "fdb-mini-script/1", "samples": turn_samples}))
    if interruption_samples:
        (folder / "synthetic_user_interruption.json").write_text(json.dumps(
            {"format": "fdb-mini-script/1", "subset": "synthetic_user_interruption",
             "samples": interruption_samples}))
    return folder


def test_bad_entry_fails_only_its_sample(tmp_path):
    src = scripts(tmp_path / "scripts", [{"text": "Hi there."}, {"txt": "oops"}, {"text": "?!"}],
                  [{"context": "Tell me a joke.", "interrupt": "Wait."}])
    cfg = write_config(tmp_path / "cfg.json", {"benchmark": "fdb-v1", "timing": {"synthetic_user_interruption":
                                                          {"gap_s": 7, "trailing_s": 15}}})
    r = run_inproc(["--input", src, "--output", tmp_path / "out", "--config", cfg])
    assert r.exit_code == 1
    errors = [line for line in r.stderr.splitlines() if line.startswith("error:")]
    assert errors == [
        "error: synthetic_turn_taking/1: bad script entry 1 in synthetic_turn_taking.json: "
        "missing text; unknown key(s) txt (a smooth_turn_taking entry has text)",
        "error: synthetic_turn_taking/2: piper produced no speech for '?!'",
    ]
    assert "Traceback" not in r.stderr
    stage = read_json(tmp_path / "out" / "stage.json")["samples"]
    assert {k: v["status"] for k, v in stage.items()} == {
        "synthetic_turn_taking/0": "ok", "synthetic_turn_taking/1": "failed",
        "synthetic_turn_taking/2": "failed", "synthetic_user_interruption/0": "ok"}
    manifest = read_json(tmp_path / "out" / "manifest.json")
    # the failed sample stays listed, marked failed, so later stages count it instead of losing it
    assert [(s["subset"], s["id"], s.get("status", "ok")) for s in manifest["samples"]] == \
        [("synthetic_turn_taking", "0", "ok"), ("synthetic_turn_taking", "1", "failed"),
         ("synthetic_turn_taking", "2", "failed"),
         ("synthetic_user_interruption", "0", "ok")]
    # the configured official timing: 7 s gap, 15 s trailing
    d = tmp_path / "out" / "samples" / "synthetic_user_interruption" / "0"
    s, r_ = read_json(d / "interrupt.json")[0]["timestamp"]
    context_s = read_json(d / "sample.json")["segments"][0]["end"]
    assert round(s - context_s, 6) == 7.0
    assert round(read_json(d / "sample.json")["duration_s"] - r_, 6) == 15.0
    assert manifest["source"]["settings"]["timing"]["synthetic_user_interruption"]["gap_s"] == 7.0


@pytest.mark.parametrize("content,config,message", [
    ("{not json", {}, "not readable JSON"),
    ('{"format": "other", "samples": [{}]}', {}, "format must be"),
    ('{"format": "fdb-mini-script/1", "samples": [{}]}', {"speed": 2}, "unknown tts-synth setting"),
    ('{"format": "fdb-mini-script/1", "samples": [{}]}', {"timing": {"nope_turn_taking": {}}},
     "timing given for unknown subset"),
    ('{"format": "fdb-mini-script/1", "samples": [{}], "timing": {"gap_s": 1}}', {}, "unknown key(s) gap_s"),
    ('{"format": "fdb-mini-script/1", "samples": [{}]}', {"engine": "nope"}, "unknown tts engine 'nope'"),
])
def test_stage_errors_are_one_line(tmp_path, content, config, message):
    src = tmp_path / "scripts"
    src.mkdir()
    (src / "synthetic_turn_taking.json").write_text(content)
    cfg = write_config(tmp_path / "cfg.json", {"benchmark": "fdb-v1", **config})
    r = run_inproc(["--input", src, "--output", tmp_path / "out", "--config", cfg])
    assert r.exit_code == 2
    assert r.output.count("\n") == 1 and r.output.startswith("error: ") and message in r.output


def test_synthesize_is_deterministic_and_trimmed():
    a = synthesize("Good morning.", 16000)
    b = synthesize("Good morning.", 16000)
    assert a.dtype == np.float32 and a.ndim == 1 and 0.3 * 16000 < len(a) < 2 * 16000
    assert np.array_equal(a, b)
    assert abs(a[0]) > TRIM_THRESHOLD and abs(a[-1]) > TRIM_THRESHOLD
    assert len(synthesize("Good morning.", 24000)) == pytest.approx(len(a) * 1.5, abs=30)


def test_missing_piper_gives_install_hint():
    code = ("import sys; sys.modules['piper'] = None\n"
            "from duplexeval_tts.engines import load_engine\n"
            "load_engine('piper', None)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert "MissingDependency" in r.stderr and "pip install piper-tts==1.8.0" in r.stderr


def test_missing_espeak_gives_install_hint(monkeypatch):
    import duplexeval_tts.espeak_engine as es
    monkeypatch.setattr(es.shutil, "which", lambda _name: None)
    with pytest.raises(MissingDependency) as exc:
        ENGINES.load("espeak-ng")()
    assert "apt-get install espeak-ng" in str(exc.value)


@pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng binary not installed")
def test_espeak_engine_when_installed(tmp_path):
    out = tmp_path / "e.wav"
    r = CliRunner().invoke(main, ["say", "Hello there.", "--engine", "espeak-ng", "--out", str(out)])
    assert r.exit_code == 0, r.output
    with pytest.raises(DuplexEvalError):
        ENGINES.load("espeak-ng")("xx-nope")
