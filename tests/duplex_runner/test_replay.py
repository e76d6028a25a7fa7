"""`replay`: the output.wav files of an official-layout Full-Duplex-Bench tree as the runner's output.

One dataset, one tree: good files (same rate; 24 kHz for a 16 kHz input; a little short) and one
broken file per unhappy path. Each broken one fails only its sample, with its exact one-line
reason; the good ones are written as usual."""

import hashlib
import json
import os

import numpy as np
import pytest
import soundfile as sf
from click.testing import CliRunner

from duplexeval_common import schemas
from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.jsonio import read_json, read_jsonl
from duplexeval_common.wavio import resample
from duplexeval_runner.cli import main
from duplexeval_runner_replay.runner import ReplayRunner

from .conftest import make_dataset

SUBSET = "synthetic_turn_taking"
SR = 16000
N = SR  # every input lasts 1.0 s


def tone(seconds, sr, f=330.0):
    t = np.arange(int(round(seconds * sr))) / sr
    return (0.4 * np.sin(2 * np.pi * f * t)).astype(np.float32)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("replay")
    user = (0.1 * np.random.default_rng(0).standard_normal(N)).astype(np.float32)
    data = make_dataset(root / "data", {(SUBSET, str(i)): (user, SR) for i in range(1, 9)})
    tree = root / "tree"
    d = {i: tree / SUBSET / str(i) for i in range(1, 9)}
    for p in d.values():
        p.mkdir(parents=True)
    sf.write(d[1] / "output.wav", tone(1.0, SR), SR, subtype="PCM_16")             # as is
    sf.write(d[2] / "output.wav", tone(1.0, 24000), 24000, subtype="PCM_16")       # 24 kHz, as FDB writes
    sf.write(d[3] / "output.wav", tone(0.95, SR), SR, subtype="PCM_16")            # 50 ms short: padded
    # 4: no output.wav
    sf.write(d[5] / "output.wav", tone(1.3, SR), SR, subtype="PCM_16")             # 0.3 s too long
    sf.write(d[6] / "output.wav", np.stack([tone(1.0, SR)] * 2, axis=1), SR, subtype="PCM_16")  # stereo
    outside = root / "elsewhere.wav"
    sf.write(outside, tone(1.0, SR), SR, subtype="PCM_16")
    os.symlink(outside, d[7] / "output.wav")                                        # a link leaving the tree
    (d[8] / "output.wav").write_bytes(b"RIFF\x00\x00\x00\x00WAVEnot audio")          # unreadable
    return {"root": root, "data": data, "tree": tree, "dirs": d, "outside": outside}


def run_stage(world, out, **args):
    cfg = out.parent / f"{out.name}.json"
    cfg.write_text(json.dumps({"runner": "replay", "runner_args": {"tree": str(world["tree"]), **args}}))
    return CliRunner().invoke(main, ["run", "--input", str(world["data"]), "--output", str(out),
                                     "--config", str(cfg), "--allow-failures"], catch_exceptions=False)


def reason(world, i, problem):
    return f"runner 'replay': {SUBSET}/{i}: {problem}"


