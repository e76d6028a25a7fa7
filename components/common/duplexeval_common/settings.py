"""Settings declared once, as typed `Setting`s in a `Spec`: checks, one-line errors, table texts.

Every configurable class of every component declares what it takes as its class attribute
`SETTINGS`: a runner its `runner_args` (duplexeval_runner/settings.py adds profiles and README
tables), an ASR backend its `backend_args`, a TTS engine its voice and rate, a judge its
`judge_args`:

    SETTINGS = Spec(Setting("beam_size", int, 1, "beam search width", ge=1, le=64),
                    Setting("vad_threshold", float, 0.5, "speech probability threshold", ge=0, le=1),
                    Setting("compute_type", str, "int8", "CTranslate2 compute type", choices=("int8", "float32")))

From that one declaration come:

- the defaults (`Spec.defaults`);
- the check of every value, before anything runs: its type, range (every number is finite and has
  one: a count at least 1, a probability in [0, 1], a duration at least 0), choices, an existing
  file or folder; a problem is one DuplexEvalError line naming who is configured, the setting and
  what it must be (`runner 'moshi-ws': window must be an integer from 1 to 1000 (got 0)`,
  `ASR backend 'faster-whisper': backend_args beam_size must be an integer >= 1 (got -5)`); an
  unknown name lists the known ones (`Spec.check`; duplexeval_common.cli.check_kwargs and `build`
  use it for a class that has SETTINGS);
- the check of the declaration itself (`Spec.declaration_problems`: each number has a range, each
  default passes its own check, each setting says what it is; the tests run it for every runner,
  backend, engine and judge);
- the texts of a settings table (`Setting.type_text`, `default_text`, `allowed_text`, `meaning_text`).

A setting may be a path on this machine (`path`: "file", "dir" or "any"), a credential (`secret`:
its name must be one the secrets policy, duplexeval_common/secrets.py, treats as a credential, so
it is redacted from every record; its value is never echoed in a message), operational
(`operational`: how a stage runs, not what it computes, left out of the stage key), or read from an
environment variable when it is null (`env`). Its type is one of JSON's (bool, int, float, str,
dict, list), or a class a component passes in itself (a resolved prompt) when `expect` says in
words what it is. Values are never converted: the class gets what was given, so records show it
as given.

This module imports nothing heavy: a declaration is importable where the class's packages
(whisper, torch, kokoro...) are not installed.
"""

from __future__ import annotations

import copy
import json
import math
import os
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from . import secrets
from .errors import DuplexEvalError

SHOW_CHARS = 80  # the longest value repr a message shows
_PHRASE = {bool: "true or false", int: "an integer", float: "a number", str: "a string", dict: "a JSON object",
           list: "a JSON list"}
_WORD = {bool: "boolean", int: "integer", float: "number", str: "string", dict: "object", list: "list"}
PATHS = ("file", "dir", "any")
TRUE, FALSE = {"1", "true", "yes", "on"}, {"", "0", "false", "no", "off"}  # flags in the environment


def _num(x: float) -> str:
    if isinstance(x, int):
        return str(x)
    return str(int(x)) if x.is_integer() and abs(x) < 1e15 else f"{x:g}"


def _json(v: Any) -> str:
    return json.dumps(v, ensure_ascii=False, sort_keys=True)


