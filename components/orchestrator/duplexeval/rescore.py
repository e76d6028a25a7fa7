"""Rescore an archive: run its aggregate stage again from the archived input stages.

The archive is verified and extracted (archive.py); the archived aggregate folder is set aside; the
aggregate stage (component aggregator, the archived config) runs through the engine and the chosen
runtime, exactly as `eval` runs it (local: the installed aggregator; docker: its image with the
network off), reading the archived dataset, runner, asr and judge stages: the judge is never
called, its judgements are archived outputs. The VAD cache entries in the archive are the stage's
cache, so a rescore of the same audio is warm. The new outputs are compared byte for byte with the
archived files at the top of the aggregate stage (metrics.json, report.md, ...: `compared_files`).

`rescored(path)` is the same pass as a context (the leaderboard and compare of archives use it:
an archive's numbers are the rescored ones, never only its stored ones; docs/archives.md).
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import secrets as _random
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from duplexeval_common.cache import private_dir
from duplexeval_common.jsonio import atomic_write_json, read_json
from duplexeval_common.samples import STAGE_RECORD

from .archive import ArchiveError, run_problems, verified
from .engine import Engine
from .plan import StageSpec
from .runtime import Limits
from .store import Store, content_digest

MAX_LINES = 40  # changed values shown per file
MAX_COMPARED_BYTES = 16 << 20  # larger files are compared byte for byte only (no values shown)
MAX_LINE_CHARS = 400           # a changed value shown is cut here


@dataclass
class Result:
    run_id: str
    out: Path | None
    archived_key: str
    new_key: str
    identity: str
    identical: list[str] = field(default_factory=list)
    changes: dict[str, list[str]] = field(default_factory=dict)   # file -> lines

    @property
    def same(self) -> bool:
        return not self.changes

    def lines(self) -> list[str]:
        out = []
        if self.identical:
            out.append("identical: " + " ".join(self.identical))
        for name, lines in self.changes.items():
            out.append(f"differs: {name}")
            out += [f"  {line}" for line in lines]
        return out

    def record(self) -> dict:
        return {"run_id": self.run_id, "archived_key": self.archived_key, "new_key": self.new_key,
                "identity": self.identity, "identical": self.identical, "changes": self.changes}


def _fmt(v) -> str:
    return json.dumps(v, sort_keys=True, ensure_ascii=False)


def json_changes(old, new, path: str = "$") -> list[str]:
    """`path: old -> new` for every value that differs (dict keys sorted, list items by index)."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for k in sorted(set(old) | set(new), key=str):
            p = f"{path}.{k}"
            if k not in old:
                out.append(f"{p}: (absent) -> {_fmt(new[k])}")
            elif k not in new:
                out.append(f"{p}: {_fmt(old[k])} -> (absent)")
            else:
                out += json_changes(old[k], new[k], p)
        return out
    if isinstance(old, list) and isinstance(new, list):
        out = []
        for i in range(max(len(old), len(new))):
            p = f"{path}[{i}]"
            if i >= len(old):
                out.append(f"{p}: (absent) -> {_fmt(new[i])}")
            elif i >= len(new):
                out.append(f"{p}: {_fmt(old[i])} -> (absent)")
            else:
                out += json_changes(old[i], new[i], p)
        return out
    if type(old) is not type(new) or old != new:
        return [f"{path}: {_fmt(old)} -> {_fmt(new)}"]
    return []


def _rows(data: bytes) -> dict:
    rows = {}
    for i, line in enumerate(data.decode("utf-8").splitlines()):
        if line.strip():
            row = json.loads(line)
            key = row.get("sample_id") if isinstance(row, dict) and row.get("sample_id") else f"line {i + 1}"
            rows[key] = row
    return rows


def compared_files(*stage_dirs: Path) -> list[str]:
    """The files rescore compares: every file at the top of either aggregate stage folder (what the
    benchmark's scorer wrote: metrics.json, report.md, ...), the stage's own records left out."""
    names: set[str] = set()
    for d in stage_dirs:
        names |= {p.name for p in d.iterdir() if p.is_file() and not p.is_symlink()
                  and p.name != STAGE_RECORD and not p.name.startswith(("_", "."))}
    return sorted(names)


