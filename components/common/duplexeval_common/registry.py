"""Registries of pluggable things (runners, ASR and TTS backends, judges).

Entries name a module and attribute and are imported only when used, so an
optional backend's package is needed only by those who pick it; a missing one
gives an install hint instead of an ImportError.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from .errors import DuplexEvalError, MissingDependency


@dataclass(frozen=True)
class Entry:
    name: str
    target: str  # "package.module:attribute"
    summary: str
    install: str = ""  # hint shown when an import fails


class Registry:
    def __init__(self, kind: str):
        self.kind = kind
        self._entries: dict[str, Entry] = {}

    def add(self, name: str, target: str, summary: str, install: str = "") -> None:
        """Register `name`; a name already taken is a programming error (ValueError)."""
        if name in self._entries:
            raise ValueError(f"{self.kind} {name!r} is already registered "
                             f"(as {self._entries[name].target})")
        self._entries[name] = Entry(name, target, summary, install)

    def names(self) -> list[str]:
        return sorted(self._entries)

    def entries(self) -> list[Entry]:
        return [self._entries[n] for n in self.names()]

    def load(self, name: str) -> Any:
        entry = self._entries.get(name)
        if entry is None:
            raise DuplexEvalError(f"unknown {self.kind} {name!r}; known: {', '.join(self.names())}")
        module, _, attr = entry.target.partition(":")
        try:
            mod = importlib.import_module(module)
        except ImportError as exc:
            hint = entry.install or f"install the package that provides {exc.name}"
            raise MissingDependency(f"{self.kind} {name!r} ({exc.name} missing)", hint) from None
        return getattr(mod, attr)
