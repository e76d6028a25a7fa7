"""What `duplexeval import` shares across benchmarks: the imported dataset's folder and manifest,
the checks every importer applies, and the service a benchmark's importer is given.

A benchmark declares its importers (its `importers` hook: {name: Importer}); `duplexeval import
NAME DIR` runs one with this module as its service. An importer reads a folder it never writes
to, checks every sample and writes what passed to <home>/datasets/<name>/ (paths.datasets_dir):
the samples in the benchmark's layout (<subset>/<id>/<file>), any root files, and manifest.json
(FORMAT: the benchmark's name, each sample's task and files with their sha256, what was excluded
and why). The folder is built under a hidden temporary name beside it and renamed into place when
complete (`staging`), so an interrupted import leaves nothing half-written under the name.

A sample that fails a check is left out, reported on stderr as one line `<subset>/<id>: <reason>`
and listed in the manifest's `excluded` with its reason; the other samples are kept. The checks
every importer shares: an id is one plain name (duplexeval_common.samples.check_name: no '..', no
separator, no odd characters), and no other id of the subset names the same sample ("01" and
"1", equal as numbers; "A7" and "a7", equal ignoring case: one folder on a case-insensitive file
system: every spelling is excluded, since which one was meant cannot be known); a folder or file
is not a link leading out of the source (one link rule for every importer); a WAV file is one
soundfile reads, non-empty, with finite samples, a rate of at least MIN_RATE and at most MAX_RATE,
and at most MAX_SECONDS long (check_wav); a JSON file parses strictly (no NaN, no key given twice;
strict_json, linear in its size).

An import may instead be a script folder for its benchmark's own `dataset` hook: its manifest
says `"build": BUILD_BY_HOOK`, its root files (hashed in `root_files`) are what the hook reads
and its rows list the samples the hook will build, with no files of their own (fdb-v2's import
of upstream's task file, a tasks.json). tts-synth then runs the benchmark's hook on the folder
instead of copying it (its import mode).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from duplexeval_common.benchmarks import Importer  # noqa: F401  (what a benchmark declares)
from duplexeval_common.errors import DuplexEvalError
# the checks every importer applies live in common, so a benchmark's importer uses the same ones
from duplexeval_common.import_checks import (MAX_RATE, MAX_SECONDS, MIN_RATE, Excluded,  # noqa: F401
                                             canonical_id, check_wav, entries, id_problem, strict_json,
                                             within)
from duplexeval_common.samples import id_sort_key, name_problem, printable

FORMAT = "duplexeval-import/1"
MANIFEST = "manifest.json"
BUILD_BY_HOOK = "dataset"   # manifest `build`: the benchmark's dataset hook builds the samples


@dataclass
class Candidate:
    subset: str
    id: str
    task: str | None
    folder: Path
    reason: str | None = None  # set when the sample is excluded before its files are read

    @property
    def key(self) -> str:
        return f"{self.subset}/{printable(self.id)}"


@dataclass
class Imported:
    name: str
    path: Path
    manifest: dict
    excluded: list[dict] = field(default_factory=list)

    @property
    def kept(self) -> int:
        return len(self.manifest["samples"])


def default_report(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


# ---- ids -------------------------------------------------------------------------------------

def mark_duplicates(cands: list[Candidate]) -> None:
    """Exclude every spelling of an id that another id of the same subset also names."""
    groups: dict[tuple[str, str], list[Candidate]] = {}
    for c in cands:
        if c.reason is None:
            groups.setdefault((c.subset, canonical_id(c.id)), []).append(c)
    for group in groups.values():
        if len(group) > 1:
            names = " and ".join(repr(c.id) for c in sorted(group, key=lambda c: c.id))
            how = "as numbers" if group[0].id.isascii() and group[0].id.isdigit() else "ignoring case"
            for c in group:
                c.reason = f"duplicate id: {names} name the same sample (equal {how}); none is imported"


def sha256_copy(src: Path, dst: Path) -> str:
    """Copy src to dst (a new file), returning the sha256 of the bytes written."""
    h = hashlib.sha256()
    with open(src, "rb") as fi, open(dst, "xb") as fo:
        while chunk := fi.read(1 << 20):
            h.update(chunk)
            fo.write(chunk)
    return h.hexdigest()


def wav_info(wav: Path) -> dict:
    import soundfile as sf
    info = sf.info(str(wav))
    return {"duration_s": info.frames / info.samplerate, "sample_rate": info.samplerate}


# ---- the dataset folder ----------------------------------------------------------------------

def _overlaps(a: Path, b: Path) -> bool:
    a, b = Path(os.path.realpath(a)), Path(os.path.realpath(b))
    return a == b or a in b.parents or b in a.parents


def check_name(name: str) -> str:
    """The dataset's name: one plain name that no built-in dataset has."""
    problem = name_problem(name)
    if problem:
        raise DuplexEvalError(f"--name {problem}")
    from .catalog import builtin
    if name in builtin():
        raise DuplexEvalError(f"--name {name!r} is a built-in dataset, which would shadow the import; "
                              "choose another name")
    return name


