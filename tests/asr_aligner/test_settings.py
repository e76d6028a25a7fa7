"""Every ASR backend's backend_args are declared (SETTINGS) and checked before anything loads.

Issue 22, "settings that silently change the numbers": `--asr-arg vad_threshold=7` (faster-whisper's
own VAD filter, not the stage's vad block) was accepted and made fixed-latency's response_rate_1s 0/1,
-3 moved latency, and beam_size=-5 or 0 passed every check and then failed every sample with a
TypeError. Now each is one `error:` line and exit 2 from `asr-aligner check` (what the orchestrator
runs before any stage); and every other number of every registered backend is held to its range.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from duplexeval_asr import vad
from duplexeval_asr.backends import BACKENDS
from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.schemas import load_schema

from ..conftest import command
from ..settings_checks import declaration_problems, heavy_imports, refusal, refused_params

NAMES = BACKENDS.names()
HEAVY = ("torch", "whisper", "faster_whisper", "ctranslate2", "stable_whisper", "whisper_timestamped", "nemo",
         "onnxruntime", "silero_vad", "transformers")


def test_every_backend_is_covered():
    assert set(NAMES) >= {"faster-whisper", "whisper-timestamped", "stable-ts", "parakeet", "precomputed"}


@pytest.mark.parametrize("name", NAMES)
def test_every_backend_declares_what_its_constructor_takes(name):
    """Names and defaults are the constructor's; each number has a range; each default passes."""
    assert declaration_problems(BACKENDS.load(name)) == []


def test_the_declarations_load_without_any_asr_package():
    assert heavy_imports("duplexeval_asr.backends", "BACKENDS", HEAVY) == []


@pytest.mark.parametrize("name, setting, value", refused_params(BACKENDS))
def test_every_value_out_of_its_range_is_one_line_naming_backend_and_setting(name, setting, value):
    refusal(f"ASR backend {name!r}", BACKENDS.load(name), setting, value, "backend_args")


def _check(tmp_path, config: dict):
    cfg = tmp_path / "asr.json"
    cfg.write_text(json.dumps(config))
    return subprocess.run([command("asr-aligner"), "check", "--config", str(cfg)], capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("backend, args, message", [
    ("faster-whisper", {"vad_threshold": 7}, "backend_args vad_threshold must be a number from 0 to 1 (got 7)"),
    ("faster-whisper", {"vad_threshold": -3}, "backend_args vad_threshold must be a number from 0 to 1 (got -3)"),
    ("faster-whisper", {"beam_size": -5}, "backend_args beam_size must be an integer >= 1 (got -5)"),
    ("faster-whisper", {"beam_size": 0}, "backend_args beam_size must be an integer >= 1 (got 0)"),
    ("faster-whisper", {"vad_min_silence_ms": -100}, "backend_args vad_min_silence_ms must be an integer >= 0"),
    ("stable-ts", {"vad_threshold": 7}, "backend_args vad_threshold must be a number from 0 to 1 (got 7)"),
    ("stable-ts", {"beam_size": 0}, "backend_args beam_size must be an integer >= 1 or null (got 0)"),
    ("whisper-timestamped", {"beam_size": -5}, "backend_args beam_size must be an integer >= 1 or null (got -5)"),
    ("whisper-timestamped", {"refine_whisper_precision": 0.01}, "backend_args refine_whisper_precision must be"),
    ("parakeet", {"batch_size": 0}, "backend_args batch_size must be an integer from 1 to 1024 (got 0)"),
])
def test_the_reported_cases_are_one_error_line_and_exit_2_before_anything_loads(tmp_path, backend, args, message):
    r = _check(tmp_path, {"backend": backend, "backend_args": args})
    assert r.returncode == 2 and r.stdout == "", r.stderr
    assert len(r.stderr.splitlines()) == 1 and r.stderr.startswith(f"error: ASR backend '{backend}': {message}"), \
        r.stderr


def test_good_values_pass_the_check(tmp_path):
    r = _check(tmp_path, {"backend": "faster-whisper", "backend_args": {"vad_threshold": 0.35, "beam_size": 5}})
    assert r.returncode == 0 and r.stdout == "ok\n", r.stderr


def test_the_vad_block_is_checked_by_its_declaration_and_the_schema_says_the_same():
    """The stage's `vad` block (vad.json's Silero settings): one declaration, the schema agrees."""
    props = load_schema("config-asr-aligner")["properties"]["vad"]["properties"]
    assert list(props) == vad.SETTINGS.names
    for s in vad.SETTINGS.settings:
        p = props[s.name]
        assert (p.get("minimum"), p.get("maximum")) == (s.ge, s.le), s.name
        assert p["type"] == ("integer" if s.types == (int,) else "number"), s.name
    with pytest.raises(DuplexEvalError, match=r"^asr-aligner: vad\.threshold must be a number from 0 to 1 \(got 7\)$"):
        vad.settings({"threshold": 7})
    with pytest.raises(DuplexEvalError, match=r"^asr-aligner: unknown vad settings thresh "):
        vad.settings({"thresh": 0.5})
    assert vad.settings({"threshold": 0.3})["threshold"] == 0.3
