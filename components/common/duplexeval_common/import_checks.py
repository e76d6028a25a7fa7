"""The checks every importer applies (`duplexeval import`, any benchmark's importer), so that one
rule holds for all of them: an id is one plain name (samples.name_problem); a folder or file is
not a link leading out of the source (`within`); a WAV file is one soundfile reads, non-empty,
with finite samples, at a rate of at least MIN_RATE and at most MAX_RATE Hz, at most MAX_SECONDS
long (`check_wav`: read block by block, so a hostile header costs no memory); a JSON file parses
strictly (no NaN or Infinity, no key given twice; `strict_json`, linear in its size). A failed
check raises Excluded, whose message is the sample's one-line reason.
"""

from __future__ import annotations

import os
from pathlib import Path

from .samples import inside, name_problem, printable

MIN_RATE = 8000          # Hz: below it no ASR or VAD of the pipeline hears speech
MAX_RATE = 192000
MAX_SECONDS = 4 * 3600   # one sample


class Excluded(Exception):
    """A sample that failed a check; the message is its reason."""


def id_problem(value: str) -> str | None:
    """Why a sample id cannot be imported (duplexeval_common.samples.name_problem), or None."""
    problem = name_problem(value)
    return None if problem is None else f"sample id {problem}"


def canonical_id(value: str) -> str:
    """Ids that name the same sample share this: numbers by value, other names ignoring case."""
    return str(int(value)) if value.isascii() and value.isdigit() else value.casefold()


# ---- files ---------------------------------------------------------------------------------

def within(root: Path, path: Path, what: str) -> None:
    """The link rule of every importer: `path` (a folder or file) must not lead out of `root`."""
    if not inside(root, path):
        raise Excluded(f"{what} is a link leading out of {root}")


def entries(folder: Path) -> list[str]:
    """A folder's entries, hidden ones left out, in a stable order."""
    return sorted(n for n in os.listdir(folder) if not n.startswith("."))


def strict_json(path: Path):
    """A JSON file parsed strictly: NaN, Infinity and a key given twice are errors."""
    from .jsonio import strict_loads
    try:
        with open(path, "rb") as f:
            return strict_loads(f.read())
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise Excluded(f"{Path(path).name} is not valid JSON ({str(exc)[:160]})") from None


def check_wav(path: Path, mono: bool = True, what: str | None = None,
              formats: tuple[str, ...] = ("WAV", "WAVEX")) -> tuple[int, int, int]:
    """(frames, rate, channels) of an audio file (WAV unless `formats` says otherwise) that is
    readable, non-empty and finite, at a rate in [MIN_RATE, MAX_RATE], at most MAX_SECONDS long
    and (with `mono`) of one channel; else Excluded."""
    import numpy as np
    import soundfile as sf
    name = what or Path(path).name
    try:
        info = sf.info(str(path))
    except Exception as exc:  # soundfile raises several types for bad files
        raise Excluded(f"{name} is not readable audio ({_why(exc, path)})") from None
    if info.format not in formats:
        raise Excluded(f"{name} is {info.format}, not {' or '.join(formats)}")
    if mono and info.channels != 1:
        raise Excluded(f"{name} has {info.channels} channels; the benchmark's inputs are mono "
                       "(stereo is not downmixed on import: convert it first)")
    if not MIN_RATE <= info.samplerate <= MAX_RATE:
        raise Excluded(f"{name} is sampled at {info.samplerate} Hz; a rate in [{MIN_RATE}, {MAX_RATE}] Hz "
                       "is needed")
    if info.frames == 0:
        raise Excluded(f"{name} is empty (no samples)")
    if info.frames > MAX_SECONDS * info.samplerate:
        raise Excluded(f"{name} lasts {info.frames / info.samplerate:.0f} s, over the {MAX_SECONDS} s "
                       "a sample may last")
    try:
        with sf.SoundFile(str(path)) as f:
            for block in f.blocks(blocksize=1 << 18, dtype="float32"):
                if not np.isfinite(block).all():
                    raise Excluded(f"{name} contains non-finite samples")
    except Excluded:
        raise
    except Exception as exc:
        raise Excluded(f"{name} is not readable audio ({_why(exc, path)})") from None
    return info.frames, info.samplerate, info.channels


def _why(exc: Exception, path: Path) -> str:
    """soundfile's message without the full path it quotes."""
    return printable(str(exc).replace(str(path), Path(path).name), 160)
