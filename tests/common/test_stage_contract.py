"""The stage contract: atomic per-sample outputs, records, failures, resume."""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from duplexeval_common import wavio
from duplexeval_common.jsonio import read_json
from duplexeval_common.hashing import sha256_file

TOY = Path(__file__).with_name("toy_stage.py")


def make_dataset(root: Path, n: int = 4) -> Path:
    rng = np.random.default_rng(1)
    samples = []
    for i in range(n):
        d = root / "samples" / "synthetic_pause_handling" / str(i)
        d.mkdir(parents=True)
        wavio.write_wav(d / "input.wav", rng.uniform(-0.5, 0.5, 1600 + i), 16000)
        samples.append({"subset": "synthetic_pause_handling", "id": str(i), "task": "pause_handling",
                        "duration_s": 0.1, "files": {"input.wav": sha256_file(d / "input.wav")}})
    (root / "manifest.json").write_text(json.dumps({"dataset": "toy", "samples": samples}))
    return root


def run_toy(inp: Path, out: Path, config: dict | None = None, *extra) -> subprocess.CompletedProcess:
    args = [sys.executable, str(TOY), "run", "--input", str(inp), "--output", str(out)]
    if config is not None:
        (out.parent / "cfg.json").write_text(json.dumps(config))
        args += ["--config", str(out.parent / "cfg.json")]
    return subprocess.run(args + list(extra), capture_output=True, text=True)


def outputs(out: Path) -> dict:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and p.name != "stage.json"}


def test_stage_writes_outputs_and_record(tmp_path):
    ds = make_dataset(tmp_path / "ds")
    r = run_toy(ds, tmp_path / "out")
    assert r.returncode == 0, r.stderr
    rec = read_json(tmp_path / "out" / "stage.json")
    assert rec["component"] == "toy" and set(rec["samples"]) == {f"synthetic_pause_handling/{i}" for i in range(4)}
    for rel, digest in rec["outputs"].items():
        assert sha256_file(tmp_path / "out" / rel) == digest
    assert read_json(tmp_path / "out" / "summary.json")["ok"][0] == "synthetic_pause_handling/0"
    assert "[toy] 4/4" in r.stderr  # progress


def test_the_record_holds_the_peak_memory_of_the_stage_and_of_its_children(tmp_path):
    ds = make_dataset(tmp_path / "ds", n=1)
    timings = []
    for name, cfg in (("plain", {}), ("holds", {"hold_mib": 300}), ("child", {"child_mib": 200})):
        (tmp_path / name).mkdir()
        r = run_toy(ds, tmp_path / name / "out", cfg)
        assert r.returncode == 0, r.stderr
        timings.append(read_json(tmp_path / name / "out" / "stage.json")["timings"])
    plain, holds, child = timings
    assert holds["peak_rss_mib"] >= 300 and holds["peak_rss_mib"] - plain["peak_rss_mib"] >= 250, timings
    assert child["peak_rss_children_mib"] >= 200 > child["peak_rss_mib"], timings
    assert plain["peak_rss_children_mib"] < 200, timings


def test_failed_sample_is_recorded_and_others_complete(tmp_path):
    ds = make_dataset(tmp_path / "ds")
    (ds / "samples/synthetic_pause_handling/2/input.wav").write_bytes(b"not a wav")
    r = run_toy(ds, tmp_path / "out")
    assert r.returncode == 1
    assert "error: synthetic_pause_handling/2: input.wav is not a readable WAV file" in r.stderr
    rec = read_json(tmp_path / "out" / "stage.json")
    assert rec["samples"]["synthetic_pause_handling/2"]["status"] == "failed"
    assert not (tmp_path / "out/samples/synthetic_pause_handling/2").exists()
    assert all(rec["samples"][f"synthetic_pause_handling/{i}"]["status"] == "ok" for i in (0, 1, 3))
    assert run_toy(ds, tmp_path / "out2", None, "--allow-failures").returncode == 0


def test_internal_error_fails_only_its_sample(tmp_path):
    ds = make_dataset(tmp_path / "ds")
    r = run_toy(ds, tmp_path / "out", {"fail": "synthetic_pause_handling/1"})
    rec = read_json(tmp_path / "out" / "stage.json")
    assert r.returncode == 1 and "internal error: RuntimeError: boom" in rec["samples"]["synthetic_pause_handling/1"]["reason"]
    assert rec["samples"]["synthetic_pause_handling/3"]["status"] == "ok"


