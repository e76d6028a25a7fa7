"""Every judge declares its judge_args (SETTINGS), importable without torch, transformers or openai, and
every number is held to its range before anything loads: by the judge stage (`judge check`) for
fdb-v1 and mtr (and by the turn-segmenter's LLM, the same classes under llm.args:
tests/turn_segmenter/test_llm.py)."""

from __future__ import annotations

import json
import subprocess

import pytest

from duplexeval_judge.judges import JUDGES

from ..conftest import command
from ..settings_checks import declaration_problems, heavy_imports, refusal, refused_params

NAMES = JUDGES.names()
HEAVY = ("torch", "transformers", "openai", "gguf", "accelerate")


def test_every_judge_is_covered():
    assert set(NAMES) >= {"embedding-relevance", "openai", "official-gpt", "local-llm", "none"}


@pytest.mark.parametrize("name", NAMES)
def test_every_judge_declares_what_its_constructor_takes(name):
    assert declaration_problems(JUDGES.load(name)) == []


def test_the_declarations_load_without_any_model_package():
    assert heavy_imports("duplexeval_judge.judges", "JUDGES", HEAVY) == []


@pytest.mark.parametrize("name, setting, value", refused_params(JUDGES))
def test_every_value_out_of_its_range_is_one_line(name, setting, value):
    msg = refusal(f"judge {name!r}", JUDGES.load(name), setting, value, "judge_args")
    assert "sk-" not in msg


def _check(tmp_path, component: str, config: dict):
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps(config))
    env = {k: v for k, v in __import__("os").environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    return subprocess.run([command(component), "check", "--config", str(cfg)], capture_output=True, text=True,
                          timeout=120, env=env)


@pytest.mark.parametrize("component, config, message", [
    ("judge", {"benchmark": "fdb-v1", "judge": "openai", "judge_args": {"temperature": 5}},
     "judge 'openai': judge_args temperature must be a number from 0 to 2 or null (got 5)"),
    ("judge", {"benchmark": "fdb-v1", "judge": "official-gpt", "judge_args": {"timeout_s": 0}},
     "judge 'official-gpt': judge_args timeout_s must be a number > 0 and <= 3600 (got 0)"),
    ("judge", {"benchmark": "mtr", "judge": "openai", "judge_args": {"max_retries": -1}},
     "judge 'openai': judge_args max_retries must be an integer from 0 to 100 (got -1)"),
    ("judge", {"benchmark": "mtr", "judge": "local-llm", "judge_args": {"threads": 0}},
     "judge 'local-llm': judge_args threads must be an integer from 1 to 1024 (got 0)"),
])
def test_a_bad_judge_number_is_one_error_line_and_exit_2_before_anything_runs(tmp_path, component, config, message):
    r = _check(tmp_path, component, config)
    assert r.returncode == 2 and r.stdout == "" and r.stderr.splitlines() == [f"error: {message}"], r.stderr
