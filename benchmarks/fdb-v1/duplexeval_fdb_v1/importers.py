"""Importers of Full-Duplex-Bench v1.0 data: the official release, and plain folders of samples.

`duplexeval import fdb-v1 DIR` and `duplexeval import folder DIR --name NAME` (the `importers`
hook). Each is run by the orchestrator with its import service (duplexeval/importing.py: the
dataset folder, the manifest, the checks every importer shares: ids, links, WAV files, strict
JSON). The checks of a sample, in order (the first problem is the reason it is excluded):

- the shared ones (importing.py): a plain id that no other id of the subset names too, no link
  leading out of the source, readable mono WAV files (input.wav; context.wav and interrupt.wav when
  present) at a usable rate, strict JSON;
- the required files are present: input.wav, and the task's annotation (pause.json,
  turn_taking.json or interrupt.json; none for backchannel);
- the annotation satisfies its schema (schemas/pause, turn-taking, interrupt .schema.json);
- the scorer's load-time checks of the annotation against input.wav (score/tree.load_sample, called
  on a stand-in with a silent output and no words, so exactly the checks a run applies): every time
  it reads inside [0, T], pauses sorted and not overlapping, S <= R;
- beyond what the scorer reads: every item's [start, end] ordered and inside [0, T], and the items
  sorted by start;
- backchannel: the id is a number (the official evaluator visits only numeric folders), and when a
  ground-truth file is given, it holds a distribution for the id.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from duplexeval_common import release_folders
from duplexeval_common.benchmarks import Importer, Option
from duplexeval_common.errors import DuplexEvalError, InputError
from duplexeval_common.samples import name_problem
from duplexeval_common.timebase import is_number, to_us

from .schemas import SCHEMAS
from .tasks import task_of

NAME = "fdb-v1"
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
# The subset-name suffix of each task (tasks.task_of reads it back), for `import folder`.
TASK_SUFFIX = {"pause_handling": "pause_handling", "smooth_turn_taking": "turn_taking",
               "user_interruption": "user_interruption", "backchannel": "backchannel"}
GT_SUM_TOLERANCE = 1e-3


def scorer_checks(svc, subset: str, sid: str, task: str, folder: Path, scratch: Path) -> None:
    """The scorer's load-time checks of one sample's annotation (score/tree.load_sample), on a
    stand-in folder: input.wav and the annotation linked, a silent output.wav as long as the
    input (at 1 kHz, so it stays small) and an output.json without words."""
    import numpy as np
    import soundfile as sf

    from .score.tree import Sample as TreeSample
    from .score.tree import load_sample
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
        raise svc.Excluded(exc.problem) from None
    finally:
        shutil.rmtree(d, ignore_errors=True)


def order_checks(svc, items: list, ann: str, T_us: int) -> None:
    """Every item's [start, end] ordered and inside [0, T], the items sorted by start (what the
    scorer does not read: the second time of turn_taking.json, items after the first)."""
    prev = None
    for i, it in enumerate(items):
        if not all(is_number(x) for x in it["timestamp"][:2]):
            raise svc.Excluded(f"{ann} item {i} has a time that is not a finite number")
        a, b = (to_us(x) for x in it["timestamp"][:2])
        for what, t in (("start", a), ("end", b)):
            if not 0 <= t <= T_us:
                raise svc.Excluded(f"{ann} item {i} {what} {t / 1e6:.6f} s is outside the window "
                                   f"[0, {T_us / 1e6:.6f}] of input.wav")
        if a > b:
            raise svc.Excluded(f"{ann} item {i} ends ({b / 1e6:.6f} s) before it starts ({a / 1e6:.6f} s)")
        if prev is not None and a < prev:
            raise svc.Excluded(f"{ann} item {i} starts before item {i - 1}: items must be sorted by time")
        prev = a


def check_gt(gt: object, where: str) -> dict:
    """The ICC ground truth as a whole: {"<id>": [...], ...}; one line when it is not that."""
    if not isinstance(gt, dict) or not gt:
        raise DuplexEvalError(f"{where}: expected an object {{\"<id>\": [bin weights], ...}}")
    return gt


def gt_problem(gt: dict, sid: str) -> str | None:
    """Why the ground truth has no usable distribution for one backchannel sample, or None."""
    dist = gt.get(sid)
    if dist is None:
        return f"no ground-truth distribution for id {sid} in {ICC_GT}"
    if not isinstance(dist, list) or not dist or not all(is_number(x) and x >= 0 for x in dist):
        return f"the ground-truth distribution for id {sid} in {ICC_GT} is not a list of weights >= 0"
    if abs(sum(dist) - 1.0) > GT_SUM_TOLERANCE:
        return f"the ground-truth distribution for id {sid} in {ICC_GT} sums to {sum(dist):.6f}, not 1"
    return None


def wanted(svc, c, src: Path) -> dict[str, Path]:
    """The files of a sample to copy: the required and the supplementary ones that exist (each
    first checked not to be a link leading out of the source); a missing one is named later."""
    names = ["input.wav", *([ANNOTATIONS[c.task][0]] if c.task in ANNOTATIONS else []),
             *SUPPLEMENTARY.get(c.task, ())]
    out = {}
    for n in names:
        p = c.folder / n
        if p.is_file():
            svc.within(src, p, n)
            out[n] = p
    return out


def check_sample(svc, c, source: Path, scratch: Path, gt: dict | None) -> None:
    """Excluded with the first problem of one sample's (copied) files."""
    task = c.task
    svc.within(source, c.folder, "the sample folder")
    names = [n for n in ("input.wav", ANNOTATIONS.get(task, (None,))[0]) if n]
    for n in names:
        if not (c.folder / n).is_file():
            raise svc.Excluded(f"{n} is missing")
    names += [n for n in SUPPLEMENTARY.get(task, ()) if (c.folder / n).is_file()]
    for n in names:
        svc.within(source, c.folder / n, n)
    frames, rate = 0, 0
    for n in names:
        if n.endswith(".wav"):
            f, r, _ = svc.check_wav(c.folder / n)
            if n == "input.wav":
                frames, rate = f, r
    items = None
    for n in names:
        if n.endswith(".json"):
            obj = svc.strict_json(c.folder / n)
            if task in ANNOTATIONS and n == ANNOTATIONS[task][0]:
                msg = SCHEMAS.problem(ANNOTATIONS[task][1], obj)
                if msg:
                    raise svc.Excluded(f"{n} does not satisfy the {msg}")
                items = obj
    if task in ANNOTATIONS:
        scorer_checks(svc, c.subset, c.id, task, c.folder, scratch)
        order_checks(svc, items, ANNOTATIONS[task][0], to_us(frames / rate))
    if task == "backchannel":
        if not (c.id.isascii() and c.id.isdigit()):
            raise svc.Excluded("a backchannel id must be a number (the official evaluator visits only "
                               "numeric folders)")
        if gt is not None:
            problem_ = gt_problem(gt, c.id)
            if problem_:
                raise svc.Excluded(problem_)


