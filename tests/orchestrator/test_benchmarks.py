"""The benchmark registry: each benchmark one unit (datasets, judge, plan, scorer), resolved from
--benchmark and --dataset, mismatches refused with one line."""

from __future__ import annotations

import subprocess
import sys

import pytest

from duplexeval import benchmarks, catalog
from duplexeval.plan import Source
from duplexeval_common.errors import DuplexEvalError


def test_defaults_and_inference():
    b, ds = benchmarks.resolve(None, None)
    assert (b.name, ds) == ("fdb-v1", "fdb-mini")
    b, ds = benchmarks.resolve("mtr", None)
    assert (b.name, ds, b.default_judge) == ("mtr", "mtr-mini", "none")
    b, ds = benchmarks.resolve(None, "mtr-synth")
    assert (b.name, ds) == ("mtr", "mtr-synth")
    b, ds = benchmarks.resolve(None, "fdb-synth")
    assert b.name == "fdb-v1"


def test_mismatch_and_unknown_are_one_line():
    with pytest.raises(DuplexEvalError, match="belongs to benchmark 'fdb-v1', not 'mtr'"):
        benchmarks.resolve("mtr", "fdb-mini")
    with pytest.raises(DuplexEvalError, match="unknown benchmark 'fdb-v9'; known: fdb-v1, mtr"):
        benchmarks.resolve("fdb-v9", None)


def test_every_builtin_dataset_belongs_to_one_benchmark(monkeypatch):
    assert set(catalog.DATASETS_KNOWN) == {"fdb-mini", "fdb-synth", "mtr-mini", "mtr-synth"}
    fdb = benchmarks.get("fdb-v1")
    twin = benchmarks.Benchmark(**{**fdb.__dict__, "name": "twin"})
    monkeypatch.setitem(benchmarks._loaded, "twin", twin)
    monkeypatch.setitem(benchmarks.MODULES, "twin", "fdb_v1")
    with pytest.raises(DuplexEvalError, match="declared by benchmarks 'fdb-v1' and 'twin'"):
        benchmarks.builtin_datasets()


def test_mtr_plan_stages_and_inputs():
    b = benchmarks.get("mtr")
    specs = b.plan("silence", "mtr-mini", "faster-whisper", "local-llm", None, environ={})
    names = [s.name for s in specs]
    assert names == ["dataset", "dialogue-asr", "segment", "rounds", "runner", "asr", "judge", "aggregate"]
    by = {s.name: s for s in specs}
    assert isinstance(by["dataset"].inputs[0], Source) and by["dataset"].component == "tts-synth"
    assert by["dialogue-asr"].config["source"] == "dialogue" and by["dialogue-asr"].inputs == ["dataset"]
    assert by["rounds"].config == {"mode": "rounds"}
    assert by["runner"].inputs == ["dataset", "rounds"]
    assert by["judge"].config["benchmark"] == "mtr" and not by["judge"].network
    assert by["aggregate"].config == {"benchmark": "mtr"}
    assert by["aggregate"].inputs == ["dataset", "rounds", "runner", "asr", "judge"]
    # an LLM segmenter through the OpenAI client: the segment stage needs the network and the key by name
    llm = b.plan("silence", "mtr-mini", "faster-whisper", "none", None, environ={},
                 segmenter_args={"llm": {"backend": "openai", "args": {"model": "gpt-4o"}}})
    seg = next(s for s in llm if s.name == "segment")
    assert seg.network and seg.keys == ("OPENAI_API_KEY",)


def test_options_of_the_other_benchmark_are_refused():
    with pytest.raises(DuplexEvalError, match="--official-revision applies to benchmark fdb-v1"):
        benchmarks.get("mtr").plan("silence", "mtr-mini", "faster-whisper", "none", None, environ={},
                                   official_revision="d7336bd")
    with pytest.raises(DuplexEvalError, match="--segmenter-arg applies to benchmark mtr"):
        benchmarks.get("fdb-v1").plan("silence", "fdb-mini", "faster-whisper", "none", None, environ={},
                                      segmenter_args={"runs": 6})
    with pytest.raises(DuplexEvalError, match="--limit must be at least 1"):
        benchmarks.get("mtr").plan("silence", "mtr-mini", "faster-whisper", "none", 0, environ={})


def test_images_of_a_docker_run():
    def images(*args):
        return subprocess.run([sys.executable, "-m", "duplexeval.benchmarks.images", *args],
                              capture_output=True, text=True)
    r = images("mtr", "", "freeze-omni")
    assert r.returncode == 0 and r.stdout.split() == ["tts-synth", "asr-aligner", "turn-segmenter", "judge",
                                                      "aggregator", "runner-freeze-omni"]
    r = images("", "", "")
    assert r.returncode == 0 and "turn-segmenter" not in r.stdout.split() and r.stdout.split()[-1] == "runner-cascade"
    r = images("mtr", "fdb-mini", "silence")
    assert r.returncode == 2 and r.stderr.strip().startswith("error: dataset 'fdb-mini' belongs to")


def test_make_passes_the_benchmark_on():
    """`make eval BENCHMARK=mtr` and `make score BENCHMARK=mtr` (dry runs: the commands make would run)."""
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]

    def dry(*args):
        r = subprocess.run(["make", "-n", "-C", str(root), *args], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        return r.stdout
    out = dry("eval", "BENCHMARK=mtr", "MODEL=cascade")
    line = next(ln for ln in out.splitlines() if "duplexeval eval" in ln)
    assert "--benchmark mtr" in line and "--dataset" not in line and "--judge" not in line
    out = dry("eval")
    line = next(ln for ln in out.splitlines() if "duplexeval eval" in ln)
    assert "--benchmark" not in line and "--dataset" not in line  # the defaults: fdb-v1 on fdb-mini
    out = dry("score", "BENCHMARK=mtr", "TREE=t", "OUT=o")
    assert 'aggregator score --benchmark mtr --tree "t" --out "o"' in out and "aggregator fdb-v1" not in out
    out = dry("score", "TREE=t", "OUT=o")
    assert 'aggregator fdb-v1 --tree "t" --out "o"' in out
