"""Samples and how a stage finds their files across its input stages.

A stage folder holds `samples/<subset>/<id>/<file>`. A later input takes
precedence over an earlier one, so a stage sees one merged view of a sample.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from .errors import DuplexEvalError
from .jsonio import read_json

SAMPLES = "samples"
STAGE_RECORD = "stage.json"
MANIFEST = "manifest.json"
DONE = "_done.json"

# A sample id or subset name is one plain path component: letters, digits, '_', '-', '.',
# starting with a letter or digit, no '..', at most 128 characters (schemas/*.schema.json use the
# same pattern). So `<subset>/<id>` can never name a folder outside `samples/`.
NAME_PATTERN = r"^(?!.*\.\.)(?!.*\n)[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$"
_NAME = re.compile(NAME_PATTERN)


def name_problem(value: object) -> str | None:
    """Why `value` is not a safe sample id or subset name, or None when it is."""
    if not isinstance(value, str):
        return f"must be a string, got {type(value).__name__}"
    if not value:
        return "is empty"
    if "/" in value or "\\" in value or os.sep in value:
        return f"{value!r} contains a path separator"
    if ".." in value:
        return f"{value!r} contains '..'"
    if not _NAME.fullmatch(value) or "\n" in value:
        return (f"{value[:80]!r} is not a plain name (letters, digits, '_', '-', '.', starting with a "
                "letter or digit, at most 128 characters)")
    return None


def printable(value: str, limit: int = 80) -> str:
    """A name as one line of plain characters (an id may hold a newline or worse)."""
    text = str(value).encode("unicode_escape").decode("ascii")
    return text if len(text) <= limit else text[:limit] + "..."


def check_name(value: object, what: str) -> str:
    """`value` when it is a safe sample id / subset name; else a one-line DuplexEvalError."""
    problem = name_problem(value)
    if problem:
        raise DuplexEvalError(f"{what} {problem}")
    return value  # type: ignore[return-value]


def inside(root: Path, path: Path) -> bool:
    """Whether `path`, with every link resolved, lies inside `root` (also resolved)."""
    try:
        Path(os.path.realpath(path)).relative_to(os.path.realpath(root))
        return True
    except ValueError:
        return False


def id_sort_key(sample_id: str) -> tuple:
    """Numeric ids (ASCII digits: "²" is a digit to str.isdigit but no int) in numeric order,
    then the others by name."""
    return (0, int(sample_id), sample_id) if sample_id.isascii() and sample_id.isdigit() else (1, 0, sample_id)


@dataclass(frozen=True, order=True)
class Sample:
    """One sample: its subset and id (one plain name each) and its task, as its dataset's
    manifest row declares it (None where no manifest lists the sample). Two samples are the same
    sample when subset and id are; the task does not take part in equality or order."""
    subset: str
    id: str
    task: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        check_name(self.subset, "subset name")
        check_name(self.id, f"sample id in subset {self.subset!r}:")

    @property
    def key(self) -> str:
        return f"{self.subset}/{self.id}"

    def sort_key(self) -> tuple:
        return (self.subset, *id_sort_key(self.id))


@dataclass
class ScoredSample:
    """A sample as a benchmark's scorer loads it from a tree: its subset, id, task and folder, and
    the reasons it is not eligible (none: eligible). A scorer's own sample type adds what it reads."""
    subset: str
    id: str
    task: str
    dir: Path
    reasons: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        return f"{self.subset}/{self.id}"

    @property
    def eligible(self) -> bool:
        return not self.reasons


class Inputs:
    """The input stage folders of a stage, merged per sample."""

    def __init__(self, dirs: list[Path]):
        self.dirs = [Path(d) for d in dirs]
        for d in self.dirs:
            if not d.is_dir():
                raise DuplexEvalError(f"input folder {d} does not exist")
        self._records = [read_json(d / STAGE_RECORD) if (d / STAGE_RECORD).is_file() else None
                         for d in self.dirs]
        self._samples: list[Sample] | None = None

    def root_file(self, name: str) -> Path | None:
        for d in reversed(self.dirs):
            if (d / name).is_file():
                return d / name
        return None

    def samples(self) -> list[Sample]:
        """From the dataset manifest when there is one (each sample with the task its row
        declares), else from the folders (no task).

        Every id and subset name is checked (a one-line error names the bad one), and a
        duplicate manifest row is an error, never silently merged.
        """
        if self._samples is not None:
            return self._samples
        manifest = self.root_file(MANIFEST)
        found: set[Sample] = set()
        if manifest is not None:
            rows = read_json(manifest).get("samples")
            if not isinstance(rows, list):
                raise DuplexEvalError(f"{manifest}: has no samples list")
            for i, r in enumerate(rows):
                if not isinstance(r, dict):
                    raise DuplexEvalError(f"{manifest}: sample row {i} is not an object")
                task = r.get("task")
                s = Sample(r.get("subset"), r.get("id"), task if isinstance(task, str) and task else None)
                if s in found:
                    raise DuplexEvalError(f"{manifest}: duplicate sample {s.key}")
                found.add(s)
        else:
            for d in self.dirs:
                root = d / SAMPLES
                for p in root.glob("*/*"):
                    if p.name.startswith(".") or p.parent.name.startswith("."):
                        continue
                    if not inside(root, p):
                        raise DuplexEvalError(f"{p.parent.name}/{p.name}: sample folder is a link "
                                              f"leaving {d}")
                    if p.is_dir():
                        found.add(Sample(p.parent.name, p.name))
        self._samples = sorted(found, key=Sample.sort_key)
        return self._samples

    def find(self, sample: Sample, name: str) -> Path | None:
        """The file `name` of a sample, from the last input that has it.

        A file (or sample folder) that is a link resolving outside its input stage folder is
        refused with a one-line error naming the sample.
        """
        check_name(name, f"{sample.key}: file name")
        for d in reversed(self.dirs):
            p = d / SAMPLES / sample.subset / sample.id / name
            if p.is_file():
                if not inside(d, p):
                    raise DuplexEvalError(f"{sample.key}: {name} is a link leaving {d}")
                return p
        return None

    def upstream_failure(self, sample: Sample) -> str | None:
        """The reason an input stage gave for failing this sample, if any."""
        for rec in self._records:
            if not rec:
                continue
            status = rec.get("samples", {}).get(sample.key)
            if status and status["status"] == "skipped":
                return status.get("reason", f"skipped upstream in {rec['component']}")
            if status and status["status"] != "ok":
                return f"failed upstream in {rec['component']}: {status.get('reason', '')}"
        return None

    def keys(self) -> list[str]:
        return [rec.get("key", "") if rec else "" for rec in self._records]


def select_subsets(available: list[str], wanted, where: str) -> set[str]:
    """The subsets a `subsets` setting keeps (null: all); a name the dataset lacks is a one-line
    error listing the dataset's subsets."""
    if wanted is None:
        return set(available)
    if not isinstance(wanted, list) or not wanted or not all(isinstance(x, str) and x for x in wanted):
        raise DuplexEvalError(f"{where}: setting subsets must be null or a non-empty list of subset names")
    unknown = sorted(set(wanted) - set(available))
    if unknown:
        raise DuplexEvalError(f"{where}: no subset {unknown[0]!r} in this dataset; it has "
                              f"{', '.join(sorted(available))}")
    return set(wanted)
