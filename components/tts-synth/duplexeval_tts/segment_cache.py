"""A cache of synthesized speech segments, shared by every run and home that points to it.

Off unless $DUPLEXEVAL_TTS_CACHE names a folder (components/tts-synth/README.md, "The TTS segment
cache"; `off`, `0`, `false`, `no` or empty: off). With it, `engines.render` looks a segment up
before synthesizing and keeps what it synthesizes, so a run with another --limit, subset or home,
which makes another dataset stage, does not speak the same sentences again. The test suite points every process at one folder.

What a segment depends on, all of it in the key (sha256 of canonical JSON):
- the engine's identity as the engine protocol declares it (engines.Engine): its name, voice,
  speaking rate, native sample rate, the voice model's sha256 and `settings`, which hold every
  setting and library version that decides the output;
- the text and the output sample rate;
- the code that turns the engine's output into the segment (resampling, peak scaling,
  trimming) and the engine's own module: the sha256 of their source files, and numpy's and
  scipy's versions;
- the numeric environment (OPENBLAS_*, OMP_* and the like: duplexeval_common.stage) but the
  thread counts (`*_NUM_THREADS`): the engines that take part run onnxruntime on one thread of
  their own and the shaping is elementwise numpy, so a thread count changes none of their numbers,
  and tts-synth's worker processes set OMP_NUM_THREADS=1 where the stage's own process does not;
- the machine: its architecture and CPU flags (onnxruntime's and numpy's kernels follow them), and
  the variables that point the phonemizers at another espeak-ng (PHONEMIZER_ESPEAK_LIBRARY,
  PHONEMIZER_ESPEAK_PATH, ESPEAK_DATA_PATH).
Only engines whose output is reproducible and whose identity is complete take part: those with
`segment_cache = True` (Piper and Kokoro: an ONNX model file and its config hashed, onnxruntime
pinned to one thread). A hosted engine (openai) or one whose weights are not all hashed never
does.

An entry is the sha256 of its samples followed by the samples (float32, little-endian), written
to a temporary name and renamed: a torn, truncated or edited entry fails its hash and is
synthesized again and rewritten. A folder that cannot be made or written is no cache (the
segment is synthesized, and the process says so once); a cache never decides a result. The folder
is trusted as the user cache is (made with mode 0700): whoever can write to it can change what is
read back. The docker runtime does not pass $DUPLEXEVAL_TTS_CACHE into its containers, so an image
always synthesizes for itself.
"""

from __future__ import annotations

import functools
import hashlib
import os
import platform
import sys
import tempfile
from pathlib import Path

import numpy as np

ENV = "DUPLEXEVAL_TTS_CACHE"
FORMAT = "tts-segment-1"
_OFF = {"", "0", "off", "false", "no"}
ESPEAK_VARIABLES = ("PHONEMIZER_ESPEAK_LIBRARY", "PHONEMIZER_ESPEAK_PATH", "ESPEAK_DATA_PATH")


def root() -> Path | None:
    """The cache folder ($DUPLEXEVAL_TTS_CACHE), made when missing; None when unset, off, or not
    writable."""
    value = os.environ.get(ENV, "").strip()
    if value.lower() in _OFF:
        return None
    return _usable(str(Path(value).expanduser().resolve()))


def enabled() -> bool:
    """Whether $DUPLEXEVAL_TTS_CACHE asks for the cache (usable or not)."""
    return os.environ.get(ENV, "").strip().lower() not in _OFF


@functools.lru_cache(maxsize=8)
def _usable(path: str) -> Path | None:
    from duplexeval_common.cache import usable_cache_dir
    folder = usable_cache_dir(Path(path))
    if folder is None:
        print(f"note: {ENV}={path} is not a folder that can be written: synthesizing without the "
              "segment cache", file=sys.stderr)
    return folder


@functools.lru_cache(maxsize=1)
def _machine() -> dict:
    """The architecture and a hash of the CPU's flags (Linux: /proc/cpuinfo's first flags line)."""
    flags = ""
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.split(":", 1)[0].strip() in ("flags", "Features"):
                flags = " ".join(sorted(line.split(":", 1)[1].split()))
                break
    except OSError:
        pass
    return {"arch": platform.machine(), "cpu_flags_sha256": hashlib.sha256(flags.encode()).hexdigest()}


@functools.lru_cache(maxsize=16)
def _code(module_name: str) -> str:
    """sha256 over the source of the modules that shape a segment, the engine's module included."""
    import duplexeval_common.polyphase
    import duplexeval_common.wavio
    from . import engines
    h = hashlib.sha256()
    for mod in (engines, duplexeval_common.wavio, duplexeval_common.polyphase, sys.modules[module_name]):
        h.update(Path(mod.__file__).read_bytes())
    return h.hexdigest()


def key(engine, text: str, sample_rate: int) -> str | None:
    """The entry's name for this segment, or None when the engine takes no part."""
    if not getattr(engine, "segment_cache", False) or not getattr(engine, "deterministic", False):
        return None
    import scipy

    from duplexeval_common.hashing import sha256_json
    from duplexeval_common.stage import numeric_environment
    return sha256_json({
        "format": FORMAT,
        "engine": {"name": engine.name, "voice": str(engine.voice), "rate": float(engine.rate),
                   "native_sample_rate": int(engine.sample_rate), "model_sha256": engine.model_sha256,
                   "settings": engine.settings},
        "text": text, "sample_rate": int(sample_rate),
        "code": _code(type(engine).__module__), "numpy": np.__version__, "scipy": scipy.__version__,
        "numeric": {k: v for k, v in numeric_environment().items() if not k.endswith("_NUM_THREADS")},
        "machine": _machine(),
        "espeak": {k: os.environ.get(k, "") for k in ESPEAK_VARIABLES},
    })


def _path(folder: Path, name: str) -> Path:
    return folder / FORMAT / name[:2] / f"{name}.f32"


def get(name: str) -> np.ndarray | None:
    folder = root()
    if folder is None:
        return None
    try:
        data = _path(folder, name).read_bytes()
    except OSError:
        return None
    digest, payload = data[:32], data[32:]
    if len(digest) != 32 or len(payload) % 4 or hashlib.sha256(payload).digest() != digest:
        return None
    return np.frombuffer(payload, dtype="<f4").astype(np.float32)


def put(name: str, segment: np.ndarray) -> None:
    folder = root()
    if folder is None:
        return
    payload = np.ascontiguousarray(segment, dtype="<f4").tobytes()
    path = _path(folder, name)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as f:
            f.write(hashlib.sha256(payload).digest() + payload)
        os.replace(tmp, path)
    except OSError:  # a full or read-only disk: no entry, the segment stands
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
