"""Samples and how a stage finds their files across its input stages.

A stage folder holds `samples/<subset>/<id>/<file>`. A later input takes
precedence over an earlier one, so a stage sees one merged view of a sample.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .errors import DuplexEvalError
from .jsonio import read_json

SAMPLES = "samples"
STAGE_RECORD = "stage.json"
MANIFEST = "manifest.json"
DONE = "_done.json"

# Task of a subset, from the official subset names' suffixes.
_TASK_SUFFIXES = (
    ("pause_handling", "pause_handling"),
    ("turn_taking", "smooth_turn_taking"),
    ("backchannel", "backchannel"),
    ("user_interruption", "user_interruption"),
)


def known_task(subset: str) -> str | None:
    """The task of a subset, or None when its name ends with no known suffix."""
    for suffix, task in _TASK_SUFFIXES:
        if subset.endswith(suffix):
            return task
    return None


def id_sort_key(sample_id: str) -> tuple:
    """Numeric ids in numeric order, then the others by name."""
    return (0, int(sample_id), sample_id) if sample_id.isdigit() else (1, 0, sample_id)


def task_of(subset: str) -> str:
    task = known_task(subset)
    if task is not None:
        return task
    raise DuplexEvalError(f"subset {subset!r} has no known task (name must end with one of "
                          f"{', '.join(s for s, _ in _TASK_SUFFIXES)})")


@dataclass(frozen=True, order=True)
class Sample:
    subset: str
    id: str

    @property
    def key(self) -> str:
        return f"{self.subset}/{self.id}"

    @property
    def task(self) -> str:
        return task_of(self.subset)

    def sort_key(self) -> tuple:
        return (self.subset, *id_sort_key(self.id))


class Inputs:
    """The input stage folders of a stage, merged per sample."""

    def __init__(self, dirs: list[Path]):
        self.dirs = [Path(d) for d in dirs]
        for d in self.dirs:
            if not d.is_dir():
                raise DuplexEvalError(f"input folder {d} does not exist")
        self._records = [read_json(d / STAGE_RECORD) if (d / STAGE_RECORD).is_file() else None
                         for d in self.dirs]

    def root_file(self, name: str) -> Path | None:
        for d in reversed(self.dirs):
            if (d / name).is_file():
                return d / name
        return None

    def samples(self) -> list[Sample]:
        """From the dataset manifest when there is one, else from the folders."""
        manifest = self.root_file(MANIFEST)
        if manifest is not None:
            rows = read_json(manifest)["samples"]
            found = {Sample(r["subset"], r["id"]) for r in rows}
        else:
            found = set()
            for d in self.dirs:
                for p in (d / SAMPLES).glob("*/*"):
                    if p.is_dir() and not p.name.startswith("."):
                        found.add(Sample(p.parent.name, p.name))
        return sorted(found, key=Sample.sort_key)

    def find(self, sample: Sample, name: str) -> Path | None:
        for d in reversed(self.dirs):
            p = d / SAMPLES / sample.subset / sample.id / name
            if p.is_file():
                return p
        return None

    def upstream_failure(self, sample: Sample) -> str | None:
        """The reason an input stage gave for failing this sample, if any."""
        for rec in self._records:
            if not rec:
                continue
            status = rec.get("samples", {}).get(sample.key)
            if status and status["status"] != "ok":
                return f"failed upstream in {rec['component']}: {status.get('reason', '')}"
        return None

    def keys(self) -> list[str]:
        return [rec.get("key", "") if rec else "" for rec in self._records]
