"""A benchmark written into a temporary folder, registered by entry point, runs end to end.

docs/examples/hello-benchmark/ (the walkthrough of docs/adding-a-benchmark.md: one task, "does
the model speak within 2 s after the user's turn ends", a dataset of three synthesized samples, a
scorer with a Wilson interval, a report) is copied into a temporary folder with a `.dist-info`
that declares its `duplexeval.benchmarks` entry point, and that folder is put on PYTHONPATH:
nothing is installed, and no file of the repository changes. Then `duplexeval eval --benchmark
hello --model fixed-latency` runs it through every component (tts-synth builds its dataset,
asr-aligner transcribes, the aggregator runs its scorer), the HTML report is its report hook's, and
the run is archived, verified and rescored byte for byte. Values by construction: fixed-latency
starts its reply about 1 s after each end of user speech, so every sample is in time.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from duplexeval_common.jsonio import read_json
from duplexeval_common.stats import wilson

from ..conftest import command

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "docs" / "examples" / "hello-benchmark"


def repo_state() -> tuple[str, str]:
    """What the repository holds: `git status` (tracked changes and untracked files) and the
    hash of every tracked file's content as it is on disk."""
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=REPO,
                            capture_output=True, text=True, check=True).stdout
    files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    digest = subprocess.run(["git", "hash-object", "--stdin-paths"], cwd=REPO, capture_output=True, text=True,
                            input="\n".join(f for f in files.decode().split("\0") if f and (REPO / f).is_file()),
                            check=True).stdout
    return status, digest


@pytest.fixture(scope="module")
def hello(tmp_path_factory):
    """(env with the package on PYTHONPATH, the home, the package folder)."""
    root = tmp_path_factory.mktemp("hello")
    pkg = root / "site"
    shutil.copytree(EXAMPLE, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    info = pkg / "duplexeval_bench_hello-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: duplexeval-bench-hello\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text("[duplexeval.benchmarks]\nhello = duplexeval_hello:BENCHMARK\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(pkg), os.environ.get("PYTHONPATH")) if p)}
    home = root / "home"
    home.mkdir()
    return env, home, pkg


def dx(env, home, *args, timeout=900) -> subprocess.CompletedProcess:
    return subprocess.run([command("duplexeval"), "--home", str(home), *args], capture_output=True, text=True,
                          env=env, timeout=timeout)


