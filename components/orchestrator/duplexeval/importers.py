"""Importers: the official Full-Duplex-Bench v1.0 release, and plain folders of samples.

Both read a folder they never write to, check every sample, and write what passed to
<home>/datasets/<name>/ (paths.datasets_dir): the samples in the official layout
(<subset>/<id>/<file>), icc_gt_distribution.json when there is one, and manifest.json
(FORMAT). The folder is built under a hidden temporary name beside it and renamed into place
when complete, so an interrupted import leaves nothing half-written under the name.

A sample that fails a check is left out, reported on stderr as one line `<subset>/<id>: <reason>`
and listed in the manifest's `excluded` with its reason; the other samples are kept. The
checks, in order (the first problem is the reason):

- the id is one plain name (duplexeval_common.samples.check_name: no '..', no separator, no odd
  characters), and no other id of the subset names the same sample: "01" and "1" (equal as
  numbers: the official backchannel evaluator reads ids as numbers) or "A7" and "a7" (equal
  ignoring case: one folder on a case-insensitive file system); every spelling of such an id is
  excluded, since which one was meant cannot be known;
- the sample folder and its files are not links leading out of the source folder;
- the required files are present: input.wav, and the task's annotation (pause.json,
  turn_taking.json or interrupt.json; none for icc_backchannel);
- every WAV file (input.wav; context.wav and interrupt.wav when present) is a WAV file soundfile
  reads, mono, non-empty, with finite samples. Stereo is refused, not downmixed: the benchmark's
  inputs are mono, and a downmix would import a file other than the one given;
- every JSON file parses (strictly: no NaN, no key given twice) and the annotation satisfies its
  schema (schemas/pause, turn-taking, interrupt .schema.json);
- the aggregator's load-time checks of the annotation against input.wav (duplexeval_aggregator.
  tree.load_sample, called on a stand-in with a silent output and no words, so exactly the checks
  a run applies): every time it reads inside [0, T], pauses sorted and not overlapping, S <= R;
- beyond what the aggregator reads: every item's [start, end] ordered and inside [0, T], and the
  items sorted by start;
- icc_backchannel: the id is a number (the official evaluator visits only numeric folders), and
  when a ground-truth file is given, it holds a distribution for the id.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.samples import known_task, name_problem

FORMAT = "duplexeval-import/1"
MANIFEST = "manifest.json"
ICC_GT = "icc_gt_distribution.json"

# The official v1.0 subsets, as the release names them.
FDB_V1_SUBSETS = ("candor_pause_handling", "candor_turn_taking", "icc_backchannel",
                  "synthetic_pause_handling", "synthetic_user_interruption")
# The annotation file of each task and its schema (none for backchannel: its ground truth is
# icc_gt_distribution.json, one file for the subset).
ANNOTATIONS = {"pause_handling": ("pause.json", "pause"),
               "smooth_turn_taking": ("turn_taking.json", "turn-taking"),
               "user_interruption": ("interrupt.json", "interrupt")}
# Files imported when present (checked, not required): the release's supplementary files.
SUPPLEMENTARY = {"pause_handling": ("transcription.json",),
                 "smooth_turn_taking": ("transcription.json",),
                 "backchannel": ("transcription.json",),
                 "user_interruption": ("transcription.json", "context.wav", "interrupt.wav")}
# The subset-name suffix that gives each task (duplexeval_common.samples.task_of reads it back).
TASK_SUFFIX = {"pause_handling": "pause_handling", "smooth_turn_taking": "turn_taking",
               "user_interruption": "user_interruption", "backchannel": "backchannel"}
GT_SUM_TOLERANCE = 1e-3


class Excluded(Exception):
    """A sample that failed a check; the message is its reason."""


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


def printable(value: str, limit: int = 80) -> str:
    """A name as one line of plain characters (an id may hold a newline or worse)."""
    text = value.encode("unicode_escape").decode("ascii")
    return text if len(text) <= limit else text[:limit] + "..."


# ---- ids -------------------------------------------------------------------------------------

def id_problem(value: str) -> str | None:
    """Why a sample id cannot be imported (duplexeval_common.samples.name_problem), or None."""
    problem = name_problem(value)
    return None if problem is None else f"sample id {problem}"


def canonical_id(value: str) -> str:
    """Ids that name the same sample share this: numbers by value, other names ignoring case."""
    return str(int(value)) if value.isdigit() else value.casefold()


def mark_duplicates(cands: list[Candidate]) -> None:
    """Exclude every spelling of an id that another id of the same subset also names."""
    groups: dict[tuple[str, str], list[Candidate]] = {}
    for c in cands:
        if c.reason is None:
            groups.setdefault((c.subset, canonical_id(c.id)), []).append(c)
    for group in groups.values():
        if len(group) > 1:
            names = " and ".join(repr(c.id) for c in sorted(group, key=lambda c: c.id))
            how = "as numbers" if group[0].id.isdigit() else "ignoring case"
            for c in group:
                c.reason = f"duplicate id: {names} name the same sample (equal {how}); none is imported"


# ---- file checks -----------------------------------------------------------------------------

def _inside(root: Path, path: Path) -> bool:
    from duplexeval_common.samples import inside
    return inside(root, path)


def strict_json(path: Path):
    """A JSON file parsed strictly: NaN, Infinity and a key given twice are errors."""
    def constant(name):
        raise ValueError(f"{name} is not JSON")

    def pairs(items):
        keys = [k for k, _ in items]
        dup = sorted({k for k in keys if keys.count(k) > 1})
        if dup:
            raise ValueError(f"key {dup[0]!r} given twice")
        return dict(items)
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f, parse_constant=constant, object_pairs_hook=pairs)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise Excluded(f"{path.name} is not valid JSON ({str(exc)[:160]})") from None


def check_wav(path: Path) -> tuple[int, int]:
    """(frames, rate) of a WAV file that is readable, mono, non-empty and finite; else Excluded."""
    import numpy as np
    import soundfile as sf
    try:
        info = sf.info(str(path))
    except Exception as exc:  # soundfile raises several types for bad files
        raise Excluded(f"{path.name} is not readable audio ({_why(exc, path)})") from None
    if info.format not in ("WAV", "WAVEX"):
        raise Excluded(f"{path.name} is {info.format}, not WAV")
    if info.channels != 1:
        raise Excluded(f"{path.name} has {info.channels} channels; the benchmark's inputs are mono "
                       "(stereo is not downmixed on import: convert it first)")
    if info.frames == 0:
        raise Excluded(f"{path.name} is empty (no samples)")
    try:
        with sf.SoundFile(str(path)) as f:
            for block in f.blocks(blocksize=1 << 18, dtype="float32"):
                if not np.isfinite(block).all():
                    raise Excluded(f"{path.name} contains non-finite samples")
    except Excluded:
        raise
    except Exception as exc:
        raise Excluded(f"{path.name} is not readable audio ({_why(exc, path)})") from None
    return info.frames, info.samplerate


def _why(exc: Exception, path: Path) -> str:
    """soundfile's message without the full path it quotes."""
    return printable(str(exc).replace(str(path), path.name), 160)


