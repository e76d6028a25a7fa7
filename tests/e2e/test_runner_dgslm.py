"""End to end: `duplexeval eval --model dgslm` with the tiny random-weight dGSLM (MODEL_DIR=tiny:0).

The in-process runner runs in its own environment, .venvs/runner-dgslm (`make setup` makes it with
scripts/setup-runner-venv.sh dgslm), on the tiny HuBERT + k-means + SpeechDLM + unit HiFi-GAN of
duplexeval_runner_dgslm/tiny.py: fairseq's classes with random weights, whose audio is noise, so no
metric value is known by construction here (tests/duplex_runner/test_dgslm.py checks the modes,
causality and teacher forcing by construction). What is checked: every Full-Duplex-Bench v1.0 task
of fdb-mini (--limit 1 each) runs through the pipeline from that environment, each sample in the
mode of its task (runner.json), every output is its input's length and rate, a second eval reuses
every stage, and a MODEL_DIR missing a file stops the run before any stage with one line naming it.
"""

import pytest
import soundfile as sf

from duplexeval_common.jsonio import read_json, read_jsonl

from ..conftest import assert_scored_then_cached, dx_model, tiny_eval_in_own_env


dx = dx_model

pytestmark = [pytest.mark.slow, pytest.mark.own_env("runner-dgslm")]

MODES = {"synthetic_pause_handling": ("teacher_force", ["teacher_force"]),
         "synthetic_backchannel": ("teacher_force", ["teacher_force"]),
         "synthetic_turn_taking": ("turn_taking", ["prefix", "respond"]),
         "synthetic_user_interruption": ("interruption", ["context", "respond", "interruption", "respond_2"])}

ARGS = ["eval", "--model", "dgslm", "--dataset", "fdb-mini", "--judge", "none", "--limit", "1",
        "--runner-arg", "threads=1", "--runner-arg", "hubert_context=10", "--runner-arg", "vocoder_context=8"]


def test_tiny_dgslm_runs_every_fdb_task_in_its_mode_from_its_own_environment(tmp_path):
    run, runner, dataset, keys = tiny_eval_in_own_env(tmp_path, ARGS, "runner-dgslm")
    assert sorted(k.split("/")[0] for k in keys) == sorted(MODES)
    for key in keys:
        i = sf.info(str(dataset / "samples" / key / "input.wav"))
        rec = read_json(runner / "samples" / key / "runner.json")
        assert rec["runner"] == "dgslm" and rec["clock"] == "lockstep" and rec["deterministic"] is True
        assert rec["models"]["dgslm"]["seed"] == 0 and rec["profile"]["name"] == "dgslm"
        mode, phases = MODES[key.split("/")[0]]
        assert rec["stats"]["mode"] == mode and rec["stats"]["mode_from"].startswith("task "), key
        assert [p["phase"] for p in rec["stats"]["phases"]] == phases, key
        assert rec["stats"]["steps"] == -(-round(i.frames * 16000 / i.samplerate) // 320)
        events = read_jsonl(runner / "samples" / key / "events.jsonl")
        assert [e["phase"] for e in events if e.get("event") == "phase"] == phases
    assert_scored_then_cached(tmp_path, run, ARGS)


def test_a_model_dir_missing_a_file_stops_the_run_with_one_line(tmp_path):
    folder = tmp_path / "dgslm"
    folder.mkdir()
    for name in ("hubert_fisher.pt", "hubert_fisher_km_500.bin", "speech_dlm_base.pt", "dict.unitA.txt",
                 "dict.unitB.txt", "config.json"):
        (folder / name).write_bytes(b"x")
    r = dx(tmp_path, *ARGS, env={"MODEL_DIR": str(folder)})
    assert r.returncode == 2, r.stdout + r.stderr
    errors = [line for line in r.stderr.splitlines() if "error" in line.lower()]
    assert len(errors) == 1 and "has no hifigan_vocoder (the unit HiFi-GAN vocoder checkpoint" in errors[0], r.stderr
    assert not (tmp_path / "store").exists() or not any((tmp_path / "store").iterdir())
