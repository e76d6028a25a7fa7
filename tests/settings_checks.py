"""What every settings declaration (duplexeval_common.settings) is checked for, whatever declares it:
an ASR backend, a TTS engine, a judge (the component tests run these over their registries).

- `declaration_problems(cls)`: the class has SETTINGS; every number has a range, every default
  passes its own check, every setting says what it is; the names are the constructor's parameters,
  in order, with the same defaults (a parameter without one is a required setting).
- `refused_values(setting)`: values the setting must refuse: just past each bound, NaN and
  infinity for a number, a value of another type. A test hands each to check_kwargs and expects
  one line naming the setting.
- `refused_params(registry)`: (name, setting, value) of every refused value of every class a
  registry holds, as pytest parameters; `refusal(where, cls, setting, value, args)`: the one line
  check_kwargs refuses it with, checked to be one line naming the setting.
- `heavy_imports(module, registry, heavy)`: which of the heavy modules loading every declaration
  of a registry imports (in a fresh interpreter): none, for a registry whose declarations load
  without them.
"""

from __future__ import annotations

import inspect
import json
import math
import subprocess
import sys
from typing import Any

import pytest

from duplexeval_common.cli import check_kwargs
from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.settings import Setting, declared


def declaration_problems(cls: Any) -> list[str]:
    spec = declared(cls)
    if spec is None:
        return [f"{cls!r} declares no SETTINGS"]
    out = list(spec.declaration_problems())
    params = [p for p in inspect.signature(cls).parameters.values()
              if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    names = [p.name for p in params]
    if names != spec.names:
        out.append(f"SETTINGS names {spec.names} are not the constructor's parameters {names}")
    for p in params:
        if p.name not in spec:
            continue
        s = spec[p.name]
        if p.default is p.empty:
            if not s.required:
                out.append(f"{p.name}: the constructor requires it, the declaration does not")
        elif s.default != p.default or type(s.default) is not type(p.default):
            out.append(f"{p.name}: declared default {s.default!r}, the constructor's {p.default!r}")
    return out


def refused_values(s: Setting) -> list:
    """Values `s` must refuse (beside its choices and `also`)."""
    out: list = []
    integer = int in s.types and float not in s.types
    if s.numeric and not s.choices:
        step = 1 if integer else 0.5
        if s.ge is not None:
            out.append(s.ge - step)
        if s.gt is not None:
            out.append(int(s.gt) if integer and float(s.gt).is_integer() else s.gt)
        if s.le is not None:
            out.append(s.le + step)
        if s.lt is not None:
            out.append(s.lt)
        if float in s.types:
            out += [math.nan, math.inf, -math.inf]
        else:
            out.append(1.5)
    if s.choices:
        out.append("no-such-choice" if all(isinstance(c, str) for c in s.choices) else 12345)
    if not any(t in (str,) for t in s.types):
        out.append("1")
    elif not s.numeric and s.nonempty:
        out.append("  ")
    if not s.nullable:
        out.append(None)
    return [v for v in out if not any(v == a and type(v) is type(a) for a in s.also)]


def refused_params(registry) -> list:
    """pytest parameters (name, setting, value) of every value refused_values gives for every setting
    of every class in registry (its `names()` and `load(name)`)."""
    return [pytest.param(name, s.name, v, id=f"{name}-{s.name}={v!r}")
            for name in registry.names() for s in registry.load(name).SETTINGS.settings for v in refused_values(s)]


def refusal(where: str, cls: Any, setting: str, value: Any, args: str) -> str:
    """The message check_kwargs refuses {setting: value} with: one line, starting with
    `<where>: <args> <setting> `."""
    with pytest.raises(DuplexEvalError) as exc:
        check_kwargs(where, cls, {setting: value}, args)
    msg = str(exc.value)
    assert msg.startswith(f"{where}: {args} {setting} ") and "\n" not in msg
    return msg


def heavy_imports(module: str, registry: str, heavy: tuple[str, ...]) -> list[str]:
    """Which of heavy are imported once every declaration (SETTINGS) of `module.registry` is loaded,
    in a fresh interpreter."""
    code = (f"import json, sys; from {module} import {registry}; "
            f"[{registry}.load(n).SETTINGS for n in {registry}.names()]; "
            f"print(json.dumps([m for m in {heavy!r} if m in sys.modules]))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)
