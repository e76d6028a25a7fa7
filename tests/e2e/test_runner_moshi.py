"""End to end: `duplexeval eval --model moshi` with the tiny random-weight Moshi (MODEL_DIR=tiny:0).

The in-process runner runs in its own environment, .venvs/runner-moshi (`make setup` makes it with
scripts/setup-runner-venv.sh moshi), on the tiny Mimi + LM of duplexeval_runner_moshi/tiny.py: the
real moshi streaming code, whose audio is noise and whose text is token ids, so no metric value is
known by construction here (latency, barge-in and a dying server are exercised against the Moshi
protocol double through the moshi-ws runner). What is checked: the pipeline runs it from that
environment, every output is its input's length and rate, the records say what ran, a second eval
reuses every stage, and missing weights stop the run before any stage with a one-line hint.
"""

import pytest
import soundfile as sf

from duplexeval_common.jsonio import read_json, read_jsonl

from ..conftest import SUBSET_ARGS, assert_scored_then_cached, dx_model, tiny_eval_in_own_env

pytestmark = pytest.mark.own_env("runner-moshi")  # waits for it, or skips without it (the root conftest.py)

dx = dx_model

HINT = "huggingface-cli download kyutai/moshiko-pytorch-bf16 --local-dir"

ARGS = ["eval", "--model", "moshi", "--dataset", "fdb-mini", *SUBSET_ARGS, "--judge", "none", "--limit", "1",
        "--runner-arg", "threads=1"]


def test_tiny_moshi_through_the_pipeline_from_its_own_environment(tmp_path):
    run, runner, dataset, keys = tiny_eval_in_own_env(tmp_path, ARGS, "runner-moshi")
    assert len(keys) == 3
    for key in keys:
        i = sf.info(str(dataset / "samples" / key / "input.wav"))
        rec = read_json(runner / "samples" / key / "runner.json")
        assert rec["runner"] == "moshi" and rec["clock"] == "lockstep" and rec["deterministic"] is True
        assert rec["models"]["moshi"]["seed"] == 0 and rec["models"]["moshi"]["version"] == "0.2.13"
        assert rec["settings"]["torch"].startswith("2.13.0") and rec["profile"]["name"] == "moshi"
        assert rec["stats"]["steps"] == -(-round(i.frames * 24000 / i.samplerate) // 1920)
        events = read_jsonl(runner / "samples" / key / "events.jsonl")
        assert any(e["type"] == "text" for e in events)
    assert_scored_then_cached(tmp_path, run, ARGS)


def test_missing_weights_stop_the_run_with_a_one_line_hint(tmp_path):
    empty = tmp_path / "moshiko"
    empty.mkdir()
    r = dx(tmp_path, *ARGS, env={"MODEL_DIR": str(empty)})
    assert r.returncode == 2, r.stdout + r.stderr
    errors = [line for line in r.stderr.splitlines() if "error" in line.lower()]
    assert len(errors) == 1, r.stderr
    assert "model.safetensors" in errors[0] and HINT in errors[0], errors[0]
    run = read_json(tmp_path / "runs" / "latest" / "run.json")
    assert run["status"] == "failed" and run["stages"] == []   # checked before any stage ran
