"""The importer of the official Full-Duplex-Bench v1.5 data: `duplexeval import fdb-v1.5 DIR`
(the `importers` hook), run by the orchestrator with its import service (duplexeval/importing.py:
the dataset folder built aside and renamed into place, the manifest with every file's sha256, and
the checks every importer shares: ids, links, WAV files, strict JSON).

DIR holds the subset folders (user_interruption, user_backchannel, talking_to_other,
background_speech), or holds one folder that does; a subset that is missing is noted and the others
are imported. Each `<subset>/<id>/` gives `input.wav`, `clean_input.wav` and `metadata.json`
(other files in the folder are not imported). The checks of a sample, in order (the first problem
is the reason it is excluded, reported as one line `<subset>/<id>: <reason>`; the others are kept):

- the id is one plain name that no other id of the subset also names ("01" and "1", "A7" and
  "a7"); hidden entries are not samples;
- the sample folder and its three files are not links leading out of DIR;
- the three files are present (`clean_input.wav is missing (...)`);
- both WAV files are readable, mono, non-empty, finite, at a rate in [8000, 192000] Hz, at most 4 h;
- the clean twin has input.wav's rate and length: `clean_input.wav is N samples at R Hz; input.wav
  is M at S`;
- metadata.json is strict JSON (no NaN, no key given twice) satisfying schemas/metadata.schema.json:
  `context_text` and `current_turn_text` strings, `timestamps` two numbers;
- the window: start <= end (not reversed), both inside [0, T], T the length of input.wav (times
  compared on the microsecond grid, duplexeval_common.timebase).
"""

from __future__ import annotations

from pathlib import Path

from duplexeval_common import release_folders
from duplexeval_common.benchmarks import Importer
from duplexeval_common.timebase import to_us

from .schemas import SCHEMAS
from .tasks import TASKS

NAME = "fdb-v1.5"
SUBSETS = TASKS                       # the official subset folders are named after their tasks
FILES = ("input.wav", "clean_input.wav", "metadata.json")


def _f(t: float) -> str:
    return f"{t:.6f}"


def check_window(svc, meta: dict, frames: int, rate: int) -> None:
    """metadata.json's timestamps: not reversed and inside [0, T] of input.wav."""
    start, end = meta["timestamps"]
    T_us = to_us(frames / rate)
    a, b = to_us(start), to_us(end)
    if a > b:
        raise svc.Excluded(f"metadata.json timestamps [{_f(start)}, {_f(end)}] are reversed: the overlap "
                           "starts after it ends")
    for what, t, t_us in (("start", start, a), ("end", end, b)):
        if not 0 <= t_us <= T_us:
            raise svc.Excluded(f"metadata.json timestamps {what} {_f(t)} s is outside input.wav "
                               f"[0, {T_us / 1e6:.6f}] s")


def check_sample(svc, c, source: Path) -> None:
    """Excluded with the first problem of one sample's (copied) files."""
    svc.within(source, c.folder, "the sample folder")
    for n in FILES:
        if not (c.folder / n).is_file():
            why = {"clean_input.wav": " (the input without the overlap event)",
                   "metadata.json": " (the overlap window)"}.get(n, "")
            raise svc.Excluded(f"{n} is missing{why}")
        svc.within(source, c.folder / n, n)
    frames, rate, _ = svc.check_wav(c.folder / "input.wav")
    cframes, crate, _ = svc.check_wav(c.folder / "clean_input.wav")
    if (cframes, crate) != (frames, rate):
        raise svc.Excluded(f"clean_input.wav is {cframes} samples at {crate} Hz; input.wav is {frames} at {rate}")
    meta = svc.strict_json(c.folder / "metadata.json")
    msg = SCHEMAS.problem("metadata", meta)
    if msg:
        raise svc.Excluded(f"metadata.json does not satisfy the {msg}")
    check_window(svc, meta, frames, rate)


def wanted(svc, c, src: Path) -> dict[str, Path]:
    """The files of a sample to copy: those of FILES that exist (each first checked not to be a
    link leading out of the source); a missing one is named by check_sample."""
    out = {}
    for n in FILES:
        p = c.folder / n
        if p.is_file():
            svc.within(src, p, n)
            out[n] = p
    return out


def release_root(svc, given: Path) -> Path:
    """The folder holding the subset folders: `given` itself or one folder inside it."""
    return release_folders.release_root(svc, given, SUBSETS, "Full-Duplex-Bench v1.5")


def release_candidates(svc, root: Path) -> tuple[list, list[str]]:
    """(samples, subsets not found) of an official release's folder."""
    return release_folders.release_candidates(svc, root, SUBSETS, lambda subset: subset)


def import_release(svc, directory: Path, name: str, home: Path | None = None, force: bool = False,
                   report=None):
    """Import the official v1.5 release (see the module docstring)."""
    report = report or svc.default_report
    svc.check_name(name)
    root = release_root(svc, Path(directory))
    cands, absent = release_candidates(svc, root)
    for subset in absent:
        report(f"note: no {subset} folder in {root}; importing the others")
    return svc.write_dataset(name, NAME, NAME, root, cands, home, force,
                             lambda c, src: wanted(svc, c, src),
                             lambda c, work, _scratch: check_sample(svc, c, work), None, report)


IMPORTERS = {
    NAME: Importer(NAME, "The official Full-Duplex-Bench v1.5 data as downloaded: DIRECTORY holds the subset "
                   "folders (user_interruption, user_backchannel, talking_to_other, background_speech), or holds "
                   "one folder that does; each <subset>/<id>/ has input.wav, clean_input.wav and metadata.json.",
                   import_release, default_name=NAME),
}
