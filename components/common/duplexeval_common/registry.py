"""Registries of pluggable things: runners, ASR and TTS backends, judges, segmenters, benchmarks,
metrics, models. One style for all of them:

- an entry is a name, a target (`package.module:attribute`, imported only when the entry is
  used), a one-line summary, and what it needs beyond its component (`requires`: modules);
- entries come from `add` calls of the component that owns the registry, or from the entry
  points of an installed group (`group=`): each entry point is one entry, named as the entry
  point and targeting its value (its distribution is the entry's origin), or, for a group whose
  entry points name a list of entry dicts (`expand=True`, the runner packages), those entries;
- a second entry under a name already taken is refused with one line naming both origins;
- a target whose import fails answers with an install hint (MissingDependency, exit 2) instead of
  an ImportError; the hint is the entry's own, else derived from the pinned requirements of the
  component that declares the entry (optional.pinned_hint), never restated by hand.
"""

from __future__ import annotations

import importlib
import threading
from dataclasses import dataclass, field
from typing import Any, Iterable

from .errors import DuplexEvalError, MissingDependency


@dataclass(frozen=True)
class Entry:
    name: str
    target: str  # "package.module:attribute"
    summary: str = ""
    install: str = ""  # hint shown when an import fails ("" = derived from `requires` and the pins)
    requires: tuple[str, ...] = ()   # modules the entry needs beyond its component
    origin: str = ""                 # who registered it (a distribution, a module)
    extra: dict = field(default_factory=dict, compare=False)  # whatever else the registrant declared


class Registry:
    def __init__(self, kind: str, group: str | None = None, expand: bool = False,
                 pins: str | None = None):
        """kind: what an entry is ("judge", "ASR backend"); group: an entry-point group whose
        entries are discovered on first use; expand: that group's entry points name lists of entry
        dicts; pins: the module whose component's requirements.txt pins the `requires`."""
        self.kind = kind
        self.group = group
        self.expand = expand
        self.pins = pins
        self._entries: dict[str, Entry] = {}
        self._objects: dict[str, Any] = {}
        self._discovered = group is None
        self._lock = threading.RLock()

    # -- registering --------------------------------------------------------------------------

    def add(self, name: str, target: str, summary: str = "", install: str = "",
            requires: Iterable[str] = (), origin: str = "", **extra: Any) -> None:
        """Register `name`; a name already taken is refused with one line naming both origins."""
        with self._lock:
            if name in self._entries:
                old = self._entries[name]
                raise DuplexEvalError(f"{self.kind} {name!r} is registered twice: by "
                                      f"{old.origin or old.target} and by {origin or target}")
            self._entries[name] = Entry(name, target, summary, install, tuple(requires), origin, dict(extra))

    def _discover(self) -> None:
        if self._discovered:
            return
        with self._lock:
            if self._discovered:
                return
            from importlib import metadata
            eps = sorted(metadata.entry_points(group=self.group), key=lambda e: (e.name, e.value))
            for ep in eps:
                origin = f"{ep.dist.name if ep.dist else '?'} ({ep.value})"
                if not self.expand:
                    self.add(ep.name, ep.value, origin=origin)
                    continue
                try:
                    rows = ep.load()
                except Exception as exc:  # a broken package must not hide the others' names
                    raise DuplexEvalError(f"{self.kind} entry point {ep.name} = {ep.value} fails to load: "
                                          f"{type(exc).__name__}: {exc}") from None
                for row in rows:
                    row = dict(row)
                    self.add(row.pop("name"), row.pop("target"), row.pop("summary", ""), row.pop("install", ""),
                             row.pop("requires", ()), origin, **row)
            self._discovered = True

    # -- reading ------------------------------------------------------------------------------

    def names(self) -> list[str]:
        self._discover()
        return sorted(self._entries)

    def entries(self) -> list[Entry]:
        return [self._entries[n] for n in self.names()]

    def __contains__(self, name: str) -> bool:
        self._discover()
        return name in self._entries

    def entry(self, name: str) -> Entry:
        self._discover()
        entry = self._entries.get(name)
        if entry is None:
            raise DuplexEvalError(f"unknown {self.kind} {name!r}; known: {', '.join(self.names()) or 'none'}")
        return entry

    def hint(self, name: str, missing: str | None = None) -> str:
        """The install hint of an entry: its own, else derived from the pins of its `requires`."""
        from .optional import fallback_hint, pinned_hint
        entry = self.entry(name)
        if entry.install:
            return entry.install
        need = list(entry.requires) or ([missing] if missing else [])
        derived = pinned_hint(need, entry.target.partition(":")[0], self.pins) if need else ""
        return derived or fallback_hint(missing or entry.target)

    def load(self, name: str) -> Any:
        """The entry's target, imported now (cached); a missing package is one line with its hint."""
        entry = self.entry(name)
        with self._lock:
            if name in self._objects:
                return self._objects[name]
        module, _, attr = entry.target.partition(":")
        try:
            mod = importlib.import_module(module)
        except ImportError as exc:
            raise MissingDependency(f"{self.kind} {name!r} ({exc.name} missing)", self.hint(name, exc.name)) from None
        try:
            obj = getattr(mod, attr) if attr else mod
        except AttributeError:
            raise DuplexEvalError(f"{self.kind} {name!r}: {module} has no attribute {attr!r}") from None
        with self._lock:
            self._objects[name] = obj
        return obj
