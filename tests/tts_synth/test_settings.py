"""Every TTS engine declares what its constructor takes (SETTINGS), importable without its packages,
and holds every number to its range; the stage's voice specs are held to the same rate range."""

from __future__ import annotations

import json
import subprocess

import pytest

from duplexeval_common.errors import DuplexEvalError
from duplexeval_tts.engines import ENGINES, RATE, RATE_MAX, RATE_MIN, check_rate

from ..conftest import command
from ..settings_checks import declaration_problems, heavy_imports, refusal, refused_params

NAMES = ENGINES.names()
HEAVY = ("torch", "piper", "onnxruntime", "kokoro_onnx", "ChatTTS", "cosyvoice", "openai")


def test_every_engine_is_covered():
    assert set(NAMES) >= {"piper", "espeak-ng", "kokoro", "flite", "openai", "chattts", "cosyvoice2"}


@pytest.mark.parametrize("name", NAMES)
def test_every_engine_declares_what_its_constructor_takes(name):
    cls = ENGINES.load(name)
    assert declaration_problems(cls) == []
    assert cls.SETTINGS["rate"] is RATE   # one rate range for every engine


def test_the_declarations_load_without_any_engine_package():
    assert heavy_imports("duplexeval_tts.engines", "ENGINES", HEAVY) == []


@pytest.mark.parametrize("name, setting, value", refused_params(ENGINES))
def test_every_value_out_of_its_range_is_one_line(name, setting, value):
    refusal(f"tts engine {name!r}", ENGINES.load(name), setting, value, "settings")


def test_check_rate_is_the_declared_range():
    assert (RATE.ge, RATE.le) == (RATE_MIN, RATE_MAX)
    for good in (RATE_MIN, 1, RATE_MAX):
        assert check_rate("flite", good) == float(good)
    for bad in (RATE_MIN - 0.01, RATE_MAX + 0.01, float("inf"), None):
        with pytest.raises(DuplexEvalError):
            check_rate("flite", bad)


@pytest.mark.parametrize("spec, where", [({"engine": "piper", "rate": 3}, "voices/0/rate"),
                                         ({"engine": "piper", "rate": 0.1}, "voices/0/rate"),
                                         ({"engine": "piper", "weight": 0}, "voices/0/weight"),
                                         ({"engine": "piper", "weight": -1}, "voices/0/weight")])
def test_a_voice_spec_out_of_range_is_one_line_before_anything_runs(tmp_path, spec, where):
    cfg = tmp_path / "tts.json"
    cfg.write_text(json.dumps({"dataset": "fdb-mini", "voices": [spec]}))
    r = subprocess.run([command("tts-synth"), "check", "--config", str(cfg)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
    assert r.stderr.startswith(f"error: tts-synth config: at {where}: "), r.stderr
