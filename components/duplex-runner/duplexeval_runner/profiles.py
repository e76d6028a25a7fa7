"""Profile files: a runner's defaults as the official scripts set them, one JSON file each.

A runner package keeps them in `<package>/profiles/<name>.json`:

    {"about": "...", "source": "upstream repository @ commit, file",
     "defaults": {<runner_args>...},
     "by_task": {"user_interruption": {<runner_args>...}}}

`defaults` sit between the runner's own defaults (its SETTINGS, settings.py) and the user's
runner_args; `by_task` overrides them for samples of one task (the task the sample's dataset
declares; e.g. the Full-Duplex-Bench scripts' per-task prompts), except where the user set that
argument. Their names and values are checked against the runner's declaration when it is built
(`Spec.resolve`), every task's included. The file's name, sha256 and values go to runner.json
(`profile`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from importlib import resources

from duplexeval_common.errors import DuplexEvalError

KEYS = {"about", "source", "defaults", "by_task"}


@dataclass(frozen=True)
class Profile:
    name: str
    file: str
    sha256: str
    defaults: dict = field(default_factory=dict)
    by_task: dict = field(default_factory=dict)
    about: str = ""
    source: str = ""

    def record(self) -> dict:
        return {"name": self.name, "file": self.file, "sha256": self.sha256, "about": self.about,
                "source": self.source, "defaults": self.defaults, "by_task": self.by_task}

    def for_sample(self, args: dict, given: dict, task: str | None) -> dict:
        """args with the profile's overrides for the sample's task (not where the user set one)."""
        over = {k: v for k, v in self.by_task.get(task or "", {}).items() if k not in given}
        return {**args, **over}


def names(package: str) -> list[str]:
    d = resources.files(package) / "profiles"
    try:
        return sorted(p.name[:-5] for p in d.iterdir() if p.name.endswith(".json"))
    except (FileNotFoundError, NotADirectoryError):
        return []


def load(package: str, runner: str, name: str) -> Profile:
    known = names(package)
    if name not in known:
        raise DuplexEvalError(f"runner {runner!r}: unknown profile {name!r} (known: {', '.join(known) or 'none'})")
    raw = (resources.files(package) / "profiles" / f"{name}.json").read_bytes()
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise DuplexEvalError(f"runner {runner!r}: profile {name!r} is not valid JSON ({exc})") from None
    if not isinstance(data, dict) or set(data) - KEYS or not isinstance(data.get("defaults", {}), dict) \
            or not isinstance(data.get("by_task", {}), dict):
        raise DuplexEvalError(f"runner {runner!r}: profile {name!r} must be an object with keys among "
                              f"{', '.join(sorted(KEYS))}")
    return Profile(name, f"{package}/profiles/{name}.json", hashlib.sha256(raw).hexdigest(),
                   data.get("defaults", {}), data.get("by_task", {}), data.get("about", ""),
                   data.get("source", ""))