def _or(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def _singular(noun: str) -> str:
    return noun[:-1] if noun.endswith("s") else noun


def whole_samples(ms: Any, sr: int) -> int | None:
    """The samples of `ms` milliseconds at `sr` Hz when that is a whole number of at least one, else None."""
    if isinstance(ms, bool) or not isinstance(ms, (int, float)) or not math.isfinite(ms) or ms <= 0:
        return None
    n = ms * sr / 1000.0
    return int(round(n)) if abs(n - round(n)) <= 1e-6 and round(n) >= 1 else None


def path_problem(name: str, value: Any, kind: str) -> str | None:
    """`<name> '<value>' is not a file` (or folder) when the path does not name one here."""
    if kind == "file" and not (isinstance(value, str) and os.path.isfile(value)):
        return f"{name} {value!r} is not a file"
    if kind == "dir" and not (isinstance(value, str) and os.path.isdir(value)):
        return f"{name} {value!r} is not a folder"
    return None


def from_env(value: Any, env: str) -> Any:
    """`value` when given (not None), else the environment variable's stripped value (None when unset or blank)."""
    return value if value is not None else os.environ.get(env, "").strip() or None


TINY_PREFIX = "tiny:"  # a model_dir naming a runner's random-weight test model, `tiny:<seed>`


def tiny_seed(spec: Any) -> int | None:
    """`tiny:<seed>` -> seed (`tiny:` alone: 0); anything else -> None. A seed that is no
    non-negative whole number raises ValueError with the one-line reason."""
    if not isinstance(spec, str) or not spec.startswith(TINY_PREFIX):
        return None
    raw = spec[len(TINY_PREFIX):].strip() or "0"
    try:
        seed = int(raw)
    except ValueError:
        seed = -1
    if seed < 0:
        raise ValueError(f"model_dir {spec!r}: tiny:<seed> needs a non-negative whole number")
    return seed


@dataclass(frozen=True)
class Setting:
    """One setting: its name, type(s), default and a one-line description, with what it may be."""

    name: str
    type: type | tuple[type, ...]
    default: Any = None
    about: str = ""
    ge: float | None = None           # number ranges: >= ge, > gt, <= le, < lt
    gt: float | None = None
    le: float | None = None
    lt: float | None = None
    choices: tuple = ()               # the values allowed (compared with ==)
    also: tuple = ()                  # literal values accepted besides the type (e.g. "inf")
    null: bool = False                # None accepted (always when the default is None)
    nonempty: bool = False            # a string with something besides spaces
    required: str = ""                # None not accepted: what to give instead (the error says it)
    env: str = ""                     # the environment variable a null value is read from
    path: str = ""                    # "file", "dir" (must exist) or "any": a path on this machine
    secret: bool = False              # a credential (see the module docstring)
    operational: bool = False         # left out of the stage key
    check: Callable[[Any], bool] | None = None  # a further test of a value of the right type
    expect: str = ""                  # what `check` (or a class type) wants, in words (messages and tables)
    fields: dict | None = None        # an object told apart by its "type": {type: (Setting, ...)}

    @property
    def types(self) -> tuple[type, ...]:
        return self.type if isinstance(self.type, tuple) else (self.type,)

    @property
    def nullable(self) -> bool:
        return (self.null or self.default is None) and not self.required

    @property
    def numeric(self) -> bool:
        return any(t in (int, float) for t in self.types)

    def declaration_problem(self) -> str | None:
        """What is wrong with the declaration itself (the tests run it for every declaration)."""
        unknown = [t for t in self.types if t not in _PHRASE]
        if unknown and not (self.expect and all(isinstance(t, type) for t in unknown)):
            return (f"type {unknown[0]!r} is none of {', '.join(t.__name__ for t in _PHRASE)} "
                    "(a class needs `expect`: what it is, in words)")
        if self.numeric and not self.choices and all(b is None for b in (self.ge, self.gt, self.le, self.lt)):
            return "a number needs a range (ge or gt, le or lt)"
        for b in (self.ge, self.gt, self.le, self.lt):
            if b is not None and (isinstance(b, bool) or not isinstance(b, (int, float)) or not math.isfinite(b)):
                return f"a bound must be a finite number, not {b!r}"
        if self.secret and not secrets.is_secret_name(self.name):
            return "a secret's name must be one the secrets policy redacts (ending in api_key, token, password, ...)"
        if self.path and self.path not in PATHS:
            return f"path must be one of {', '.join(PATHS)}"
        if self.required and self.default is not None:
            return "a required setting has no default"
        if not self.about:
            return "no description"
        for kind, inner in (self.fields or {}).items():
            for sub in inner:
                msg = sub.declaration_problem()
                if msg:
                    return f"{kind}.{sub.name}: {msg}"
        if self.default is not None:
            return self.problem(self.default)
        return None

    # -- checking a value --
    def range_text(self) -> str:
        lo = f">= {_num(self.ge)}" if self.ge is not None else f"> {_num(self.gt)}" if self.gt is not None else ""
        hi = f"<= {_num(self.le)}" if self.le is not None else f"< {_num(self.lt)}" if self.lt is not None else ""
        if self.ge is not None and self.le is not None:
            return f"from {_num(self.ge)} to {_num(self.le)}"
        return " and ".join(x for x in (lo, hi) if x)

    def base(self) -> str:
        """What a value must be, in words, without the alternatives (null, `also`)."""
        if self.expect:
            return self.expect
        if self.choices:
            return "one of " + ", ".join(c if isinstance(c, str) else _json(c) for c in self.choices)
        if self.fields:
            return f"an object with type {_or(sorted(self.fields))}"
        words = []
        for t in self.types:
            w = "a non-empty string" if t is str and self.nonempty else _PHRASE[t]
            if t in (int, float) and self.range_text():
                w += " " + self.range_text()
            words.append(w)
        return _or(words)

    def expected(self) -> str:
        alts = [self.base(), *(_json(a) for a in self.also)]
        return _or(alts + (["null"] if self.nullable else []))

    def _typed(self, value: Any) -> bool:
        for t in self.types:
            if t is float and isinstance(value, (int, float)) and not isinstance(value, bool):
                return math.isfinite(value)
            if t is int and isinstance(value, int) and not isinstance(value, bool):
                return True
            if t not in (int, float) and isinstance(value, t):
                return True
        return False

    def _in_range(self, value: Any) -> bool:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return True
        return not ((self.ge is not None and value < self.ge) or (self.gt is not None and value <= self.gt)
                    or (self.le is not None and value > self.le) or (self.lt is not None and value >= self.lt))

    def show(self, value: Any) -> str:
        """The value as a message may show it: never a secret, at most SHOW_CHARS, credentials scrubbed."""
        if self.secret:
            return secrets.REDACTED
        text = repr(value)
        if len(text) > SHOW_CHARS:
            text = text[:SHOW_CHARS - 3] + "..."
        return secrets.scrub(text)

    def problem(self, value: Any, noun: str = "setting") -> str | None:
        """None when `value` is allowed, else one line: `<name> must be <what> (got <value>)`
        (a required one left out: `<noun> <name> is required (...)`; no noun: `<name> is required`)."""
        if value is None:
            if self.nullable:
                return None
            if self.required:
                return f"{noun + ' ' if noun else ''}{self.name} is required ({self.required})"
            return f"{self.name} must be {self.expected()}"
        if any(value == a and type(value) is type(a) for a in self.also):
            return None
        ok = (self._typed(value) and self._in_range(value)
              and not (self.nonempty and isinstance(value, str) and not value.strip())
              and not (self.choices and not any(value == c and type(value) is type(c) for c in self.choices))
              and not (self.fields and not (isinstance(value, dict) and value.get("type") in self.fields))
              and (self.check is None or bool(self.check(value))))
        if not ok:
            return f"{self.name} must be {self.expected()} (got {self.show(value)})"
        if self.fields:
            return self._fields_problem(value, noun)
        if self.path in ("file", "dir"):
            return path_problem(self.name, value, self.path)
        return None

    def _fields_problem(self, value: dict, noun: str) -> str | None:
        kind = value["type"]
        inner = {s.name: s for s in self.fields[kind]}
        unknown = sorted(set(value) - set(inner) - {"type"})
        if unknown:
            return (f"{self.name} {kind} does not take {', '.join(unknown)} "
                    f"(known: {', '.join(sorted({'type', *inner}))})")
        for name, v in value.items():
            if name in inner:
                msg = inner[name].problem(v, noun)
                if msg:
                    return f"{self.name}.{msg}"
        return None

    # -- a settings table --
    def type_text(self) -> str:
        words = [_WORD.get(t, getattr(t, "__name__", str(t))) for t in self.types] + [_json(a) for a in self.also]
        return _or(words + (["null"] if self.nullable else []))

    def allowed_text(self) -> str:
        if self.expect:
            return self.expect
        if self.choices:
            return ", ".join(f"`{c if isinstance(c, str) else _json(c)}`" for c in self.choices)
        if self.fields:
            return "; ".join(f"type `{k}`: " + ", ".join(f"`{s.name}` ({s.allowed_text() or s.type_text()})"
                                                         for s in self.fields[k]) for k in sorted(self.fields))
        parts = []
        if self.numeric and self.range_text():
            parts.append(self.range_text())
        if str in self.types and self.nonempty:
            parts.append("not empty")
        if self.path == "file":
            parts.append("an existing file")
        elif self.path == "dir":
            parts.append("an existing folder")
        return ", ".join(parts)

    def default_text(self) -> str:
        if self.required:
            return "required"
        text = f"`{_json(self.default)}`"
        return f"{text}: `${self.env}`" if self.env and self.default is None else text

    def meaning_text(self) -> str:
        notes = [self.about]
        if self.path:
            notes.append("a path on this machine")
        if self.secret:
            notes.append("a credential: never written to a file, log or record")
        if self.operational:
            notes.append("not part of the stage key")
        return "; ".join(notes)


class Spec:
    """Every setting of one configurable class, in the order its documentation lists them.

    `noun` is what the settings are called in messages about an unknown or a required one
    (`unknown runner_args m`, `runner_arg tree is required`); `check` may name another."""

    noun = "settings"

    def __init__(self, *settings: Setting | Iterable[Setting]):
        flat: list[Setting] = []
        for s in settings:
            flat.extend([s] if isinstance(s, Setting) else s)
        names = [s.name for s in flat]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"settings declared twice: {', '.join(twice)}")
        self.settings: tuple[Setting, ...] = tuple(flat)
        self._by_name = {s.name: s for s in flat}

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.settings]

    def __getitem__(self, name: str) -> Setting:
        return self._by_name[name]

    def __contains__(self, name: str) -> bool:
        return name in self._by_name

    def defaults(self) -> dict[str, Any]:
        return {s.name: copy.deepcopy(s.default) for s in self.settings}

    def known(self) -> list[str]:
        return sorted(self.names)

    def problem(self, name: str, value: Any) -> str | None:
        return self._by_name[name].problem(value)

    def check(self, who: str, args: dict[str, Any], where: str = "", noun: str | None = None,
              named: bool = False) -> None:
        """Raise one line for the first problem of `args` (unknown names first, then the values in
        declaration order), naming `who`: `<who>: <where><problem>`. `noun` (plural) names the
        settings in messages (default: the Spec's); with `named`, every problem starts with it
        (`backend_args beam_size must be ...`), else only an unknown or required one does."""
        noun = noun or self.noun
        unknown = sorted(set(args) - set(self._by_name))
        if unknown:
            raise DuplexEvalError(f"{who}: unknown {noun} {', '.join(unknown)} (known: {', '.join(self.known()) or 'none'})")
        for s in self.settings:
            if s.name in args:
                msg = s.problem(args[s.name], "" if named else _singular(noun))
                if msg:
                    raise DuplexEvalError(f"{who}: {where}{noun + ' ' if named else ''}{msg}")

    def declaration_problems(self) -> list[str]:
        return [f"{s.name}: {msg}" for s in self.settings for msg in [s.declaration_problem()] if msg]


def declared(cls: Any) -> Spec | None:
    """The class's (or a function's) SETTINGS when it declares them, else None."""
    spec = getattr(cls, "SETTINGS", None)
    return spec if isinstance(spec, Spec) else None
