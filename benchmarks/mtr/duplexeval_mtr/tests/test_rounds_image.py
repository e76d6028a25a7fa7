"""The component images' build contexts (docker/stage_context.py, no Docker engine needed): each
holds the common library, its component and every benchmark package of the repository without its
datasets and tests (src/benchmarks/<folder>/, installed by docker/Dockerfile.benchmarks), and the
turn-segmenter's LLM path needs nothing of the judge component (the common library's client and
the MTR package's prompt). The wheel resolution (pip against the wheelhouse) is replaced by an
empty set: what is checked here is which sources and requirement files each context holds."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[4]


@pytest.fixture()
def stage_context(monkeypatch):
    spec = importlib.util.spec_from_file_location("duplexeval_docker_stage_context",
                                                  REPO / "docker" / "stage_context.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    monkeypatch.setattr(mod, "resolve", lambda py, wh, args: set())
    return mod


def files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("name", ["turn-segmenter", "judge", "asr-aligner", "aggregator", "tts-synth"])
def test_component_contexts_hold_the_benchmarks_without_datasets_or_tests(stage_context, tmp_path, name):
    ctx = tmp_path / name
    stage_context.stage(tmp_path / "wh", sys.executable, ctx, name)
    got = files(ctx)
    assert sorted(p.name for p in (ctx / "src").iterdir()) == ["benchmarks", "common", "component"]
    assert sorted(p.name for p in (ctx / "src" / "benchmarks").iterdir()) == \
        sorted(p.parent.name for p in (REPO / "benchmarks").glob("*/pyproject.toml"))
    assert "src/benchmarks/mtr/duplexeval_mtr/prompts/mtr_turn_segmentation.v1.json" in got
    assert not any(g.startswith("src/benchmarks/") and ("/datasets/" in g or "/tests/" in g) for g in got)
    assert not any("egg-info" in g or "__pycache__" in g for g in got)
    # a context folder reused for another component drops what the other one had
    stage_context.stage(tmp_path / "wh", sys.executable, ctx, "aggregator" if name != "aggregator" else "judge")
    assert sorted(p.name for p in (ctx / "src").iterdir()) == ["benchmarks", "common", "component"]


def test_the_segmenter_requirements_hold_no_torch(stage_context, tmp_path):
    ctx = tmp_path / "turn-segmenter"
    stage_context.stage(tmp_path / "wh", sys.executable, ctx, "turn-segmenter")
    reqs = (ctx / "reqs" / "component" / "deps.txt").read_text()
    assert "openai==" in reqs and "torch" not in reqs


def test_the_segmenter_llm_path_imports_without_the_judges_heavy_requirements():
    """What the image has: no torch, transformers or sentence embeddings; the segmenter's LLM
    path (duplexeval_mtr.judging, the common OpenAI client and the segmentation prompt) loads."""
    code = ("import sys\n"
            "for m in ('torch', 'transformers', 'tokenizers', 'safetensors', 'accelerate', 'gguf', 'duplexeval_judge'):\n"
            "    sys.modules[m] = None\n"
            "from duplexeval_mtr import judging as mtr\n"
            "from duplexeval_mtr.prompts import PROMPTS\n"
            "from duplexeval_common.llm.judges import OpenAIJudge\n"
            "from duplexeval_segmenter import llm, stage\n"
            "print(PROMPTS.get(mtr.SEGMENT).id)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "mtr-turn-segmentation"