def aggregator_checks(subset: str, sid: str, task: str, folder: Path, scratch: Path) -> None:
    """The aggregator's load-time checks of one sample's annotation (tree.load_sample), on a
    stand-in folder: input.wav and the annotation linked, a silent output.wav as long as the
    input (at 1 kHz, so it stays small) and an output.json without words."""
    try:
        from duplexeval_aggregator.errors import InputError
        from duplexeval_aggregator.tree import Sample as TreeSample
        from duplexeval_aggregator.tree import load_sample
    except ImportError:
        raise DuplexEvalError("the aggregator package (duplexeval-aggregator) is not installed here, and "
                              "the import checks use it: run `make setup`") from None
    import numpy as np
    import soundfile as sf
    ann = ANNOTATIONS[task][0]
    d = scratch / f"{len(os.listdir(scratch))}"
    d.mkdir()
    os.symlink(folder / "input.wav", d / "input.wav")
    os.symlink(folder / ann, d / ann)
    info = sf.info(str(folder / "input.wav"))
    n = max(1, round(info.frames * 1000 / info.samplerate))
    sf.write(str(d / "output.wav"), np.zeros(n, dtype="int16"), 1000, subtype="PCM_16")
    (d / "output.json").write_text('{"chunks": []}')
    try:
        load_sample(TreeSample(subset, sid, task, d))
    except InputError as exc:
        raise Excluded(exc.problem) from None
    finally:
        shutil.rmtree(d, ignore_errors=True)