def imported_folder(name: str, root: Path | None = None) -> Path | None:
    """<home>/datasets/<name>/ when it holds an import, else None; a one-line error when it holds
    something else or its manifest cannot be read."""
    from .paths import datasets_dir
    d = datasets_dir(root) / name
    if not d.is_dir():
        return None
    read_manifest(d)
    return d


def read_manifest(folder: Path) -> dict:
    p = folder / MANIFEST
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DuplexEvalError(f"imported dataset {folder}: {MANIFEST} is not readable ({exc}); "
                              "import it again") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or not isinstance(doc.get("samples"), list):
        raise DuplexEvalError(f"{folder}: {MANIFEST} is not a {FORMAT} manifest (made before benchmarks "
                              "were packages? import it again)")
    return doc


def describe_import(folder: Path) -> str:
    """One line about an imported dataset (for `duplexeval models`)."""
    try:
        doc = read_manifest(folder)
    except DuplexEvalError as exc:
        return f"(not usable: {exc})"
    subsets = sorted({r.get("subset") for r in doc["samples"] if isinstance(r, dict)})
    excluded = len(doc.get("excluded") or [])
    roots = ", ".join(sorted(doc.get("root_files") or {}))
    return (f"imported ({doc.get('source')}) from {doc.get('source_path')}: {len(doc['samples'])} samples "
            f"in {len(subsets)} subsets" + (f", {excluded} excluded" if excluded else "")
            + (f", with {roots}" if roots else ""))


@contextlib.contextmanager
def staging(name: str, src: Path, home: Path | None, force: bool) -> Iterator[tuple[Path, Callable]]:
    """(the hidden work folder, commit(manifest)) for a new dataset `name` imported from `src`:
    commit writes manifest.json and moves the folder into place (an old one, with force, is moved
    aside, then removed); leaving the block without commit removes the work folder."""
    from duplexeval_common.jsonio import atomic_write_json

    from .paths import datasets_dir
    base = datasets_dir(home)
    final = base / name
    if _overlaps(final, src):
        raise DuplexEvalError(f"the source {src} and the destination {final} overlap; import from elsewhere")
    if (final.exists() or final.is_symlink()) and not force:
        raise DuplexEvalError(f"dataset {name!r} already exists ({final}); --force replaces it")
    try:
        base.mkdir(parents=True, exist_ok=True)
        work = base / f".{name}.import-{secrets.token_hex(4)}"
        work.mkdir()
    except OSError as exc:
        raise DuplexEvalError(f"cannot write the dataset under {base} ({exc.strerror or exc})") from None

    def commit(manifest: dict) -> Path:
        atomic_write_json(work / MANIFEST, manifest)
        _replace(work, final)
        return final
    try:
        yield work, commit
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)


