"""The runners: found through the `duplexeval.runners` entry points of the installed runner
packages (components/runners/<name>/), imported only when picked.

Each runner package declares one entry point naming a list of plain dicts in a module that
imports nothing heavy (its `registration.py`):

    {"name": "moshi", "target": "duplexeval_runner_moshi.runner:MoshiRunner",
     "summary": "...", "requires": ["torch", "moshi"], "hints": {"moshi": "pip install ..."}}

`requires` are the modules it needs beyond the core (checked before any sample runs, with the
hints as the one-line install advice). Two packages registering one name is an error naming
both. A runner package not installed here is not listed; the orchestrator's catalog knows
which package and image carries each model.
"""

from __future__ import annotations

import functools
from importlib import metadata

from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.registry import Registry

from . import deps

GROUP = "duplexeval.runners"
# Examiners (live.py): the automated user of a live session, registered the same way by the
# packages that carry one (entries {"name", "target", "summary", "requires", "hints"}).
EXAMINER_GROUP = "duplexeval.examiners"


def _load_group(group: str, kind: str) -> tuple[Registry, dict[str, list[str]], dict[str, str]]:
    reg = Registry(kind)
    requires: dict[str, list[str]] = {}
    origin: dict[str, str] = {}
    for ep in sorted(metadata.entry_points(group=group), key=lambda e: (e.name, e.value)):
        try:
            entries = ep.load()
        except Exception as exc:  # a broken package must not hide the others
            raise DuplexEvalError(f"{kind} package entry point {ep.name} = {ep.value} fails to load: "
                                  f"{type(exc).__name__}: {exc}") from None
        for e in entries:
            name = e["name"]
            if name in origin:
                raise DuplexEvalError(f"{kind} {name!r} is registered twice: by {origin[name]} and by "
                                      f"{ep.value}; uninstall one of the packages")
            origin[name] = ep.value
            deps.HINTS.update(e.get("hints", {}))
            req = list(e.get("requires", []))
            requires[name] = req
            reg.add(name, e["target"], e["summary"], _hint(req))
    return reg, requires, origin


@functools.lru_cache(maxsize=1)
def _loaded() -> tuple[Registry, dict[str, list[str]], dict[str, str]]:
    return _load_group(GROUP, "runner")


@functools.lru_cache(maxsize=1)
def _examiners() -> tuple[Registry, dict[str, list[str]], dict[str, str]]:
    return _load_group(EXAMINER_GROUP, "examiner")


def load_hints() -> None:
    """Every installed runner package's install hints (deps.hint asks for them)."""
    try:
        _loaded()
    except DuplexEvalError:
        pass


def _hint(modules: list[str]) -> str:
    return "; ".join(dict.fromkeys(deps.hint(m) for m in modules)) if modules else ""


class _Runners:
    """The registry, filled from the entry points on first use."""

    def __getattr__(self, attr):
        return getattr(_loaded()[0], attr)


RUNNERS = _Runners()


class _Examiners:
    def __getattr__(self, attr):
        return getattr(_examiners()[0], attr)


EXAMINERS = _Examiners()


def examiner_requires(name: str) -> list[str]:
    return _examiners()[1].get(name, [])


def requires(name: str) -> list[str]:
    return _loaded()[1].get(name, [])


def availability(name: str) -> tuple[bool, str]:
    """(available, note) for `duplex-runner list`, without importing anything heavy."""
    need = requires(name)
    absent = deps.missing(need)
    if not absent:
        return True, "available"
    return False, f"missing {', '.join(absent)}: {_hint(absent)}"
