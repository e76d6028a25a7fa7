"""The turn-segmenter image's build context (docker/stage_context.py, no Docker engine needed):
it holds the duplexeval-judge library the segmenter imports (src/libs/judge, installed by
components/turn-segmenter/Dockerfile with --no-deps), and no other component's context changes.
The wheel resolution (pip against the wheelhouse) is replaced by an empty set: what is checked
here is which sources and requirement files each context holds."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tomllib
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


def test_the_turn_segmenter_context_holds_the_judge_library(stage_context, tmp_path):
    assert [d.name for d in stage_context.component_libraries("turn-segmenter")] == ["judge"]
    ctx = tmp_path / "turn-segmenter"
    stage_context.stage(tmp_path / "wh", sys.executable, ctx, "turn-segmenter")
    got = files(ctx)
    with open(ctx / "src" / "libs" / "judge" / "pyproject.toml", "rb") as f:
        assert tomllib.load(f)["project"]["name"] == "duplexeval-judge"
    assert "src/libs/judge/prompts/mtr_turn_segmentation.v1.json" in got
    assert "src/libs/judge/duplexeval_judge/mtr.py" in got
    assert not any("egg-info" in g or "__pycache__" in g for g in got)
    assert sorted(p.name for p in (ctx / "src").iterdir()) == ["common", "component", "libs"]
    assert sorted(p.name for p in (ctx / "src" / "libs").iterdir()) == ["judge"]
    assert "src/component/duplexeval_segmenter/rounds.py" in got
    # the component's requirements, not the judge's (no torch in this image)
    reqs = (ctx / "reqs" / "component" / "deps.txt").read_text()
    assert "openai==" in reqs and "torch" not in reqs
    # the image's own Dockerfile installs exactly that folder, without dependencies
    dockerfile = (REPO / "components" / "turn-segmenter" / "Dockerfile").read_text()
    assert "source=src/libs/judge" in dockerfile and "--no-deps" in dockerfile
    assert 'ENTRYPOINT ["/opt/venv/bin/turn-segmenter"]' in dockerfile


@pytest.mark.parametrize("name", ["judge", "asr-aligner", "aggregator", "tts-synth"])
def test_other_component_contexts_hold_no_libraries(stage_context, tmp_path, name):
    assert stage_context.component_libraries(name) == []
    ctx = tmp_path / name
    stage_context.stage(tmp_path / "wh", sys.executable, ctx, name)
    assert sorted(p.name for p in (ctx / "src").iterdir()) == ["common", "component"]
    # a context folder reused after a turn-segmenter staging drops the stale libs
    stage_context.stage(tmp_path / "wh", sys.executable, ctx, "turn-segmenter")
    assert (ctx / "src" / "libs" / "judge").is_dir()
    stage_context.stage(tmp_path / "wh", sys.executable, ctx, name)
    assert not (ctx / "src" / "libs").exists()


def test_the_judge_modules_the_segmenter_uses_import_without_the_judges_heavy_requirements():
    """What the image has: no torch, transformers or sentence embeddings; the segmenter's LLM
    path (duplexeval_mtr.judging, its OpenAI client and the segmentation prompt) still loads."""
    code = ("import sys\n"
            "for m in ('torch', 'transformers', 'tokenizers', 'safetensors', 'accelerate', 'gguf'):\n"
            "    sys.modules[m] = None\n"
            "from duplexeval_judge import mtr, prompts\n"
            "from duplexeval_common.llm.judges import OpenAIJudge\n"
            "from duplexeval_segmenter import llm, rounds, stage\n"
            "print(prompts.get(mtr.SEGMENT).id)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "mtr-turn-segmentation"