def test_replay_copies_good_files_and_fails_each_bad_one_alone(world, tmp_path):
    out = tmp_path / "out"
    res = run_stage(world, out)
    assert res.exit_code == 0, res.output
    stage = read_json(out / "stage.json")
    status = {k.split("/")[1]: v for k, v in stage["samples"].items()}
    assert {i for i, s in status.items() if s["status"] == "ok"} == {"1", "2", "3"}
    path = {i: world["dirs"][i] / "output.wav" for i in world["dirs"]}
    assert status["4"]["reason"] == reason(world, 4, f"output.wav is missing from the tree ({path[4]})")
    assert status["5"]["reason"] == reason(world, 5, "output.wav lasts 1.300 s, the input 1.000 s: 0.300 s "
                                                     "apart, more than max_length_diff_s 0.1 s")
    assert status["6"]["reason"] == reason(world, 6, "output.wav has 2 channels, expected mono")
    assert status["7"]["reason"] == reason(world, 7, f"output.wav is a link leaving the tree ({path[7]} -> "
                                                     f"{os.path.realpath(world['outside'])})")
    assert status["8"]["reason"] == reason(world, 8, "output.wav is not readable audio (Error in WAV file. "
                                                     "No 'data' chunk marker.)")
    assert all("\n" not in s.get("reason", "") for s in status.values())

    expect = {"1": tone(1.0, SR), "2": resample(tone(1.0, 24000), 24000, SR),
              "3": np.concatenate([tone(0.95, SR), np.zeros(int(0.05 * SR), np.float32)])}
    for i, want in expect.items():
        d = out / "samples" / SUBSET / i
        audio, sr = sf.read(str(d / "output.wav"), dtype="float32")
        assert sr == SR and len(audio) == N
        np.testing.assert_allclose(audio, want, atol=3e-4)
        rec = read_json(d / "runner.json")
        assert schemas.problem("runner-record", rec) is None
        assert rec["runner"] == "replay" and rec["kind"] == "offline" and rec["clock"] == "simulated"
        assert rec["deterministic"] is True and rec["status"] == "ok"
        assert rec["settings"]["tree"] == str(world["tree"]) and rec["settings"]["resample"] is True
        src = rec["models"]["replay"]
        assert src["file"] == f"{SUBSET}/{i}/output.wav"
        assert src["sha256"] == hashlib.sha256(path[int(i)].read_bytes()).hexdigest()
        assert src["sr"] == (24000 if i == "2" else SR)
        assert rec["stats"]["resampled"] is (i == "2")
        assert rec["stats"]["length_diff_s"] == pytest.approx(-0.05 if i == "3" else 0.0, abs=1e-6)
        events = read_jsonl(d / "events.jsonl")
        assert all(schemas.problem("runner-event", e) is None for e in events)
        assert not any("wall" in e for e in events)


def test_a_rate_other_than_the_input_fails_without_resample(world, tmp_path):
    out = tmp_path / "strict"
    res = run_stage(world, out, resample=False)
    assert res.exit_code == 0, res.output
    status = read_json(out / "stage.json")["samples"]
    assert status[f"{SUBSET}/2"]["reason"] == reason(world, 2, "output.wav is 24000 Hz, the input 16000 Hz "
                                                               "(resample is false)")
    assert status[f"{SUBSET}/1"]["status"] == status[f"{SUBSET}/3"]["status"] == "ok"


def test_a_wider_tolerance_fits_a_long_file(world, tmp_path):
    out = tmp_path / "loose"
    assert run_stage(world, out, max_length_diff_s=0.5).exit_code == 0
    d = out / "samples" / SUBSET / "5"
    audio, _ = sf.read(str(d / "output.wav"), dtype="float32")
    np.testing.assert_allclose(audio, tone(1.3, SR)[:N], atol=3e-4)                 # trimmed to the input
    assert read_json(d / "runner.json")["stats"]["length_diff_s"] == pytest.approx(0.3)


def test_bad_settings_are_one_line_errors(world, tmp_path):
    with pytest.raises(DuplexEvalError, match="runner_arg tree is required"):
        ReplayRunner()
    with pytest.raises(DuplexEvalError, match="is not a folder"):
        ReplayRunner(tree=str(tmp_path / "nope"))
    with pytest.raises(DuplexEvalError, match="resample must be true or false"):
        ReplayRunner(tree=str(world["tree"]), resample="yes")
    with pytest.raises(DuplexEvalError, match="max_length_diff_s must be a number >= 0"):
        ReplayRunner(tree=str(world["tree"]), max_length_diff_s=-1)
    with pytest.raises(DuplexEvalError, match="unknown runner_args trees"):
        ReplayRunner(trees=str(world["tree"]))
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"runner": "replay", "runner_args": {"tree": str(tmp_path / "nope")}}))
    res = CliRunner().invoke(main, ["run", "--input", str(world["data"]), "--output", str(tmp_path / "o"),
                                    "--config", str(cfg)])
    assert res.exit_code == 2 and "is not a folder" in res.output and "Traceback" not in res.output