def order_checks(items: list, ann: str, T_us: int) -> None:
    """Every item's [start, end] ordered and inside [0, T], the items sorted by start (what the
    aggregator does not read: the second time of turn_taking.json, items after the first)."""
    from duplexeval_aggregator.timebase import is_number, to_us
    prev = None
    for i, it in enumerate(items):
        if not all(is_number(x) for x in it["timestamp"][:2]):
            raise Excluded(f"{ann} item {i} has a time that is not a finite number")
        a, b = (to_us(x) for x in it["timestamp"][:2])
        for what, t in (("start", a), ("end", b)):
            if not 0 <= t <= T_us:
                raise Excluded(f"{ann} item {i} {what} {t / 1e6:.6f} s is outside the window "
                               f"[0, {T_us / 1e6:.6f}] of input.wav")
        if a > b:
            raise Excluded(f"{ann} item {i} ends ({b / 1e6:.6f} s) before it starts ({a / 1e6:.6f} s)")
        if prev is not None and a < prev:
            raise Excluded(f"{ann} item {i} starts before item {i - 1}: items must be sorted by time")
        prev = a


def check_gt(gt: object, where: str) -> dict:
    """The ICC ground truth as a whole: {"<id>": [...], ...}; one line when it is not that."""
    if not isinstance(gt, dict) or not gt:
        raise DuplexEvalError(f"{where}: expected an object {{\"<id>\": [bin weights], ...}}")
    return gt


def gt_problem(gt: dict, sid: str) -> str | None:
    """Why the ground truth has no usable distribution for one backchannel sample, or None."""
    from duplexeval_aggregator.timebase import is_number
    dist = gt.get(sid)
    if dist is None:
        return f"no ground-truth distribution for id {sid} in {ICC_GT}"
    if not isinstance(dist, list) or not dist or not all(is_number(x) and x >= 0 for x in dist):
        return f"the ground-truth distribution for id {sid} in {ICC_GT} is not a list of weights >= 0"
    if abs(sum(dist) - 1.0) > GT_SUM_TOLERANCE:
        return f"the ground-truth distribution for id {sid} in {ICC_GT} sums to {sum(dist):.6f}, not 1"
    return None


def check_sample(c: Candidate, source: Path, scratch: Path, gt: dict | None) -> dict[str, Path]:
    """The files to import of one sample ({name: path}); Excluded with the first problem."""
    task = c.task
    if c.reason:
        raise Excluded(c.reason)
    if not _inside(source, c.folder):
        raise Excluded(f"the sample folder is a link leading out of {source}")
    names = [n for n in ("input.wav", ANNOTATIONS.get(task, (None,))[0]) if n]
    for n in names:
        if not (c.folder / n).is_file():
            raise Excluded(f"{n} is missing")
    names += [n for n in SUPPLEMENTARY.get(task, ()) if (c.folder / n).is_file()]
    for n in names:
        if not _inside(source, c.folder / n):
            raise Excluded(f"{n} is a link leading out of {source}")
    frames, rate = 0, 0
    for n in names:
        if n.endswith(".wav"):
            f, r = check_wav(c.folder / n)
            if n == "input.wav":
                frames, rate = f, r
    for n in names:
        if n.endswith(".json"):
            obj = strict_json(c.folder / n)
            if task in ANNOTATIONS and n == ANNOTATIONS[task][0]:
                from duplexeval_common.schemas import problem
                msg = problem(ANNOTATIONS[task][1], obj)
                if msg:
                    raise Excluded(f"{n} does not satisfy the {msg}")
                items = obj
    if task in ANNOTATIONS:
        aggregator_checks(c.subset, c.id, task, c.folder, scratch)
        from duplexeval_aggregator.timebase import to_us
        order_checks(items, ANNOTATIONS[task][0], to_us(frames / rate))
    if task == "backchannel":
        if not c.id.isdigit():
            raise Excluded("an icc_backchannel id must be a number (the official evaluator visits only "
                           "numeric folders)")
        if gt is not None:
            problem_ = gt_problem(gt, c.id)
            if problem_:
                raise Excluded(problem_)
    return {n: c.folder / n for n in names}


