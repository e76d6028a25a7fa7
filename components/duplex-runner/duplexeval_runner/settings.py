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

The generic part (`Setting`, the checks and their one-line messages, `declaration_problems`) is
duplexeval_common/settings.py, which ASR backends, TTS engines and judges declare their settings
with too; this module adds what only runners have: profiles (`Spec.resolve`, `check_profile`), the
messages' noun `runner_args`, and the README tables.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from duplexeval_common import settings as common
from duplexeval_common.errors import DuplexEvalError
# the generic part (Setting, the checks and their messages) is duplexeval_common.settings; these
# names stay importable from here for the runner packages
from duplexeval_common.settings import (  # noqa: F401
    FALSE, PATHS, SHOW_CHARS, TRUE, Setting, _json, _num, from_env, path_problem, tiny_seed, whole_samples)


class Spec(common.Spec):
    """Every setting of one runner, in the order its README lists them; `package` and `profile`
    when the runner has profile files (profiles.py): then `profile` is a setting too."""

    noun = "runner_args"
    kind = "runner"  # what the settings are of, in messages ("examiner" for an examiner's, live.py)

    def __init__(self, *settings: Setting | Iterable[Setting], package: str | None = None,
                 profile: str | None = None):
        super().__init__(*settings)
        if "profile" in self.names:
            raise ValueError("settings declared twice (or named profile): profile")
        self.package = package
        self.profile = profile

    def known(self) -> list[str]:
        return sorted(self.names + (["profile"] if self.package else []))

    def resolve(self, runner: str, given: dict[str, Any]) -> tuple[dict[str, Any], Any]:
        """The runner's settings and its profile (None without profiles): the defaults, then the
        profile's (runner_arg `profile`, else the default profile), then `given`; every name and
        value checked (the profile's `by_task` values too). One line for the first problem."""
        from . import profiles
        who = f"{self.kind} {runner!r}"
        given = dict(given)
        unknown = sorted(set(given) - set(self.known()))
        if unknown:
            raise DuplexEvalError(f"{who}: unknown {self.noun} {', '.join(unknown)} (known: {', '.join(self.known()) or 'none'})")
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
        unknown = sorted(set(prof.defaults) - set(self.names))
        for task, over in prof.by_task.items():
            if not isinstance(over, dict):
                raise DuplexEvalError(f"{who}: profile {prof.name!r}: by_task {task} must be an object")
            unknown += [f"{task}.{k}" for k in sorted(set(over) - set(self.names))]
        if unknown:
            raise DuplexEvalError(f"{who}: profile {prof.name!r} sets unknown runner_args {', '.join(unknown)}")
        self.check(who, prof.defaults, where=f"profile {prof.name!r}: ")
        for task, over in prof.by_task.items():
            self.check(who, over, where=f"profile {prof.name!r} ({task}): ")


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