def test_killed_stage_resumes_to_identical_outputs(tmp_path):
    ds = make_dataset(tmp_path / "ds", n=6)
    clean = tmp_path / "clean"
    assert run_toy(ds, clean).returncode == 0
    out = tmp_path / "out"
    (tmp_path / "cfg.json").write_text(json.dumps({"slow": 0.4}))
    proc = subprocess.Popen([sys.executable, str(TOY), "run", "--input", str(ds), "--output", str(out),
                             "--config", str(tmp_path / "cfg.json")], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(list(out.glob("samples/*/[0-9]*/_done.json"))) < 2:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done_before = sorted(p.parent.name for p in out.glob("samples/*/[0-9]*/_done.json"))
    assert 2 <= len(done_before) < 6 and not (out / "stage.json").exists()
    r = run_toy(ds, out)
    assert r.returncode == 0
    rec = read_json(out / "stage.json")
    assert sum(bool(s.get("cached")) for s in rec["samples"].values()) >= len(done_before)
    assert outputs(out) == outputs(clean)
    assert not list(out.rglob("*.partial")) and not list(out.rglob("*.tmp"))


def test_tampered_output_is_redone(tmp_path):
    ds = make_dataset(tmp_path / "ds")
    out = tmp_path / "out"
    run_toy(ds, out)
    good = (out / "samples/synthetic_pause_handling/0/info.json").read_bytes()
    (out / "samples/synthetic_pause_handling/0/info.json").write_text("{}")
    assert run_toy(ds, out).returncode == 0
    assert (out / "samples/synthetic_pause_handling/0/info.json").read_bytes() == good


def test_missing_input_folder_is_one_line_error(tmp_path):
    r = run_toy(tmp_path / "nope", tmp_path / "out")
    assert r.returncode == 2 and r.stderr.strip().startswith("error: input folder")
    assert len(r.stderr.strip().splitlines()) == 1


def test_shard_runs_a_subset(tmp_path):
    ds = make_dataset(tmp_path / "ds")
    r = run_toy(ds, tmp_path / "out", None, "--shard", "1/2")
    assert r.returncode == 0
    ids = sorted(p.name for p in (tmp_path / "out/samples/synthetic_pause_handling").iterdir())
    assert ids == ["1", "3"]
    assert (tmp_path / "out" / "stage.shard-1-of-2.json").is_file()


def test_sample_failed_upstream_is_skipped_with_reason(tmp_path):
    ds = make_dataset(tmp_path / "ds")
    (ds / "samples/synthetic_pause_handling/1/input.wav").write_bytes(b"bad")
    assert run_toy(ds, tmp_path / "a").returncode == 1
    # a second stage reading the first: the failed sample is skipped, not failed again
    r = subprocess.run([sys.executable, str(TOY), "run", "--input", str(ds), "--input", str(tmp_path / "a"),
                        "--output", str(tmp_path / "b")], capture_output=True, text=True)
    rec = read_json(tmp_path / "b" / "stage.json")
    assert r.returncode == 0
    st = rec["samples"]["synthetic_pause_handling/1"]
    assert st["status"] == "skipped" and st["reason"].startswith("failed upstream in toy: input.wav is not")


def test_setup_error_stops_the_stage_in_one_line(tmp_path):
    ds = make_dataset(tmp_path / "ds")
    r = run_toy(ds, tmp_path / "bad", {"setup_fails": True})
    assert r.returncode == 2 and r.stderr.strip().splitlines()[-1] == \
        "error: model not available: pip install toy-model"
    assert not list((tmp_path / "bad").rglob("*.wav"))


def test_progress_is_one_bar_on_a_terminal_and_lines_otherwise(tmp_path):
    """DUPLEXEVAL_PROGRESS=bar (what the orchestrator sets when its console is a terminal) gives
    one updating tqdm bar (carriage returns, no line per sample); `lines` one line per sample."""
    import os
    ds = make_dataset(tmp_path / "ds", n=4)
    env = dict(os.environ)
    args = [sys.executable, str(TOY), "run", "--input", str(ds)]
    bar = subprocess.run(args + ["--output", str(tmp_path / "o1")], capture_output=True,
                         env={**env, "DUPLEXEVAL_PROGRESS": "bar"})
    lines = subprocess.run(args + ["--output", str(tmp_path / "o2")], capture_output=True,
                           env={**env, "DUPLEXEVAL_PROGRESS": "lines"})
    assert bar.returncode == lines.returncode == 0
    b, l_ = bar.stderr.decode(), lines.stderr.decode()
    assert "\r" in b and "4/4" in b and "[toy] 1/4" not in b
    assert "\r" not in l_ and all(f"[toy] {i}/4" in l_ for i in range(1, 5))