# ---- finding the samples ---------------------------------------------------------------------

def _entries(folder: Path) -> list[str]:
    """A folder's entries, hidden ones left out, in a stable order."""
    return sorted(n for n in os.listdir(folder) if not n.startswith("."))


def release_root(given: Path) -> Path:
    """The folder holding the subset folders: `given` itself or one folder inside it."""
    if not given.is_dir():
        raise DuplexEvalError(f"{given}: no such folder")
    if any((given / s).is_dir() for s in FDB_V1_SUBSETS):
        return given
    inner = [given / n for n in _entries(given)
             if (given / n).is_dir() and any((given / n / s).is_dir() for s in FDB_V1_SUBSETS)]
    if len(inner) == 1:
        return inner[0]
    if len(inner) > 1:
        raise DuplexEvalError(f"{given}: several folders hold Full-Duplex-Bench subsets "
                              f"({', '.join(p.name for p in inner)}); name one of them")
    raise DuplexEvalError(f"{given}: no Full-Duplex-Bench v1.0 subset folder ({', '.join(FDB_V1_SUBSETS)}) "
                          "in it or in a folder inside it")


def fdb_v1_candidates(root: Path) -> tuple[list[Candidate], list[str]]:
    """(samples, subsets not found) of an official release's folder."""
    cands, absent = [], []
    for subset in FDB_V1_SUBSETS:
        sub = root / subset
        if not sub.is_dir():
            absent.append(subset)
            continue
        for n in _entries(sub):
            p = sub / n
            if p.is_dir():
                cands.append(Candidate(subset, n, known_task(subset), p, id_problem(n)))
    return cands, absent


def folder_candidates(src: Path, name: str, subset: str | None) -> list[Candidate]:
    """Samples of a plain folder: <src>/<id>/input.wav + one annotation file, which gives the task;
    the subset is `subset` (its name's suffix must be that task's) or <name>_<task suffix>."""
    want = known_task(subset) if subset else None
    by_file = {ann: task for task, (ann, _) in ANNOTATIONS.items()}
    cands = []
    for n in _entries(src):
        p = src / n
        if not p.is_dir():
            continue
        found = [a for a in by_file if (p / a).is_file()]
        task = by_file[found[0]] if len(found) == 1 else None
        sub = subset or (f"{name}_{TASK_SUFFIX[task]}" if task else name)
        reason = id_problem(n)
        if reason is None and not found:
            reason = f"no annotation file (one of {', '.join(by_file)})"
        elif reason is None and len(found) > 1:
            reason = f"more than one annotation file ({', '.join(found)}): the task is ambiguous"
        elif reason is None and want is not None and task != want:
            reason = f"{found[0]} makes it a {task} sample, but subset {subset} is {want}"
        cands.append(Candidate(sub, n, task, p, reason))
    return cands


# ---- writing ---------------------------------------------------------------------------------

