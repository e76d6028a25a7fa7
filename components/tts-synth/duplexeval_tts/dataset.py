"""The dataset stage: select samples from the scripts, build each, write the manifest.

Voices. A script in the original format ("fdb-mini-script/1") is spoken by the
config's single engine and voice, and its files are the same bytes as before
voice mixes existed. A voice mix (the config's `voices`, else an
"fdb-script/2" script's `voices`) gives every speaker of every sample a voice
drawn from the seed and the sample id (voices.choose), recorded in sample.json
and in the manifest row.

Jobs. `jobs` worker processes synthesize samples (the stage runs that many
samples at once, each handing its synthesis to the process pool and writing
its files itself); every sample depends only on its own script entry and
voice, so the bytes do not depend on `jobs`.
"""

from __future__ import annotations

from pathlib import Path

import os
import threading
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

from duplexeval_common.errors import DuplexEvalError, SampleError
from duplexeval_common.hashing import sha256_file, sha256_json
from duplexeval_common.jsonio import read_json
from duplexeval_common.progress import log
from duplexeval_common.samples import DONE, SAMPLES, Inputs, Sample
from duplexeval_common.stage import SampleContext, Stage, StageContext

from . import __version__
from . import voices as voicemix
from .compose import BUILDERS, Built, backchannel_gt, speakers_of, transcription
from .engines import PEAK, TRIM_THRESHOLD, Engine, load_engine, render
from .scripts import Script, load_scripts, parse_entry, select_subsets

DEFAULTS = {"dataset": "fdb-mini", "limit": None, "engine": "piper", "voice": None,
            "sample_rate": 16000, "timing": {}, "voices": None, "seed": None, "jobs": None, "samples": None,
            "subsets": None}
MAX_JOBS = 8
ICC_GT = "icc_gt_distribution.json"


def sample_files(folder: Path) -> dict[str, str]:
    """{name: sha256} of a finished sample folder's files, for its manifest row (the seal and
    hidden files left out)."""
    return {p.name: sha256_file(p) for p in sorted(folder.iterdir())
            if p.is_file() and p.name != DONE and not p.name.startswith(".")}