@pytest.mark.html_report
def test_a_benchmark_package_in_a_temporary_folder_runs_end_to_end(hello, tmp_path):
    env, home, pkg = hello
    before = repo_state()
    listed = dx(env, home, "benchmarks")
    assert listed.returncode == 0, listed.stderr
    assert "hello: hello (example benchmark)" in listed.stdout
    assert "stages dataset -> runner -> asr -> aggregate" in listed.stdout

    r = dx(env, home, "eval", "--benchmark", "hello", "--model", "fixed-latency")
    assert r.returncode == 0, r.stdout + r.stderr
    run = read_json(home / "runs" / "latest" / "run.json")
    assert run["benchmark"] == "hello" and run["dataset"] == "hello-mini" and run["judge"] == "none"
    assert [s["name"] for s in run["stages"]] == ["dataset", "runner", "asr", "aggregate"]
    stages = {s["name"]: s for s in run["stages"]}
    # every stage that runs a hook names the benchmark, and its identity holds the package's digest
    for name in ("dataset", "asr", "aggregate"):
        assert stages[name]["config"]["benchmark"] == "hello"
        assert "+benchmark:hello:sha256:" in stages[name]["identity"]
    assert "benchmark" not in stages["runner"]["config"]
    metrics = read_json(home / "store" / stages["aggregate"]["key"] / "metrics.json")
    cell = metrics["subsets"]["speaks_in_time"]["unified"]["in_time_rate"]
    assert (cell["count"], cell["n"], cell["value"]) == (3, 3, 1.0)
    assert cell["interval"] == list(wilson(3, 3))
    gaps = [s["gap_s"] for s in metrics["samples"].values()]
    assert all(0.9 <= g <= 2.0 for g in gaps), gaps  # 1.0 s after the VAD's end, plus its detection
    assert run["summary"] == {"speaks_in_time": {"n": 3, "in_time_rate": 1.0}}
    assert "in_time_rate 1.0000" in r.stdout  # report.md's table, printed after the run

    # its report hook built the HTML report
    index = (home / "runs" / "latest" / "report.html").read_text()
    assert "hello: fixed-latency on hello-mini" in index and "speaks_in_time" in index
    sample = (home / "runs" / "latest" / "samples" / "speaks_in_time" / "0.html").read_text()
    # from its templates: the shared pieces as markup (the style, the timeline, the players), not escaped text
    assert "<h2>Samples</h2>" in index and "<style>" in index and "&lt;style" not in index
    assert 'class="timeline"' in sample and 'id="audio-user"' in sample and "&lt;" not in sample

    # archive, verify, rescore: the same bytes from the archived stages
    arc = tmp_path / "hello.tar.zst"
    assert dx(env, home, "archive", "latest", "-o", str(arc)).returncode == 0
    v = dx(env, home, "verify", str(arc))
    assert v.returncode == 0, v.stdout + v.stderr
    rs = dx(env, home, "rescore", str(arc), "-o", str(tmp_path / "rescored"))
    assert rs.returncode == 0, rs.stdout + rs.stderr
    assert (tmp_path / "rescored" / "metrics.json").read_bytes() == \
        (home / "store" / stages["aggregate"]["key"] / "metrics.json").read_bytes()

    # its own settings: checked before anything runs, and part of the aggregate stage's key
    bad = dx(env, home, "eval", "--benchmark", "hello", "--model", "fixed-latency", "--benchmark-arg", "max_gap_s=-1")
    assert bad.returncode == 2 and "benchmark hello: setting max_gap_s must lie in [0.0, 60.0]" in bad.stderr
    strict = dx(env, home, "eval", "--benchmark", "hello", "--model", "fixed-latency",
                "--benchmark-arg", "max_gap_s=0.5")
    assert strict.returncode == 0, strict.stderr
    rerun = read_json(home / "runs" / "latest" / "run.json")
    assert [s["cached"] for s in rerun["stages"]] == [True, True, True, False]
    m2 = read_json(home / "store" / rerun["stages"][-1]["key"] / "metrics.json")
    assert m2["subsets"]["speaks_in_time"]["unified"]["in_time_rate"]["count"] == 0  # 1 s > 0.5 s

    # nothing of the repository changed: the benchmark lives in its folder alone
    assert repo_state() == before


def test_editing_the_package_reruns_its_stages_only(hello, tmp_path):
    """The package's source digest is part of the identity of every stage that runs its hooks:
    a change to its scorer re-runs the stages that name it, not the runner (which names none)."""
    env, home, pkg = hello
    assert dx(env, home, "eval", "--benchmark", "hello", "--model", "fixed-latency").returncode == 0
    first = read_json(home / "runs" / "latest" / "run.json")
    score = pkg / "duplexeval_hello" / "score.py"
    score.write_text(score.read_text().replace('DEFINITIONS = "hello-1"', 'DEFINITIONS = "hello-2"'))
    r = dx(env, home, "eval", "--benchmark", "hello", "--model", "fixed-latency")
    assert r.returncode == 0, r.stderr
    second = read_json(home / "runs" / "latest" / "run.json")
    keys = lambda rec: {s["name"]: s["key"] for s in rec["stages"]}  # noqa: E731
    assert keys(first)["runner"] == keys(second)["runner"]
    for name in ("dataset", "asr", "aggregate"):
        assert keys(first)[name] != keys(second)[name], name
    m = read_json(home / "store" / keys(second)["aggregate"] / "metrics.json")
    assert m["definitions"] == "hello-2"