def file_changes(name: str, old: bytes | None, new: bytes | None) -> list[str]:
    """What differs between two versions of one compared file ([] when the bytes are equal)."""
    if old == new:
        return []
    if old is None:
        return ["absent from the archive"]
    if new is None:
        return ["not written by the new aggregate stage"]
    lines: list[str] = []
    if max(len(old), len(new)) > MAX_COMPARED_BYTES:  # a diff of hostile sizes would take quadratic time
        return [f"the bytes differ ({len(old)} archived, {len(new)} rescored; too large to show values)"]
    try:
        if name.endswith(".json"):
            lines = json_changes(json.loads(old), json.loads(new))
        elif name.endswith(".jsonl"):
            a, b = _rows(old), _rows(new)
            for k in sorted(set(a) | set(b)):
                if k not in a:
                    lines.append(f"{k}: (absent) -> row")
                elif k not in b:
                    lines.append(f"{k}: row -> (absent)")
                else:
                    lines += json_changes(a[k], b[k], k)
    except (ValueError, RecursionError, AttributeError):
        lines = []
    if not lines:  # text, or JSON equal in value but not in bytes
        lines = [d.rstrip("\n") for d in difflib.unified_diff(
            old.decode("utf-8", "replace").splitlines(), new.decode("utf-8", "replace").splitlines(),
            "archived", "rescored", n=0, lineterm="")][2:] or ["the bytes differ (same values)"]
    if len(lines) > MAX_LINES:
        lines = lines[:MAX_LINES] + [f"... and {len(lines) - MAX_LINES} more"]
    return [x if len(x) <= MAX_LINE_CHARS else x[:MAX_LINE_CHARS] + f" [... {len(x) - MAX_LINE_CHARS} more characters]"
            for x in lines]


def _runtime(name: str, image: str | None):
    from duplexeval_common.errors import DuplexEvalError
    if name == "local":
        if image:
            raise DuplexEvalError("--aggregator-image applies to the docker runtime: add --runtime docker")
        from .runtime_local import LocalRuntime
        return LocalRuntime()
    from .runtime_docker_stage import DockerRuntime
    return DockerRuntime({"aggregator": image} if image else {})


def _out_dir(store: Store, run_id: str, out: Path | None) -> Path:
    if out is None:
        store.runs.mkdir(parents=True, exist_ok=True)
        while True:
            out = store.runs / f"rescore-{run_id}-{_random.token_hex(3)}"
            if not out.exists():
                return out
    out = Path(out).resolve()
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ArchiveError(f"{out}: exists and is not an empty folder (rescore writes a fresh one)")
    return out


def rescore(path: Path, store: Store, runtime: str = "local", image: str | None = None,
            out: Path | None = None, max_bytes: int | None = None, max_members: int | None = None) -> Result:
    """Verify, extract, run the aggregate stage again, compare; the new outputs land in `out`."""
    path = Path(path)
    rt = _runtime(runtime, image)
    if out is not None:
        out = _out_dir(store, "", out)   # refused before any work when it is not a new or empty folder
    near = out.parent if out is not None else store.runs
    near.mkdir(parents=True, exist_ok=True)
    # One pass checks, hashes and writes every member; the docker runtime mounts the folder, so
    # it stays beside the output rather than in a tmpfs the engine may not share.
    with verified(path, max_bytes, near=near, tmpfs=runtime == "local", max_members=max_members) as (root, diffs):
        run = _verified_run(path, root, diffs)
        target = _out_dir(store, run["run_id"], out)
        res, new_dir = _score_again(root, run, rt, target)
        _save(new_dir, target, res)
    return res


@contextlib.contextmanager
def rescored(path: Path, max_bytes: int | None = None, max_members: int | None = None,
             accept: Callable[[dict], None] | None = None) -> Iterator[tuple[Path, dict, Result, Path]]:
    """The archive verified, extracted and its aggregate stage run again with the installed
    aggregator (local runtime), for as long as the context lasts: yields (root, run, result,
    folder of the new aggregate stage). `accept(run)` may refuse the run (raise) before the
    stage runs. Raises ArchiveError when it does not verify or the stage fails; `result.changes`
    says what the archived outputs claim that the rescore does not reproduce."""
    path = Path(path)
    with verified(path, max_bytes, max_members=max_members) as (root, diffs):
        run = _verified_run(path, root, diffs)
        if accept is not None:
            accept(run)
        res, new_dir = _score_again(root, run, _runtime("local", None), None)
        yield root, run, res, new_dir


def first_change(res: Result) -> str:
    """One line: the first file whose archived bytes the rescore does not reproduce, and its
    first changed value."""
    name, lines = next(iter(res.changes.items()))
    return f"{name}: {lines[0]}" if lines else name