def default_jobs() -> int:
    """The cores this process may use, capped at MAX_JOBS."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(MAX_JOBS, cores))


def check_config(config: dict) -> dict:
    unknown = set(config) - set(DEFAULTS)
    if unknown:
        raise DuplexEvalError(f"unknown tts-synth setting(s) {', '.join(sorted(unknown))}; "
                              f"known: {', '.join(DEFAULTS)}")
    cfg = {**DEFAULTS, **{k: v for k, v in config.items() if v is not None or k == "limit"}}
    if not isinstance(cfg["dataset"], str) or not cfg["dataset"]:
        raise DuplexEvalError("setting dataset must be a non-empty string")
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
    if cfg["jobs"] is None:
        cfg["jobs"] = default_jobs()
    # An explicit engine/voice in the config speaks fdb-script/2 files too (a one-voice mix).
    cfg["_explicit_voice"] = any(config.get(k) is not None for k in ("engine", "voice"))
    return cfg


# -- one sample, in this process or a worker --------------------------------------------------

def build_job(job: dict) -> tuple[str, object]:
    """("ok", (Built, {speaker: voice record} or None)) or ("error", one line). Runs in a worker
    process, so it returns its errors instead of raising (exceptions do not all pickle)."""
    try:
        rate = job["sample_rate"]
        if job["voices"] is None:
            engine = load_engine(*job["single"])

            def speak(text: str, speaker: str = "user"):
                return render(engine, text, rate)
            records = None
        else:
            engines = {sp: voicemix.load(spec) for sp, spec in job["voices"].items()}

            def speak(text: str, speaker: str = "user"):
                seg = render(engines[speaker], text, rate)
                return tighten(seg, rate) if job.get("tight") else seg
            records = {sp: voicemix.record(engines[sp], job["voices"][sp]) for sp in job["voices"]}
        built = BUILDERS[job["task"]](job["entry"], job["timing"], speak, rate)
        return "ok", (built, records)
    except DuplexEvalError as exc:
        return "error", str(exc)


EDGE_FRAME_S = 0.01     # fdb-script/2: frames of the edge trim
EDGE_REL = 0.05         # fdb-script/2: edge frames whose RMS is below this share of the loudest frame's


def tighten(seg, sr: int):
    """fdb-script/2 pieces: drop leading and trailing 10 ms frames whose RMS (over the frame and
    its two neighbours) is under EDGE_REL of the loudest frame's (decays, breaths and clicks,
    which a speech detector does not count as speech), then trim to the first and last sample
    above TRIM_THRESHOLD again, so the piece still starts and ends with a sample above it and
    the annotations stay exact."""
    import numpy as np
    from .engines import trim
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


def _init_worker() -> None:
    os.environ.setdefault("OMP_NUM_THREADS", "1")


class SynthesisPool:
    """A stage's worker processes for synthesis (`jobs`), started on first use. None when jobs is
    1, or when `process` runs on the main thread: a Stage built without workers=jobs runs one
    sample at a time, and worker processes would only add their start-up."""

    def __init__(self, jobs: int):
        self.jobs = jobs
        self._lock = threading.Lock()
        self._pool: ProcessPoolExecutor | None = None

    def get(self) -> ProcessPoolExecutor | None:
        if self.jobs <= 1 or threading.current_thread() is threading.main_thread():
            return None
        with self._lock:
            if self._pool is None:
                self._pool = ProcessPoolExecutor(max_workers=self.jobs, mp_context=get_context("spawn"),
                                                 initializer=_init_worker)
            return self._pool

    def close(self) -> None:
        with self._lock:
            if self._pool is not None:
                self._pool.shutdown()
                self._pool = None


class DatasetStage:
    """Holds the scripts between `select` and `process`, and the engines from `setup`."""

    def __init__(self, config: dict):
        self.cfg = check_config(config)
        self.jobs: int = self.cfg["jobs"]
        self.scripts: dict[str, Script] = {}
        self.samples: list[Sample] = []
        self.engine: Engine | None = None          # the single voice of fdb-mini-script/1 files
        self.loaded: dict[str, dict] = {}          # voice-spec id -> record, for the manifest
        self.pool = SynthesisPool(self.jobs)

    # -- voices --------------------------------------------------------------------------------

    def mix(self, script: Script) -> tuple[list[dict], int] | None:
        """(voice specs, seed) of a script, or None when its single-voice bytes are kept."""
        seed = self.cfg["seed"] if self.cfg["seed"] is not None else (script.seed or 0)
        if self.cfg["voices"] is not None:
            return self.cfg["voices"], seed
        if not script.v2:
            return None
        if self.cfg["_explicit_voice"] or script.voices is None:
            return [{"engine": self.cfg["engine"], "voice": self.cfg["voice"], "rate": 1.0,
                     "weight": 1.0}], seed
        return script.voices, seed

    # -- Stage hooks -------------------------------------------------------------------------

    def select(self, inputs: Inputs, _config: dict) -> list[Sample]:
        if len(inputs.dirs) != 1:
            raise DuplexEvalError("tts-synth needs exactly one --input: the dataset's script folder "
                                  "(e.g. datasets/fdb-mini)")
        self.scripts = load_scripts(inputs.dirs[0], self.cfg["timing"])
        bc = [s for s, sc in self.scripts.items() if sc.task == "backchannel"]
        if len(bc) > 1:
            raise DuplexEvalError(f"at most one backchannel subset per dataset ({ICC_GT} is keyed by "
                                  f"sample id); found {', '.join(sorted(bc))}")
        keep = select_subsets(list(self.scripts), self.cfg["subsets"], "tts-synth")
        self.scripts = {k: v for k, v in self.scripts.items() if k in keep}
        limit = self.cfg["limit"]
        self.samples = [Sample(subset, str(i)) for subset, script in sorted(self.scripts.items())
                        for i in range(len(script.entries) if limit is None
                                       else min(limit, len(script.entries)))]
        if self.cfg["samples"] is not None:  # only these (after limit), in the dataset's order
            keys = set(self.cfg["samples"])
            unknown = keys - {s.key for s in self.samples}
            if unknown:
                raise DuplexEvalError(f"setting samples names {len(unknown)} sample(s) the scripts do not have "
                                      f"(within limit), e.g. {sorted(unknown)[0]}")
            self.samples = [s for s in self.samples if s.key in keys]
        return self.samples

    def setup(self, _config: dict) -> None:
        """Load every engine and voice in use, so a missing one stops the stage in one line."""
        used = {s.subset for s in self.samples}
        for subset in sorted(used):
            mix = self.mix(self.scripts[subset])
            if mix is None:
                if self.engine is None:
                    self.engine = load_engine(self.cfg["engine"], self.cfg["voice"])
                continue
            for spec in mix[0]:
                key = _spec_id(spec)
                if key not in self.loaded:
                    self.loaded[key] = voicemix.record(voicemix.load(spec), spec)

    def process(self, ctx: SampleContext) -> None:
        script = self.scripts[ctx.sample.subset]
        raw = script.entries[int(ctx.sample.id)]
        try:
            entry = parse_entry(script.task, raw, script.v2)
        except ValueError as exc:
            raise SampleError(ctx.id, f"bad script entry {ctx.sample.id} in {script.path.name}: {exc}") from None
        rate = self.cfg["sample_rate"]
        mix = self.mix(script)
        job = {"task": script.task, "entry": entry, "timing": script.timing, "sample_rate": rate,
               "tight": script.v2,
               "single": (self.cfg["engine"], self.cfg["voice"]),
               "voices": None if mix is None else voicemix.choose(mix[0], mix[1], ctx.id, speakers_of(entry))}
        pool = self.pool.get()
        status, result = pool.submit(build_job, job).result() if pool else build_job(job)
        if status != "ok":
            raise SampleError(ctx.id, str(result))
        built, records = result
        assert isinstance(built, Built)
        ctx.write_wav("input.wav", built.audio, rate)
        for name, audio in built.extra_wavs.items():
            ctx.write_wav(name, audio, rate)
        name, schema, official = built.official
        ctx.write_json(name, official, schema)
        if script.v2 and name != "transcription.json" and script.task != "user_interruption":
            ctx.write_json("transcription.json", transcription(built.segments))
        sample = {
            "dataset": self.cfg["dataset"], "subset": ctx.sample.subset, "id": ctx.sample.id,
            "task": script.task, "duration_s": len(built.audio) / rate, "sample_rate": rate,
            "segments": built.segments, **built.annotation, "script_sha256": sha256_json(raw),
        }
        if records is not None:
            sample["voices"] = records
        ctx.write_json("sample.json", sample, "sample")

    def finalize(self, sctx: StageContext) -> None:
        self.close()
        rows, audio_s, synth_s, cached = [], 0.0, 0.0, 0
        gt: dict[str, list[float]] = {}
        for s in self.samples:
            status = sctx.statuses.get(s.key, {})
            if status.get("status") != "ok":
                # Listed, so later stages and the scores count it as failed, not as absent.
                rows.append({"subset": s.subset, "id": s.id, "task": s.task, "status": "failed",
                             "reason": status.get("reason", "not built")})
                continue
            folder = sctx.output / SAMPLES / s.subset / s.id
            files = sample_files(folder)
            sample = read_json(folder / "sample.json")
            duration = float(sample["duration_s"])
            row = {"subset": s.subset, "id": s.id, "task": s.task, "duration_s": duration, "files": files}
            if "voices" in sample:
                row["voices"] = {sp: {k: v[k] for k in ("engine", "voice", "rate", "model_sha256")}
                                 | {"settings_sha256": sha256_json(v["settings"])}
                                 for sp, v in sample["voices"].items()}
            rows.append(row)
            if "backchannel" in sample:
                bc, sr = sample["backchannel"], int(sample["sample_rate"])
                gt[s.id] = backchannel_gt(bc["trps"], int(round(duration * sr)), sr,
                                          bc["delay_s"], bc["sd_s"], bc["bin_s"], bc.get("floor", 0.0))
            audio_s += duration
            synth_s += status.get("seconds", 0.0)
            cached += bool(status.get("cached"))
        used = {sub: sc for sub, sc in self.scripts.items() if any(r["subset"] == sub for r in rows)}
        manifest = {
            "dataset": self.cfg["dataset"],
            "version": sha256_json({sub: sc.sha256 for sub, sc in sorted(used.items())})[:16],
            "source": self.source(),
            "samples": rows,
        }
        if gt:
            sctx.write_json(ICC_GT, gt)
        sctx.write_json("manifest.json", manifest, "manifest")
        log(f"[tts-synth] manifest: {len(rows)} samples ({cached} cached), {audio_s:.1f} s of audio; "
            f"{synth_s:.1f} s spent synthesizing in this run")

    # -- helpers -----------------------------------------------------------------------------

    def close(self) -> None:
        self.pool.close()

    def source(self) -> dict:
        out: dict = {"generator": "tts-synth", "generator_version": __version__}
        e = self.engine
        if e is not None or not self.loaded:  # the single voice (the original manifest keys)
            if e is None:
                e = self.engine = load_engine(self.cfg["engine"], self.cfg["voice"])
            out |= {"engine": e.name, "voice": e.voice, "voice_model_sha256": e.model_sha256,
                    "engine_settings": e.settings, "engine_sample_rate": e.sample_rate}
        out["settings"] = {"sample_rate": self.cfg["sample_rate"], "limit": self.cfg["limit"],
                           "peak": PEAK, "trim_threshold": TRIM_THRESHOLD,
                           **({"edge_trim": {"frame_s": EDGE_FRAME_S, "relative_rms": EDGE_REL,
                                             "applies_to": "fdb-script/2"}}
                              if any(sc.v2 for sc in self.scripts.values()) else {}),
                           "timing": {sub: sc.timing for sub, sc in sorted(self.scripts.items())}}
        out["scripts"] = {sc.path.name: sc.sha256 for _, sc in sorted(self.scripts.items())}
        if self.loaded:
            mixes = {}
            for sub, sc in sorted(self.scripts.items()):
                mix = self.mix(sc)
                if mix is not None:
                    mixes[sub] = {"seed": mix[1], "voices": mix[0]}
            out["voice_mixes"] = mixes
            out["voices"] = {k: self.loaded[k] for k in sorted(self.loaded)}
        return out


def _spec_id(spec: dict) -> str:
    return f"{spec['engine']}:{spec['voice'] or 'default'}@{float(spec.get('rate', 1.0)):g}"


def make_stage(config: dict) -> Stage:
    """The tts-synth stage: `jobs` samples at once, each synthesized in a worker process."""
    ds = DatasetStage(config)
    return Stage("tts-synth", __version__, ds.process, finalize=ds.finalize, select=ds.select,
                 setup=ds.setup, workers=ds.jobs)
