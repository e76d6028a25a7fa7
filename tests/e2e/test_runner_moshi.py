"""End to end: `duplexeval eval --model moshi` with the tiny random-weight Moshi (MODEL_DIR=tiny:0).

The in-process runner runs in its own environment, .venvs/runner-moshi (`make setup` makes it with
scripts/setup-runner-venv.sh moshi), on the tiny Mimi + LM of duplexeval_runner_moshi/tiny.py: the
real moshi streaming code, whose audio is noise and whose text is token ids, so no metric value is
known by construction here (latency, barge-in and a dying server are exercised against the Moshi
protocol double through the moshi-ws runner). What is checked: the pipeline runs it from that
environment, every output is its input's length and rate, the records say what ran, a second eval
reuses every stage, and missing weights stop the run before any stage with a one-line hint.
"""

import os

import soundfile as sf

from duplexeval_common.jsonio import read_json, read_jsonl

from ..conftest import dx_model, stage_dir
from ..conftest import SUBSET_ARGS


dx = dx_model

HINT = "huggingface-cli download kyutai/moshiko-pytorch-bf16 --local-dir"





ARGS = ["eval", "--model", "moshi", "--dataset", "fdb-mini", *SUBSET_ARGS, "--judge", "none", "--limit", "1",
        "--runner-arg", "threads=1"]


def test_tiny_moshi_through_the_pipeline_from_its_own_environment(tmp_path):
    first = dx(tmp_path, *ARGS, env={"MODEL_DIR": "tiny:0"})
    assert first.returncode == 0, first.stderr[-3000:]
    run = read_json(tmp_path / "runs" / "latest" / "run.json")
    assert run["status"] == "ok" and run["missing"] == {}
    (runner_stage,) = [s for s in run["stages"] if s["name"] == "runner"]
    assert runner_stage["component"] == "runner-moshi"
    assert runner_stage["provenance"]["environment"].endswith(os.path.join(".venvs", "runner-moshi"))
    assert runner_stage["config"]["runner_args"]["model_dir"] == "tiny:0"   # from MODEL_DIR

    runner = stage_dir(tmp_path, run, "runner")
    dataset = stage_dir(tmp_path, run, "dataset")
    keys = sorted(read_json(runner / "stage.json")["samples"])
    assert len(keys) == 3
    for key in keys:
        i = sf.info(str(dataset / "samples" / key / "input.wav"))
        o = sf.info(str(runner / "samples" / key / "output.wav"))
        assert (o.frames, o.samplerate) == (i.frames, i.samplerate), key
        rec = read_json(runner / "samples" / key / "runner.json")
        assert rec["runner"] == "moshi" and rec["clock"] == "lockstep" and rec["deterministic"] is True
        assert rec["models"]["moshi"]["seed"] == 0 and rec["models"]["moshi"]["version"] == "0.2.13"
        assert rec["settings"]["torch"].startswith("2.13.0") and rec["profile"]["name"] == "moshi"
        assert rec["stats"]["steps"] == -(-round(i.frames * 24000 / i.samplerate) // 1920)
        events = read_jsonl(runner / "samples" / key / "events.jsonl")
        assert any(e["type"] == "text" for e in events)
    metrics = read_json(stage_dir(tmp_path, run, "aggregate") / "metrics.json")["subsets"]
    assert all(m["coverage"] == 1 for m in metrics.values())

    again = dx(tmp_path, *ARGS, env={"MODEL_DIR": "tiny:0"})
    assert again.returncode == 0, again.stderr[-3000:]
    run2 = read_json(tmp_path / "runs" / "latest" / "run.json")
    assert all(s["cached"] for s in run2["stages"])


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
