"""The benchmark registry: each benchmark one unit (datasets, judge, plan, scorer), resolved from
--benchmark and --dataset, mismatches refused with one line."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from duplexeval import benchmarks, catalog
from duplexeval.plan import Planner, Source, plan_of
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
    with pytest.raises(DuplexEvalError, match="unknown benchmark 'fdb-v9'; known: .*fdb-v1.*mtr"):
        benchmarks.resolve("fdb-v9", None)


def test_every_builtin_dataset_belongs_to_one_benchmark(monkeypatch):
    from duplexeval_common import benchmarks as common
    known = catalog.builtin()
    assert {"fdb-mini", "fdb-synth", "mtr-mini", "mtr-synth"} <= set(known)
    assert set(known) == {d.name for b in common.all_benchmarks() for d in b.datasets}
    fdb = common.get("fdb-v1")
    twin = dataclasses.replace(fdb, name="twin", default=False)
    monkeypatch.setattr(common, "all_benchmarks", lambda: [fdb, twin])
    with pytest.raises(DuplexEvalError, match="declared by benchmarks 'fdb-v1' and 'twin'"):
        common.builtin_datasets()


def plan(bench: str, dataset: str, judge: str, limit=None, options=None, **request):
    p = Planner(bench, "silence", dataset, "faster-whisper", judge, limit=limit, environ={}, **request)
    return plan_of(benchmarks.get(bench), p, options)


def test_mtr_plan_stages_and_inputs():
    specs = plan("mtr", "mtr-mini", "local-llm")
    names = [s.name for s in specs]
    assert names == ["dataset", "dialogue-asr", "segment", "rounds", "runner", "asr", "judge", "aggregate"]
    by = {s.name: s for s in specs}
    assert isinstance(by["dataset"].inputs[0], Source) and by["dataset"].component == "tts-synth"
    assert by["dialogue-asr"].config["source"] == "dialogue" and by["dialogue-asr"].inputs == ["dataset"]
    assert by["rounds"].config == {"benchmark": "mtr", "mode": "samples"}
    assert by["runner"].inputs == ["dataset", "rounds"] and "benchmark" not in by["runner"].config
    assert by["judge"].config["benchmark"] == "mtr" and not by["judge"].network
    assert by["aggregate"].config == {"benchmark": "mtr"}
    assert by["aggregate"].inputs == ["dataset", "rounds", "runner", "asr", "judge"]
    # an LLM segmenter through the OpenAI client: the segment stage needs the network and the key by name
    llm = plan("mtr", "mtr-mini", "none", segmenter_args={"llm": {"backend": "openai", "args": {"model": "gpt-4o"}}})
    seg = next(s for s in llm if s.name == "segment")
    assert seg.network and seg.keys == ("OPENAI_API_KEY",)


def test_options_of_the_other_benchmark_are_refused():
    with pytest.raises(DuplexEvalError, match="benchmark mtr has no setting official_revision"):
        plan("mtr", "mtr-mini", "none", options={"official_revision": "d7336bd"})
    with pytest.raises(DuplexEvalError, match="--segmenter-arg applies to benchmarks with a turn-segmenter stage"):
        plan("fdb-v1", "fdb-mini", "none", segmenter_args={"runs": 6})
    with pytest.raises(DuplexEvalError, match="--limit must be at least 1"):
        plan("mtr", "mtr-mini", "none", limit=0)
    with pytest.raises(DuplexEvalError, match="benchmark mtr has no judge 'embedding-relevance'"):
        plan("mtr", "mtr-mini", "embedding-relevance")


def test_images_of_a_docker_run():
    def images(*args):
        return subprocess.run([sys.executable, "-m", "duplexeval.images", *args],
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
    assert 'aggregator score --benchmark mtr --tree "t" --out "o"' in out
    out = dry("score", "TREE=t", "OUT=o")
    assert 'aggregator score  --tree "t" --out "o"' in out  # no --benchmark: the default one