# ---- finding the samples ---------------------------------------------------------------------

def release_root(svc, given: Path) -> Path:
    """The folder holding the subset folders: `given` itself or one folder inside it."""
    return release_folders.release_root(svc, given, FDB_V1_SUBSETS, "Full-Duplex-Bench v1.0",
                                      several_title="Full-Duplex-Bench")


def release_candidates(svc, root: Path) -> tuple[list, list[str]]:
    """(samples, subsets not found) of an official release's folder."""
    return release_folders.release_candidates(svc, root, FDB_V1_SUBSETS, task_of)


def folder_candidates(svc, src: Path, name: str, subset: str | None) -> list:
    """Samples of a plain folder: <src>/<id>/input.wav + one annotation file, which gives the task;
    the subset is `subset` (its name's suffix must be that task's) or <name>_<task suffix>."""
    want = task_of(subset) if subset else None
    by_file = {ann: task for task, (ann, _) in ANNOTATIONS.items()}
    cands = []
    for n in svc.entries(src):
        p = src / n
        if not p.is_dir():
            continue
        found = [a for a in by_file if (p / a).is_file()]
        task = by_file[found[0]] if len(found) == 1 else None
        sub = subset or (f"{name}_{TASK_SUFFIX[task]}" if task else name)
        reason = svc.id_problem(n)
        if reason is None and not found:
            reason = f"no annotation file (one of {', '.join(by_file)})"
        elif reason is None and len(found) > 1:
            reason = f"more than one annotation file ({', '.join(found)}): the task is ambiguous"
        elif reason is None and want is not None and task != want:
            reason = f"{found[0]} makes it a {task} sample, but subset {subset} is {want}"
        cands.append(svc.Candidate(sub, n, task, p, reason))
    return cands