def _sha256_copy(src: Path, dst: Path) -> str:
    """Copy src to dst (a new file), returning the sha256 of the bytes written."""
    h = hashlib.sha256()
    with open(src, "rb") as fi, open(dst, "xb") as fo:
        while chunk := fi.read(1 << 20):
            h.update(chunk)
            fo.write(chunk)
    return h.hexdigest()


def _sha256(path: Path) -> str:
    from duplexeval_common.hashing import sha256_file
    return sha256_file(path)


def _overlaps(a: Path, b: Path) -> bool:
    a, b = Path(os.path.realpath(a)), Path(os.path.realpath(b))
    return a == b or a in b.parents or b in a.parents


def _check_name(name: str) -> str:
    problem = name_problem(name)
    if problem:
        raise DuplexEvalError(f"--name {problem}")
    from .catalog import DATASETS_KNOWN
    if name in DATASETS_KNOWN:
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
        raise DuplexEvalError(f"{folder}: {MANIFEST} is not a {FORMAT} manifest")
    return doc


def describe_import(folder: Path) -> str:
    """One line about an imported dataset (for `duplexeval models`)."""
    try:
        doc = read_manifest(folder)
    except DuplexEvalError as exc:
        return f"(not usable: {exc})"
    subsets = sorted({r.get("subset") for r in doc["samples"] if isinstance(r, dict)})
    excluded = len(doc.get("excluded") or [])
    return (f"imported ({doc.get('source')}) from {doc.get('source_path')}: {len(doc['samples'])} samples "
            f"in {len(subsets)} subsets" + (f", {excluded} excluded" if excluded else "")
            + (", ICC ground truth" if doc.get("icc_gt_sha256") else ""))


def write_dataset(name: str, source: str, src: Path, cands: list[Candidate], home: Path | None,
                  force: bool, gt_path: Path | None = None, gt: dict | None = None, report=None) -> Imported:
    """Check the candidates and write the dataset (see the module docstring)."""
    from . import __version__
    from .paths import datasets_dir
    report = report or (lambda line: print(line, file=sys.stderr, flush=True))
    base = datasets_dir(home)
    final = base / name
    if _overlaps(final, src):
        raise DuplexEvalError(f"the source {src} and the destination {final} overlap; import from elsewhere")
    if (final.exists() or final.is_symlink()) and not force:
        raise DuplexEvalError(f"dataset {name!r} already exists ({final}); --force replaces it")
    mark_duplicates(cands)
    base.mkdir(parents=True, exist_ok=True)
    work = base / f".{name}.import-{secrets.token_hex(4)}"
    work.mkdir()
    try:
        rows, excluded = [], []
        with tempfile.TemporaryDirectory(prefix="duplexeval-import-") as scratch:
            for c in sorted(cands, key=_order):
                try:
                    # the copies are what is checked, so what is imported is what passed
                    if c.reason:
                        raise Excluded(c.reason)
                    if not _inside(src, c.folder):
                        raise Excluded(f"the sample folder is a link leading out of {src}")
                    dst = work / c.subset / c.id
                    dst.mkdir(parents=True)
                    staged = Candidate(c.subset, c.id, c.task, dst)
                    wanted = _wanted(c, src)
                    files = {n: _sha256_copy(p, dst / n) for n, p in wanted.items()}
                    check_sample(staged, work, Path(scratch), gt)
                    info = _info(dst / "input.wav")
                    rows.append({"subset": c.subset, "id": c.id, "task": c.task, "files": files, **info})
                except Excluded as exc:
                    if c.reason is None:  # the id passed its check: a plain name inside work/
                        shutil.rmtree(work / c.subset / c.id, ignore_errors=True)
                    reason = str(exc)
                    excluded.append({"subset": c.subset, "id": printable(c.id), "reason": reason})
                    report(f"{c.key}: {reason}")
        if not rows:
            raise DuplexEvalError(f"{src}: no sample passed the checks ({len(excluded)} excluded); nothing "
                                  "was written")
        gt_sha = None
        if gt_path is not None:
            gt_sha = _sha256_copy(gt_path, work / ICC_GT)
        manifest = {"format": FORMAT, "name": name, "source": source,
                    "source_path": str(Path(os.path.realpath(src))),
                    "created_by": {"package": "duplexeval", "version": __version__},
                    "samples": rows, "excluded": excluded, "icc_gt_sha256": gt_sha}
        from duplexeval_common.jsonio import atomic_write_json
        atomic_write_json(work / MANIFEST, manifest)
        _replace(work, final)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return Imported(name, final, manifest, excluded)