class NotVerified(ArchiveError):
    """An archive that does not verify; `differences` are verify's lines."""

    def __init__(self, path: Path, differences: list[str]):
        super().__init__(f"{path.name} does not verify ({len(differences)} difference(s), first: "
                         f"{differences[0]}); see `duplexeval verify`")
        self.differences = differences


def _verified_run(path: Path, root: Path, diffs: list[str]) -> dict:
    if diffs:
        raise NotVerified(path, diffs)
    run = read_json(root / "run.json")
    problems = run_problems(run, root.name)   # verify checked them; no path is built before this
    if problems:
        raise ArchiveError(f"{path.name}: run.json: {problems[0]}")
    return run


def _score_again(root: Path, run: dict, rt, target: Path | None) -> tuple[Result, Path]:
    """Run the archived aggregate stage again in the extracted archive `root`; compare."""
    run_id = run["run_id"]
    stages = {s["name"]: s for s in run.get("stages", [])}
    agg = stages.get("aggregate")
    if agg is None or agg.get("component") != "aggregator":
        raise ArchiveError(f"archive of run {run_id}: no aggregate stage to rescore")
    scratch = Store(root)  # store/ of the extracted archive: the input stages are there
    by_digest = {}
    for name, s in stages.items():
        rec = scratch.record(s["key"])
        if name != "aggregate":
            if s["key"] == agg["key"]:
                raise ArchiveError(f"archive of run {run_id}: stage {name} has the aggregate stage's key")
            if rec is None:
                raise ArchiveError(f"archive of run {run_id}: stage {name} has no readable "
                                   f"store/{s['key'][:12]}.../{STAGE_RECORD}")
            by_digest[content_digest(rec)] = name
    inputs = []
    for digest in agg.get("inputs", []):
        if digest not in by_digest:
            raise ArchiveError(f"archive of run {run_id}: the aggregate stage's input {str(digest)[:24]}... "
                               "is not an archived stage")
        inputs.append(by_digest[digest])
    try:
        config = read_json(scratch.config_path(agg["key"]))
    except (OSError, ValueError):
        raise ArchiveError(f"archive of run {run_id}: store/configs/{agg['key'][:12]}....json is not "
                           "readable JSON") from None
    if not isinstance(config, dict):
        raise ArchiveError(f"archive of run {run_id}: the aggregate stage's config is not an object")
    archived = root / "archived-aggregate"
    os.replace(scratch.stage_dir(agg["key"]), archived)  # so the stage runs, never "cached"
    given = {n: {**scratch.record(stages[n]["key"]), "key": stages[n]["key"]} for n in set(inputs)}
    cache = private_dir(root / "cache")
    engine = Engine(scratch, rt, Limits(), None, cache)
    spec = StageSpec("aggregate", "aggregator", config, inputs, network=False)
    result = engine.run([spec], given)[0]
    if result.status == "failed":
        raise ArchiveError(f"the rescored aggregate stage failed: {result.reason}")
    if result.cached:  # a stage folder of the archive under the new key: its outputs were not computed
        raise ArchiveError(f"archive of run {run_id}: it holds a stage under the rescored aggregate stage's "
                           f"key {result.key[:12]}, so nothing was computed; refused")
    new_dir = scratch.stage_dir(result.key)
    res = Result(run_id, target, agg["key"], result.key, result.identity)
    for name in compared_files(archived, new_dir):
        old = (archived / name).read_bytes() if (archived / name).is_file() else None
        new = (new_dir / name).read_bytes() if (new_dir / name).is_file() else None
        if old is None and new is None:  # not a file of this benchmark's aggregate stage
            continue
        changes = file_changes(name, old, new)
        if changes:
            res.changes[name] = changes
        else:
            res.identical.append(name)
    return res, new_dir


def _save(new_dir: Path, target: Path, res: Result) -> None:
    """The new stage folder's stage.json and outputs, and rescore.json, into `target` (a temp
    sibling renamed into place)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.parent / f".{target.name}.{_random.token_hex(4)}.tmp"
    try:
        tmp.mkdir()
        record = read_json(new_dir / STAGE_RECORD)
        for rel in [STAGE_RECORD, *sorted(record.get("outputs", {}))]:
            dst = tmp / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(new_dir / rel, dst)
        atomic_write_json(tmp / "rescore.json", res.record())
        if target.exists():
            target.rmdir()  # checked empty above
        os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


__all__ = ["rescore", "rescored", "first_change", "NotVerified", "Result", "json_changes", "file_changes"]
