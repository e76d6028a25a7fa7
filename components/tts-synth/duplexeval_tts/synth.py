"""What tts-synth gives a benchmark's dataset builder (its `dataset` hook): the `Synth` service.

A benchmark's builder knows its script format, its layout and its annotations; tts-synth knows
voices and engines. The builder is called as `make_stage(config, synth)` and returns the stage's
hooks (select, setup, process, finalize); it speaks through `synth`:

- settings: `synth.check_config(config)`: the dataset settings every builder shares, checked
  (dataset, limit, engine, voice, sample_rate, timing, voices, seed, jobs, samples, subsets,
  options: the benchmark's dataset options, which tts-synth gives its `variants` hook);
- voices: `synth.engine(name, voice, rate)`, `synth.load(spec)`, `synth.record(engine, spec)`,
  `synth.choose(specs, seed, key, speakers)`, `synth.parse_specs(where, value)`;
- audio: `synth.render(engine, text, sr, tight=False)` (one speech segment: resampled, scaled to
  PEAK, trimmed to its first and last sample above TRIM_THRESHOLD; `tight` also drops quiet edge
  frames, EDGE_FRAME_S and EDGE_REL);
- work in parallel: `synth.pool(jobs)` is a pool of worker processes (started on first use, None
  on the main thread or for one job); `pool.build(builder, payload, voices, sample_rate, tight)`
  runs `builder(payload, speak, sample_rate)` in a worker, where `speak(text, speaker="user")` is
  the speaker's voice, and returns (built, voice records) or raises one DuplexEvalError line;
  `pool.render([(spec, text), ...], sample_rate, tight)` renders pieces;
- records: `synth.sample_files(folder)`, `synth.version`.

Every sample depends only on its own script entry and voice, so the bytes do not depend on `jobs`.
"""

from __future__ import annotations

import importlib
import os
import threading
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any, Callable

import numpy as np

from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.hashing import sha256_file
from duplexeval_common.samples import DONE

from . import __version__
from . import voices as voicemix
from .engines import PEAK, TRIM_THRESHOLD, load_engine, render as _render, trim

DEFAULTS = {"benchmark": None, "dataset": None, "limit": None, "engine": "piper", "voice": None,
            "sample_rate": 16000, "timing": {}, "voices": None, "seed": None, "jobs": None, "samples": None,
            "subsets": None, "options": None}
MAX_JOBS = 8
EDGE_FRAME_S = 0.01     # tight rendering: frames of the edge trim
EDGE_REL = 0.05         # tight rendering: edge frames whose RMS is below this share of the loudest frame's


# A worker process starts Python, imports numpy, SciPy's signal module and the engines and loads
# the voices again (about 3 s of CPU on the 2-core machine) before its first sample (about 1 s of
# CPU for an fdb-mini sample): with the default jobs, a stage uses worker processes only where
# each gets at least this many samples; fewer run in the stage's own process, which has loaded the
# voices already. The bytes are the same either way.
SAMPLES_PER_WORKER = 8


