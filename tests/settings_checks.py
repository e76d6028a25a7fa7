"""What every settings declaration (duplexeval_common.settings) is checked for, whatever declares it:
an ASR backend, a TTS engine, a judge (the component tests run these over their registries).

- `declaration_problems(cls)`: the class has SETTINGS; every number has a range, every default
  passes its own check, every setting says what it is; the names are the constructor's parameters,
  in order, with the same defaults (a parameter without one is a required setting).
- `refused_values(setting)`: values the setting must refuse: just past each bound, NaN and
  infinity for a number, a value of another type. A test hands each to check_kwargs and expects
  one line naming the setting.
"""

from __future__ import annotations

import inspect
import math
from typing import Any

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
