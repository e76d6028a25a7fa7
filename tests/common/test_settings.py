"""Settings declared once (duplexeval_common/settings.py) and what check_kwargs / build do with them.

The runners' declarations, profiles and README tables are tested in tests/duplex_runner/test_settings.py;
every ASR backend's, TTS engine's and judge's declaration in its component's tests (test_settings.py
there). Here: the generic checks and their one-line messages, the signature fallback, and the ranges
of every number in the stage config schemas.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from duplexeval_common.cli import build, check_kwargs
from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.settings import Setting, Spec, declared

from ..settings_checks import declaration_problems, refused_values

ROOT = Path(__file__).resolve().parents[2]


class Toy:
    """A configurable class as a backend is one."""

    SETTINGS = Spec(
        Setting("beam_size", int, 1, "a count", ge=1),
        Setting("threshold", float, 0.5, "a probability", ge=0, le=1),
        Setting("pad_ms", int, 100, "a duration", ge=0),
        Setting("mode", str, "a", "a choice", choices=("a", "b")),
        Setting("path", str, None, "where", required="give a path"),
        Setting("api_key", str, None, "a credential", secret=True, nonempty=True))

    def __init__(self, beam_size: int = 1, threshold: float = 0.5, pad_ms: int = 100, mode: str = "a",
                 path: str | None = None, api_key: str | None = None):
        self.args = dict(beam_size=beam_size, threshold=threshold, pad_ms=pad_ms, mode=mode, path=path)


class Plain:
    """One without SETTINGS: its signature is all that is checked."""

    def __init__(self, size: int = 1):
        self.size = size


@pytest.mark.parametrize("kwargs, message", [
    ({"beam_size": -5}, "ASR backend 'toy': backend_args beam_size must be an integer >= 1 (got -5)"),
    ({"beam_size": 0}, "ASR backend 'toy': backend_args beam_size must be an integer >= 1 (got 0)"),
    ({"beam_size": 2.0}, "ASR backend 'toy': backend_args beam_size must be an integer >= 1 (got 2.0)"),
    ({"threshold": 7}, "ASR backend 'toy': backend_args threshold must be a number from 0 to 1 (got 7)"),
    ({"threshold": -3}, "ASR backend 'toy': backend_args threshold must be a number from 0 to 1 (got -3)"),
    ({"threshold": math.nan}, "ASR backend 'toy': backend_args threshold must be a number from 0 to 1 (got nan)"),
    ({"pad_ms": -1}, "ASR backend 'toy': backend_args pad_ms must be an integer >= 0 (got -1)"),
    ({"mode": "c"}, "ASR backend 'toy': backend_args mode must be one of a, b (got 'c')"),
    ({"api_key": " "}, "ASR backend 'toy': backend_args api_key must be a non-empty string or null (got <redacted>)"),
    ({}, "ASR backend 'toy': backend_args path is required (give a path)"),
    ({"beam": 3}, "ASR backend 'toy': unknown backend_args beam (known: api_key, beam_size, mode, pad_ms, path, "
                  "threshold)"),
])
def test_check_kwargs_checks_a_declared_class_in_one_line(kwargs, message):
    with pytest.raises(DuplexEvalError) as exc:
        check_kwargs("ASR backend 'toy'", Toy, {"path": "/x", **kwargs} if kwargs else {}, "backend_args")
    assert str(exc.value) == message
    with pytest.raises(DuplexEvalError) as exc:   # the noun may end `what`, as callers wrote it before
        check_kwargs("ASR backend 'toy': backend_args", Toy, {"path": "/x", **kwargs} if kwargs else {})
    assert str(exc.value) == message


def test_build_passes_good_values_unchanged():
    t = build("ASR backend 'toy'", Toy, {"path": "/x", "threshold": 1, "beam_size": 4}, "backend_args")
    assert t.args["threshold"] == 1 and type(t.args["threshold"]) is int and t.args["beam_size"] == 4


def test_a_class_without_settings_is_checked_by_its_signature():
    assert declared(Plain) is None
    with pytest.raises(DuplexEvalError) as exc:
        check_kwargs("judge 'plain'", Plain, {"sise": 1}, "judge_args")
    assert str(exc.value) == ("judge 'plain': judge_args: got an unexpected keyword argument 'sise' "
                              "(known: size)")
    assert build("judge 'plain'", Plain, {"size": 3}, "judge_args").size == 3


def test_a_declaration_that_is_not_the_constructors_is_caught():
    class Drifted:
        SETTINGS = Spec(Setting("beam_size", int, 2, "a count", ge=1), Setting("extra", bool, True, "x"))

        def __init__(self, beam_size: int = 1):
            pass
    problems = declaration_problems(Drifted)
    assert any("not the constructor's parameters" in p for p in problems)
    assert any("beam_size: declared default 2" in p for p in problems)
    assert declaration_problems(Toy) == [] and declaration_problems(Plain) == [f"{Plain!r} declares no SETTINGS"]


def test_a_class_type_needs_words_and_is_checked():
    class Prompt:
        pass
    assert "expect" in Setting("prompt", Prompt, None, "a prompt").declaration_problem()
    s = Setting("prompt", Prompt, None, "a prompt", expect="a versioned prompt")
    assert s.declaration_problem() is None and s.problem(Prompt()) is None and s.problem(None) is None
    assert s.problem("p") == "prompt must be a versioned prompt or null (got 'p')"
    assert s.type_text() == "Prompt or null"


def test_every_refused_value_of_the_toy_is_refused():
    for s in Toy.SETTINGS.settings:
        for v in refused_values(s):
            assert s.problem(v), (s.name, v)


def test_a_bound_must_be_finite():
    assert "finite" in Setting("x", float, 1.0, "x", ge=0, le=math.inf).declaration_problem()


# --- the stage config schemas: every number has a range ----------------------------------------

def _numbers(node, path=""):
    if isinstance(node, dict):
        types = node.get("type") if isinstance(node.get("type"), list) else [node.get("type")]
        if {"number", "integer"} & set(types) and "enum" not in node:
            yield path, node
        for k, v in node.items():
            yield from _numbers(v, f"{path}/{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _numbers(v, f"{path}[{i}]")


CONFIG_SCHEMAS = sorted((ROOT / "schemas").glob("config-*.schema.json"))


@pytest.mark.parametrize("path", CONFIG_SCHEMAS, ids=[p.name for p in CONFIG_SCHEMAS])
def test_every_number_of_every_stage_config_has_a_range(path):
    """A probability in [0, 1], a count at least 1, a duration at least 0 (JSON has no NaN or
    infinity: the strict reader refuses them)."""
    missing = [where for where, node in _numbers(json.loads(path.read_text()))
               if not {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"} & set(node)]
    assert missing == [], f"{path.name}: numbers without a range: {', '.join(missing)}"