def default_workers(jobs: int, samples: int) -> int:
    """Worker processes for `samples` samples under the default jobs (at most `jobs`)."""
    return max(1, min(jobs, samples // SAMPLES_PER_WORKER))


def default_jobs() -> int:
    """The cores this process may use, capped at MAX_JOBS."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(MAX_JOBS, cores))


def check_config(config: dict) -> dict:
    """The dataset stage's settings, checked, with defaults (one line for the first problem)."""
    unknown = set(config) - set(DEFAULTS)
    if unknown:
        raise DuplexEvalError(f"unknown tts-synth setting(s) {', '.join(sorted(unknown))}; "
                              f"known: {', '.join(DEFAULTS)}")
    cfg = {**DEFAULTS, **{k: v for k, v in config.items() if v is not None or k == "limit"}}
    if cfg["dataset"] is not None and (not isinstance(cfg["dataset"], str) or not cfg["dataset"]):
        raise DuplexEvalError("setting dataset must be a non-empty string (default: the input folder's name)")
    limit = cfg["limit"]
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
        raise DuplexEvalError("setting limit must be null or a whole number >= 1")
    rate = cfg["sample_rate"]
    if not isinstance(rate, int) or isinstance(rate, bool) or not 8000 <= rate <= 96000:
        raise DuplexEvalError("setting sample_rate must be a whole number of Hz in [8000, 96000]")
    if not isinstance(cfg["timing"], dict):
        raise DuplexEvalError("setting timing must be an object {subset: {key: seconds}}")
    for k in ("engine", "voice"):
        if cfg[k] is not None and not isinstance(cfg[k], str):
            raise DuplexEvalError(f"setting {k} must be a string")
    if cfg["voices"] is not None:
        cfg["voices"] = voicemix.parse_specs("setting voices", cfg["voices"])
    for k, low in (("seed", 0), ("jobs", 1)):
        v = cfg[k]
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < low):
            raise DuplexEvalError(f"setting {k} must be null or a whole number >= {low}")
    only = cfg["samples"]
    if only is not None and (not isinstance(only, list) or not only
                             or not all(isinstance(k, str) and k.count("/") == 1 for k in only)):
        raise DuplexEvalError('setting samples must be null or a non-empty list of "subset/id" keys')
    if cfg["options"] is not None and not isinstance(cfg["options"], dict):
        raise DuplexEvalError("setting options must be null or an object (the benchmark's dataset options)")
    if cfg["jobs"] is None:
        cfg["jobs"] = default_jobs()
    # An explicit engine/voice in the config speaks scripts that name their own voices too.
    cfg["_explicit_voice"] = any(config.get(k) is not None for k in ("engine", "voice"))
    return cfg


def sample_files(folder: Path) -> dict[str, str]:
    """{name: sha256} of a finished sample folder's files, for its manifest row (the seal and
    hidden files left out)."""
    return {p.name: sha256_file(p) for p in sorted(folder.iterdir())
            if p.is_file() and p.name != DONE and not p.name.startswith(".")}


def tighten(seg: np.ndarray, sr: int) -> np.ndarray:
    """Drop leading and trailing 10 ms frames whose RMS (over the frame and its two neighbours)
    is under EDGE_REL of the loudest frame's (decays, breaths and clicks, which a speech detector
    does not count as speech), then trim to the first and last sample above TRIM_THRESHOLD again,
    so the piece still starts and ends with a sample above it and the annotations stay exact."""
    frame = max(1, int(round(EDGE_FRAME_S * sr)))
    n = len(seg) // frame
    if n < 3:
        return seg
    power = np.mean(np.square(seg[:n * frame].astype(np.float64)).reshape(n, frame), axis=1)
    # RMS over 3 frames centred on each (an isolated click at the edge does not count)
    rms = np.sqrt(np.convolve(np.pad(power, 1, mode="edge"), np.ones(3) / 3, mode="valid"))
    loud = np.flatnonzero(rms >= EDGE_REL * rms.max())
    first, last = loud[0] * frame, len(seg) if loud[-1] == n - 1 else (loud[-1] + 1) * frame
    out = trim(seg[first:last])
    return out if out.size else seg


def render(engine, text: str, sample_rate: int, tight: bool = False) -> np.ndarray:
    seg = _render(engine, text, sample_rate)
    return tighten(seg, sample_rate) if tight else seg


def _target(target: str) -> Callable:
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def build_job(job: dict) -> tuple[str, object]:
    """("ok", (built, {speaker: voice record} or None)) or ("error", one line). Runs in a worker
    process too, so it returns its errors instead of raising (exceptions do not all pickle)."""
    try:
        rate, tight = job["sample_rate"], job["tight"]
        if job["voices"] is None:
            engine = load_engine(*job["single"])

            def speak(text: str, speaker: str = "user"):
                return render(engine, text, rate, tight)
            records = None
        else:
            engines = {sp: voicemix.load(spec) for sp, spec in job["voices"].items()}

            def speak(text: str, speaker: str = "user"):
                return render(engines[speaker], text, rate, tight)
            records = {sp: voicemix.record(engines[sp], job["voices"][sp]) for sp in job["voices"]}
        return "ok", (_target(job["builder"])(job["payload"], speak, rate), records)
    except DuplexEvalError as exc:
        return "error", str(exc)


def render_job(job: tuple) -> tuple[str, object]:
    """("ok", float32 segment) or ("error", one line) for one (voice spec, text, rate, tight)."""
    spec, text, sr, tight = job
    try:
        return "ok", render(voicemix.load(spec), text, sr, tight)
    except DuplexEvalError as exc:
        return "error", str(exc)


def _init_worker() -> None:
    os.environ.setdefault("OMP_NUM_THREADS", "1")


class Pool:
    """A stage's worker processes for synthesis (`jobs`), started on first use. Work runs in this
    process when jobs is 1 or when called from the main thread: a stage built without
    workers=jobs runs one sample at a time, and worker processes would only add their start-up."""

    def __init__(self, jobs: int):
        self.jobs = jobs
        self._lock = threading.Lock()
        self._pool: ProcessPoolExecutor | None = None

    def _get(self) -> ProcessPoolExecutor | None:
        if self.jobs <= 1 or threading.current_thread() is threading.main_thread():
            return None
        with self._lock:
            if self._pool is None:
                self._pool = ProcessPoolExecutor(max_workers=self.jobs, mp_context=get_context("spawn"),
                                                 initializer=_init_worker)
            return self._pool

    def build(self, builder: str, payload: Any, voices: dict | None, sample_rate: int, tight: bool = False,
              single: tuple | None = None) -> tuple[Any, dict | None]:
        """builder(payload, speak, sample_rate) in a worker ("module:function"); voices: {speaker:
        spec}, or None for the single (engine, voice). Raises DuplexEvalError (one line)."""
        job = {"builder": builder, "payload": payload, "voices": voices, "single": single,
               "sample_rate": sample_rate, "tight": tight}
        pool = self._get()
        status, result = pool.submit(build_job, job).result() if pool else build_job(job)
        if status != "ok":
            raise DuplexEvalError(str(result))
        return result

    def render(self, pieces: list[tuple[dict, str]], sample_rate: int, tight: bool = False) -> list[np.ndarray]:
        """One segment per (voice spec, text), in order; DuplexEvalError for the first failure."""
        jobs = [(spec, text, sample_rate, tight) for spec, text in pieces]
        pool = self._get()
        results = list(pool.map(render_job, jobs)) if pool else [render_job(j) for j in jobs]
        out = []
        for status, value in results:
            if status != "ok":
                raise DuplexEvalError(f"synthesis failed: {value}")
            out.append(value)
        return out

    def close(self) -> None:
        with self._lock:
            if self._pool is not None:
                self._pool.shutdown()
                self._pool = None


class Synth:
    """The service a dataset builder gets (module docstring)."""

    PEAK = PEAK
    TRIM_THRESHOLD = TRIM_THRESHOLD
    EDGE_FRAME_S = EDGE_FRAME_S
    EDGE_REL = EDGE_REL
    version = __version__
    generator = "tts-synth"

    check_config = staticmethod(check_config)
    sample_files = staticmethod(sample_files)
    engine = staticmethod(load_engine)
    load = staticmethod(voicemix.load)
    record = staticmethod(voicemix.record)
    choose = staticmethod(voicemix.choose)
    parse_specs = staticmethod(voicemix.parse_specs)
    render = staticmethod(render)
    trim = staticmethod(trim)

    @staticmethod
    def pool(jobs: int) -> Pool:
        return Pool(jobs)


SYNTH = Synth()
