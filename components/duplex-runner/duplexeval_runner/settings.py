"""Runner settings, declared once per runner: checks, one-line errors, profiles and README tables.

A runner declares its settings (`runner_args`) as one `Spec` of `Setting`s, its class attribute
`SETTINGS`:

    SETTINGS = Spec(*net.ENDPOINT,
                    Setting("window", int, 8, "lockstep: frames sent ahead of the output", ge=1, le=1000),
                    Setting("clock", str, "lockstep", "how output is placed", choices=("lockstep", "realtime")),
                    package=PACKAGE, profile="moshi")

and builds itself with `self.args, prof = self.SETTINGS.resolve(NAME, given)`. Everything else is
derived from that one declaration:

- the defaults (`Spec.defaults`), merged as runner defaults <- the profile's defaults <- the user's
  runner_args (profiles.py);
- the check of every value, before anything runs: its type, range (every number is finite and has
  one: a count at least 1, a probability in [0, 1]), choices, an existing file or folder; a problem is
  one DuplexEvalError line naming the runner, the setting and what it must be (`runner 'moshi-ws':
  window must be an integer from 1 to 1000 (got 0)`); an unknown name lists the known ones;
- the check of the runner's profile files (their names and values, `by_task` included);
- the settings table of the runner's README (`table`, `readme_block`; `duplex-runner settings-table
  RUNNER [--write]` regenerates it, and a test fails when a README differs from it).

A setting may be a path on this machine (`path`: "file", "dir" or "any"; the orchestrator makes it
absolute and mounts it in the docker runtime), a credential (`secret`: its name must be one the
secrets policy, duplexeval_common/secrets.py, treats as a credential, so it is redacted from every
record and moved out of stored configs; its value is never echoed in a message), operational
(`operational`: how a stage runs, not what it computes, left out of the stage key), or read from an
environment variable when it is null (`env`; the endpoint settings of net.py, `model_dir`).
Values are never converted: the runner gets what was given, so runner.json records it as given.
"""

from __future__ import annotations

import copy
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

from duplexeval_common import secrets
from duplexeval_common.errors import DuplexEvalError

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


@dataclass(frozen=True)
class Setting:
    """One runner setting: its name, type(s), default and a one-line description, with what it may be."""

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
    expect: str = ""                  # what `check` wants, in words (messages and the table)
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
        """What is wrong with the declaration itself (the tests run it for every runner)."""
        unknown = [t for t in self.types if t not in _PHRASE]
        if unknown:
            return f"type {unknown[0]!r} is none of {', '.join(t.__name__ for t in _PHRASE)}"
        if self.numeric and not self.choices and all(b is None for b in (self.ge, self.gt, self.le, self.lt)):
            return "a number needs a range (ge or gt, le or lt)"
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

    def problem(self, value: Any) -> str | None:
        """None when `value` is allowed, else one line: `<name> must be <what> (got <value>)`."""
        if value is None:
            if self.nullable:
                return None
            if self.required:
                return f"runner_arg {self.name} is required ({self.required})"
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
            return self._fields_problem(value)
        if self.path in ("file", "dir"):
            return path_problem(self.name, value, self.path)
        return None

    def _fields_problem(self, value: dict) -> str | None:
        kind = value["type"]
        inner = {s.name: s for s in self.fields[kind]}
        unknown = sorted(set(value) - set(inner) - {"type"})
        if unknown:
            return (f"{self.name} {kind} does not take {', '.join(unknown)} "
                    f"(known: {', '.join(sorted({'type', *inner}))})")
        for name, v in value.items():
            if name in inner:
                msg = inner[name].problem(v)
                if msg:
                    return f"{self.name}.{msg}"
        return None

    # -- the table --
    def type_text(self) -> str:
        words = [_WORD[t] for t in self.types] + [_json(a) for a in self.also]
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
    """Every setting of one runner, in the order its README lists them; `package` and `profile`
    when the runner has profile files (profiles.py): then `profile` is a setting too."""

    def __init__(self, *settings: Setting | Iterable[Setting], package: str | None = None,
                 profile: str | None = None):
        flat: list[Setting] = []
        for s in settings:
            flat.extend([s] if isinstance(s, Setting) else s)
        names = [s.name for s in flat]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice or "profile" in names:
            raise ValueError(f"settings declared twice (or named profile): {', '.join(twice or ['profile'])}")
        self.settings: tuple[Setting, ...] = tuple(flat)
        self.package = package
        self.profile = profile
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
        return sorted(self.names + (["profile"] if self.package else []))

    def problem(self, name: str, value: Any) -> str | None:
        return self._by_name[name].problem(value)

    def check(self, who: str, args: dict[str, Any], where: str = "") -> None:
        """Raise one line for the first problem of `args` (in declaration order), naming `who`."""
        unknown = sorted(set(args) - set(self._by_name))
        if unknown:
            raise DuplexEvalError(f"{who}: unknown runner_args {', '.join(unknown)} (known: {', '.join(self.known()) or 'none'})")
        for s in self.settings:
            if s.name in args:
                msg = s.problem(args[s.name])
                if msg:
                    raise DuplexEvalError(f"{who}: {where}{msg}")

    def resolve(self, runner: str, given: dict[str, Any]) -> tuple[dict[str, Any], Any]:
        """The runner's settings and its profile (None without profiles): the defaults, then the
        profile's (runner_arg `profile`, else the default profile), then `given`; every name and
        value checked (the profile's `by_task` values too). One line for the first problem."""
        from . import profiles
        who = f"runner {runner!r}"
        given = dict(given)
        unknown = sorted(set(given) - set(self.known()))
        if unknown:
            raise DuplexEvalError(f"{who}: unknown runner_args {', '.join(unknown)} (known: {', '.join(self.known()) or 'none'})")
        args = self.defaults()
        prof = None
        if self.package:
            prof = profiles.load(self.package, runner, given.pop("profile", None) or self.profile)
            self.check_profile(runner, prof)
            args.update(prof.defaults)
        args.update(given)
        self.check(who, args)
        return args, prof

    def check_profile(self, runner: str, prof: Any) -> None:
        """A profile's names and values (its defaults and every task's overrides), one line for the first problem."""
        who = f"runner {runner!r}"
        unknown = sorted(set(prof.defaults) - set(self._by_name))
        for task, over in prof.by_task.items():
            if not isinstance(over, dict):
                raise DuplexEvalError(f"{who}: profile {prof.name!r}: by_task {task} must be an object")
            unknown += [f"{task}.{k}" for k in sorted(set(over) - set(self._by_name))]
        if unknown:
            raise DuplexEvalError(f"{who}: profile {prof.name!r} sets unknown runner_args {', '.join(unknown)}")
        self.check(who, prof.defaults, where=f"profile {prof.name!r}: ")
        for task, over in prof.by_task.items():
            self.check(who, over, where=f"profile {prof.name!r} ({task}): ")

    def declaration_problems(self) -> list[str]:
        return [f"{s.name}: {msg}" for s in self.settings for msg in [s.declaration_problem()] if msg]