def _order(c: Candidate) -> tuple:
    from duplexeval_common.samples import id_sort_key
    return (c.subset, *id_sort_key(c.id))


def _wanted(c: Candidate, src: Path) -> dict[str, Path]:
    """The files of a sample to copy: the required and the supplementary ones that exist (each
    first checked not to be a link leading out of the source); a missing one is named later."""
    names = ["input.wav", *([ANNOTATIONS[c.task][0]] if c.task in ANNOTATIONS else []),
             *SUPPLEMENTARY.get(c.task, ())]
    out = {}
    for n in names:
        p = c.folder / n
        if p.is_file():
            if not _inside(src, p):
                raise Excluded(f"{n} is a link leading out of {src}")
            out[n] = p
    return out


def _info(wav: Path) -> dict:
    import soundfile as sf
    info = sf.info(str(wav))
    return {"duration_s": info.frames / info.samplerate, "sample_rate": info.samplerate}


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


# ---- the two importers -----------------------------------------------------------------------

def import_fdb_v1(directory: Path, name: str = "fdb-v1", icc_gt: Path | None = None,
                  home: Path | None = None, force: bool = False, report=None) -> Imported:
    """Import the official release (see the module docstring)."""
    report = report or (lambda line: print(line, file=sys.stderr, flush=True))
    _check_name(name)
    directory = Path(directory)
    root = release_root(directory)
    cands, absent = fdb_v1_candidates(root)
    for subset in absent:
        report(f"note: no {subset} folder in {root}; importing the others")
    gt_path = Path(icc_gt) if icc_gt else next((p / ICC_GT for p in (root, directory) if (p / ICC_GT).is_file()),
                                               None)
    gt = None
    if gt_path is not None:
        if not gt_path.is_file():
            raise DuplexEvalError(f"--icc-gt {gt_path}: no such file")
        try:
            gt = check_gt(strict_json(gt_path), str(gt_path))
        except Excluded as exc:
            raise DuplexEvalError(f"{gt_path}: {exc}") from None
    elif any(c.task == "backchannel" for c in cands):
        report(f"note: no {ICC_GT} beside the subsets and no --icc-gt: the backchannel JSD will not be "
               "computed")
    return write_dataset(name, "fdb-v1", root, cands, home, force, gt_path, gt, report)


def import_folder(directory: Path, name: str, subset: str | None = None, home: Path | None = None,
                  force: bool = False, report=None) -> Imported:
    """Import a plain folder of samples (see folder_candidates)."""
    _check_name(name)
    directory = Path(directory)
    if not directory.is_dir():
        raise DuplexEvalError(f"{directory}: no such folder")
    if subset is not None:
        problem = name_problem(subset)
        if problem:
            raise DuplexEvalError(f"--subset {problem}")
        task = known_task(subset)
        if task not in ANNOTATIONS:
            raise DuplexEvalError(f"--subset {subset!r} must end with pause_handling, turn_taking or "
                                  "user_interruption (the name gives the task)")
    else:
        longest = max(len(s) for s in TASK_SUFFIX.values()) + 1
        if len(name) + longest > 128:
            raise DuplexEvalError(f"--name {name!r} is too long to derive subset names from (give --subset)")
    cands = folder_candidates(directory, name, subset)
    if not cands:
        raise DuplexEvalError(f"{directory}: no sample folders (<id>/input.wav + pause.json, "
                              "turn_taking.json or interrupt.json)")
    return write_dataset(name, "folder", directory, cands, home, force, report=report)

