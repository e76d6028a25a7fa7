"""`duplexeval eval` as a user meets it: the whole plan checked first, one-line errors, exit codes,
limits, concurrent runs, provenance."""

import json
import os
import subprocess
import threading

import pytest

from duplexeval_common.jsonio import read_json

from ..conftest import command


def dx(home, *args, env=None):
    return subprocess.run([command("duplexeval"), "--home", str(home), *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})})


def stage_dirs(home):
    store = home / "store"
    return [p for p in store.iterdir() if len(p.name) == 64] if store.is_dir() else []


@pytest.mark.parametrize("args, message", [
    (["--judge", "no-such-judge"], "benchmark fdb-v1 has no judge 'no-such-judge'"),
    (["--asr", "no-such-asr"], "unknown ASR backend 'no-such-asr'"),
    (["--model", "silence", "--runner-arg", "loud=1"], "unknown runner_args loud"),
    (["--asr-arg", "beam=3"], "backend_args"),
    # issue 22: ASR settings that silently changed the numbers, or failed every sample after the checks
    (["--model", "fixed-latency", "--asr-arg", "vad_threshold=7"],
     "stage asr (asr-aligner): ASR backend 'faster-whisper': backend_args vad_threshold must be a number "
     "from 0 to 1 (got 7)"),
    (["--model", "fixed-latency", "--asr-arg", "vad_threshold=-3"], "backend_args vad_threshold must be a number "
     "from 0 to 1 (got -3)"),
    (["--asr-arg", "beam_size=-5"], "ASR backend 'faster-whisper': backend_args beam_size must be an integer >= 1 "
     "(got -5)"),
    (["--asr-arg", "beam_size=0"], "backend_args beam_size must be an integer >= 1 (got 0)"),
    (["--asr", "stable-ts", "--asr-arg", "vad_threshold=7"], "ASR backend 'stable-ts': backend_args vad_threshold"),
    (["--limit", "0"], "--limit must be at least 1"),
    (["--model", "no-such-model"], "unknown model"),
    (["--stage-timeout", "-1"], "--stage-timeout must be a positive finite number"),
    (["--memory-gb", "inf"], "--memory-gb must be a positive finite number"),
    (["--image", "asr-aligner=x"], "--image applies to the docker runtime"),
])
def test_bad_settings_stop_before_any_stage_runs(tmp_path, args, message):
    r = dx(tmp_path, "eval", "--model", "silence", "--judge", "none", *args)
    assert r.returncode == 2, r.stderr
    errors = [line for line in r.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and message in errors[0], r.stderr
    assert "Traceback" not in r.stderr
    assert stage_dirs(tmp_path) == []  # nothing ran


def test_unreachable_endpoint_is_named(tmp_path):
    r = dx(tmp_path, "eval", "--model", "silence", "--judge", "official-gpt", "--limit", "1",
           "--judge-arg", "base_url=http://127.0.0.1:9/v1", env={"OPENAI_API_KEY": "k" * 20})
    assert r.returncode == 2
    assert "cannot reach http://127.0.0.1:9/v1" in r.stderr
    assert stage_dirs(tmp_path) == []


def test_stage_timeout_kills_and_records_the_reason(tmp_path):
    r = dx(tmp_path, "eval", "--model", "silence", "--judge", "none", "--stage-timeout", "1.5")
    assert r.returncode == 2, r.stderr
    assert "timed out after 1.5 s" in r.stderr
    run = read_json(tmp_path / "runs" / "latest" / "run.json")
    assert run["status"] == "failed" and "timed out" in run["stages"][0]["reason"]
    assert not (tmp_path / "store" / run["stages"][0]["key"] / "stage.json").exists()


def test_memory_limit_kills_and_records_the_reason(tmp_path):
    r = dx(tmp_path, "eval", "--model", "silence", "--judge", "none", "--memory-gb", "0.02")
    assert r.returncode == 2, r.stderr
    run = read_json(tmp_path / "runs" / "latest" / "run.json")
    assert "memory" in run["stages"][0]["reason"] and "GiB" in run["stages"][0]["reason"]


def test_two_evals_at_once_give_two_complete_identical_results(tmp_path):
    results = [None, None]

    def go(i):
        results[i] = dx(tmp_path, "eval", "--model", "fixed-latency", "--judge", "none", "--limit", "1")
    threads = [threading.Thread(target=go, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r.returncode == 0 for r in results), [r.stderr[-2000:] for r in results]
    runs = [read_json(p) for p in sorted((tmp_path / "runs").glob("2*/run.json"))]
    assert len(runs) == 2 and runs[0]["run_id"] != runs[1]["run_id"]
    assert all(r["status"] == "ok" for r in runs)
    assert [s["key"] for s in runs[0]["stages"]] == [s["key"] for s in runs[1]["stages"]]
    metrics = [(tmp_path / "store" / r["stages"][-1]["key"] / "metrics.json").read_bytes() for r in runs]
    assert metrics[0] == metrics[1]
    # each stage ran once: the other run waited for it and reused it
    ran = [sum(not s["cached"] for s in r["stages"]) for r in runs]
    assert sum(ran) == 5, ran


def test_provenance_is_recorded(tmp_path):
    r = dx(tmp_path, "eval", "--model", "silence", "--judge", "none", "--limit", "1")
    assert r.returncode == 0, r.stderr
    run_dir = (tmp_path / "runs" / "latest").resolve()
    run = read_json(run_dir / "run.json")
    env = run["environment"]
    assert len(env["git"]["commit"]) == 40 and isinstance(env["git"]["dirty"], bool)
    assert len(env["packages_sha256"]) == 64
    assert "numpy==" in (run_dir / "packages.txt").read_text()
    assert env["machine"]["cores"] >= 1 and env["machine"]["load_average_start"] is not None
    assert env["machine"]["load_average_end"] is not None
    assert set(run["limits"]) == {"timeout_s", "memory_gib", "cpus"}
    for var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        if var in os.environ:
            assert env["numeric"][var] == os.environ[var]
    stage = read_json(tmp_path / "store" / run["stages"][1]["key"] / "stage.json")
    assert stage["environment"]["numeric"] == env["numeric"]
    assert (run_dir / "logs" / "runner.log").is_file()
    # the console shows both columns for each subset
    assert "official" in r.stdout and "unified" in r.stdout and "95% interval" in r.stdout


def test_runs_and_show(tmp_path):
    assert dx(tmp_path, "eval", "--model", "silence", "--judge", "none", "--limit", "1").returncode == 0
    out = dx(tmp_path, "runs")
    assert out.returncode == 0 and "silence" in out.stdout
    show = dx(tmp_path, "show")
    assert show.returncode == 0 and "synthetic_pause_handling" in show.stdout
    bad = dx(tmp_path, "show", "../../etc")
    assert bad.returncode == 2 and bad.stderr.startswith("error: no run")