# -- what every runner shares -------------------------------------------------------------------

def frame_ms(default: float, sr: int, about: str) -> Setting:
    """The `frame_ms` setting of a runner fed at `sr` Hz: a whole number of samples there."""
    return Setting("frame_ms", float, default, about, gt=0, le=10000,
                   check=lambda v: whole_samples(v, sr) is not None,
                   expect=f"a number > 0 that is a whole number of samples at {sr} Hz "
                          f"(e.g. {_num(default)})")


# -- the README table ---------------------------------------------------------------------------

def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def table(runner_cls: Any) -> str:
    """The Markdown settings table of a runner class (its SETTINGS, its profiles, and for a network
    runner the core's settings), then a line per profile naming what it sets."""
    from . import profiles
    from .protocol import StreamRunner
    from .stage import CORE
    spec: Spec = runner_cls.SETTINGS
    rows = [("`" + s.name + "`", s.type_text(), s.default_text(), s.allowed_text(), s.meaning_text())
            for s in spec.settings]
    names = profiles.names(spec.package) if spec.package else []
    if spec.package:
        rows.append(("`profile`", "string", f"`{_json(spec.profile)}`", ", ".join(f"`{n}`" for n in names),
                     "the profile file whose values sit between these defaults and the runner_args "
                     f"(`{spec.package}/profiles/`)"))
    if isinstance(runner_cls, type) and issubclass(runner_cls, StreamRunner):
        rows += [("`" + s.name + "`", s.type_text(), s.default_text(), s.allowed_text(),
                  s.meaning_text() + "; taken by the core") for s in CORE.settings]
    out = ["| setting | type | default | allowed | meaning |", "|---|---|---|---|---|"]
    out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    if not rows:
        out = ["No settings."]
    for n in names:
        prof = profiles.load(spec.package, runner_cls.name, n)
        sets = ", ".join(f"`{k}`" for k in sorted(prof.defaults)) or "nothing"
        tasks = "; ".join(f"for {t}: " + ", ".join(f"`{k}`" for k in sorted(v)) for t, v in sorted(prof.by_task.items()))
        default = " (the default)" if n == spec.profile else ""
        out.append("")
        out.append(f"Profile `{n}`{default} sets {sets}" + (f"; {tasks}" if tasks else "") + ".")
    return "\n".join(out) + "\n"


def _markers(name: str) -> tuple[str, str]:
    return (f"<!-- settings-table {name}: generated from the runner's SETTINGS by "
            f"`duplex-runner settings-table {name} --write`; do not edit by hand -->",
            f"<!-- /settings-table {name} -->")


def readme_block(runner_cls: Any) -> str:
    begin, end = _markers(runner_cls.name)
    return f"{begin}\n{table(runner_cls)}{end}"


def readme_path(runner_cls: Any) -> Path:
    """The README.md of the runner package in the source tree (components/runners/<name>/)."""
    import sys
    return Path(sys.modules[runner_cls.__module__].__file__).resolve().parents[1] / "README.md"


def readme_current(text: str, name: str) -> str | None:
    """The generated block of runner `name` in a README's text, None when it has none."""
    begin, end = _markers(name)
    i = text.find(begin)
    j = text.find(end, i + 1) if i >= 0 else -1
    return text[i:j + len(end)] if i >= 0 and j >= 0 else None


def readme_update(text: str, runner_cls: Any) -> str:
    """`text` with the runner's block replaced by the one its declaration gives."""
    old = readme_current(text, runner_cls.name)
    if old is None:
        begin, _ = _markers(runner_cls.name)
        raise DuplexEvalError(f"runner {runner_cls.name!r}: its README has no settings table block "
                              f"(a line `{begin}` and its closing marker) to replace")
    return text.replace(old, readme_block(runner_cls), 1)