def manifest(benchmark: str, name: str, source: str, src: Path, rows: list[dict], excluded: list[dict],
             root_files: dict[str, str] | None = None, **extra: Any) -> dict:
    """The import's manifest.json (FORMAT): rows sorted by subset and id."""
    from . import __version__
    return {"format": FORMAT, "benchmark": benchmark, "name": name, "source": source,
            "source_path": str(Path(os.path.realpath(src))),
            "created_by": {"package": "duplexeval", "version": __version__},
            "samples": sorted(rows, key=lambda r: (r["subset"], *id_sort_key(r["id"]))),
            "excluded": excluded, "root_files": dict(sorted((root_files or {}).items())), **extra}


def write_dataset(name: str, benchmark: str, source: str, src: Path, cands: list[Candidate],
                  home: Path | None, force: bool, wanted: Callable[[Candidate, Path], dict[str, Path]],
                  check: Callable[[Candidate, Path, Path], None], root_files: dict[str, Path] | None = None,
                  report=None) -> Imported:
    """Copy and check each candidate and write the dataset (the module docstring). wanted(c, src):
    {file name: source path} of a sample's files to copy; check(staged, work, scratch): Excluded
    with the sample's first problem, run on the copies (what is imported is what passed)."""
    report = report or default_report
    mark_duplicates(cands)
    with staging(name, src, home, force) as (work, commit):
        rows, excluded = [], []
        with tempfile.TemporaryDirectory(prefix="duplexeval-import-") as scratch:
            for c in sorted(cands, key=lambda c: (c.subset, *id_sort_key(c.id))):
                try:
                    if c.reason:
                        raise Excluded(c.reason)
                    within(src, c.folder, "the sample folder")
                    dst = work / c.subset / c.id
                    dst.mkdir(parents=True)
                    files = {n: sha256_copy(p, dst / n) for n, p in wanted(c, src).items()}
                    check(Candidate(c.subset, c.id, c.task, dst), work, Path(scratch))
                    rows.append({"subset": c.subset, "id": c.id, "task": c.task, "files": files,
                                 **wav_info(dst / "input.wav")})
                except Excluded as exc:
                    if c.reason is None:  # the id passed its check: a plain name inside work/
                        shutil.rmtree(work / c.subset / c.id, ignore_errors=True)
                    excluded.append({"subset": c.subset, "id": printable(c.id), "reason": str(exc)})
                    report(f"{c.key}: {exc}")
        if not rows:
            raise DuplexEvalError(f"{src}: no sample passed the checks ({len(excluded)} excluded); nothing "
                                  "was written")
        roots = {n: sha256_copy(p, work / n) for n, p in sorted((root_files or {}).items())}
        doc = manifest(benchmark, name, source, src, rows, excluded, roots)
        final = commit(doc)
    return Imported(name, final, doc, excluded)


def _replace(work: Path, final: Path) -> None:
    """Move the finished folder into place; an old one (--force) is moved aside, then removed."""
    old = None
    if final.exists() or final.is_symlink():
        old = final.parent / f".{final.name}.old-{secrets.token_hex(4)}"
        os.replace(final, old)
    os.replace(work, final)
    if old is not None:
        if old.is_symlink() or not old.is_dir():
            old.unlink()
        else:
            shutil.rmtree(old)


def importers() -> dict[str, tuple[str, Importer]]:
    """{command: (benchmark, Importer)} of every installed benchmark; a name two declare is an error."""
    from duplexeval_common.benchmarks import all_benchmarks
    out: dict[str, tuple[str, Importer]] = {}
    for b in all_benchmarks():
        if not b.has("importers"):
            continue
        for name, imp in b.hook("importers").items():
            if name in out:
                raise DuplexEvalError(f"importer {name!r} is declared by benchmarks {out[name][0]} and {b.name}")
            out[name] = (b.name, imp)
    return out