# ---- the two importers -----------------------------------------------------------------------

def import_release(svc, directory: Path, name: str, home: Path | None = None, force: bool = False,
                   report=None, icc_gt: str | None = None):
    """Import the official release (see the module docstring)."""
    report = report or svc.default_report
    svc.check_name(name)
    directory = Path(directory)
    root = release_root(svc, directory)
    cands, absent = release_candidates(svc, root)
    for subset in absent:
        report(f"note: no {subset} folder in {root}; importing the others")
    gt_path = Path(icc_gt) if icc_gt else next((p / ICC_GT for p in (root, directory) if (p / ICC_GT).is_file()),
                                               None)
    gt = None
    if gt_path is not None:
        if not gt_path.is_file():
            raise DuplexEvalError(f"--icc-gt {gt_path}: no such file")
        try:
            gt = check_gt(svc.strict_json(gt_path), str(gt_path))
        except svc.Excluded as exc:
            raise DuplexEvalError(f"{gt_path}: {exc}") from None
    elif any(c.task == "backchannel" for c in cands):
        report(f"note: no {ICC_GT} beside the subsets and no --icc-gt: the backchannel JSD will not be "
               "computed")
    return svc.write_dataset(name, NAME, "fdb-v1", root, cands, home, force,
                             lambda c, src: wanted(svc, c, src),
                             lambda c, work, scratch: check_sample(svc, c, work, scratch, gt),
                             {ICC_GT: gt_path} if gt_path is not None else None, report)


def import_folder(svc, directory: Path, name: str, home: Path | None = None, force: bool = False,
                  report=None, subset: str | None = None):
    """Import a plain folder of samples (see folder_candidates)."""
    svc.check_name(name)
    directory = Path(directory)
    if not directory.is_dir():
        raise DuplexEvalError(f"{directory}: no such folder")
    if subset is not None:
        problem = name_problem(subset)
        if problem:
            raise DuplexEvalError(f"--subset {problem}")
        task = task_of(subset)
        if task not in ANNOTATIONS:
            raise DuplexEvalError(f"--subset {subset!r} must end with pause_handling, turn_taking or "
                                  "user_interruption (the name gives the task)")
    else:
        longest = max(len(s) for s in TASK_SUFFIX.values()) + 1
        if len(name) + longest > 128:
            raise DuplexEvalError(f"--name {name!r} is too long to derive subset names from (give --subset)")
    cands = folder_candidates(svc, directory, name, subset)
    if not cands:
        raise DuplexEvalError(f"{directory}: no sample folders (<id>/input.wav + pause.json, "
                              "turn_taking.json or interrupt.json)")
    return svc.write_dataset(name, NAME, "folder", directory, cands, home, force,
                             lambda c, src: wanted(svc, c, src),
                             lambda c, work, scratch: check_sample(svc, c, work, scratch, None), None, report)


IMPORTERS = {
    "fdb-v1": Importer("fdb-v1", "The official Full-Duplex-Bench v1.0 data as downloaded: DIRECTORY holds the "
                       "subset folders (candor_pause_handling, synthetic_pause_handling, candor_turn_taking, "
                       "icc_backchannel, synthetic_user_interruption), or holds one folder that does.",
                       import_release, default_name="fdb-v1",
                       options=(Option("icc_gt", str, None, "the ICC ground truth (default: "
                                       "icc_gt_distribution.json beside the subsets)"),)),
    "folder": Importer("folder", "A plain folder: DIRECTORY/<id>/input.wav plus one of pause.json, "
                       "turn_taking.json or interrupt.json (the official formats), which gives the sample's "
                       "task.", import_folder,
                       options=(Option("subset", str, None, "subset name for every sample; it must end with "
                                       "pause_handling, turn_taking or user_interruption (default: "
                                       "<name>_<that suffix>, by each sample's annotation)"),)),
}
