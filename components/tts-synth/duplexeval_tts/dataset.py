"""The dataset stage: select samples from the scripts, build each, write the manifest."""

from __future__ import annotations

from pathlib import Path

from duplexeval_common.errors import DuplexEvalError, SampleError
from duplexeval_common.hashing import sha256_file, sha256_json
from duplexeval_common.progress import log
from duplexeval_common.samples import DONE, SAMPLES, Inputs, Sample
from duplexeval_common.stage import SampleContext, StageContext

from . import __version__
from .compose import BUILDERS
from .engines import PEAK, TRIM_THRESHOLD, Engine, load_engine, render
from .scripts import Script, load_scripts, parse_entry

DEFAULTS = {"dataset": "fdb-mini", "limit": None, "engine": "piper", "voice": None,
            "sample_rate": 16000, "timing": {}}


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
    return cfg


class DatasetStage:
    """Holds the scripts between `select` and `process`, and the engine from `setup`."""

    def __init__(self, config: dict):
        self.cfg = check_config(config)
        self.scripts: dict[str, Script] = {}
        self.samples: list[Sample] = []
        self.engine: Engine | None = None

    # -- Stage hooks -------------------------------------------------------------------------

    def select(self, inputs: Inputs, _config: dict) -> list[Sample]:
        if len(inputs.dirs) != 1:
            raise DuplexEvalError("tts-synth needs exactly one --input: the dataset's script folder "
                                  "(e.g. datasets/fdb-mini)")
        self.scripts = load_scripts(inputs.dirs[0], self.cfg["timing"])
        limit = self.cfg["limit"]
        self.samples = [Sample(subset, str(i)) for subset, script in sorted(self.scripts.items())
                        for i in range(len(script.entries) if limit is None
                                       else min(limit, len(script.entries)))]
        return self.samples

    def setup(self, _config: dict) -> None:
        self.engine = load_engine(self.cfg["engine"], self.cfg["voice"])

    def process(self, ctx: SampleContext) -> None:
        script = self.scripts[ctx.sample.subset]
        raw = script.entries[int(ctx.sample.id)]
        try:
            entry = parse_entry(script.task, raw)
        except ValueError as exc:
            raise SampleError(ctx.id, f"bad script entry {ctx.sample.id} in {script.path.name}: {exc}") from None
        rate = self.cfg["sample_rate"]
        built = BUILDERS[script.task](entry, script.timing, self._speaker(ctx.id, rate), rate)
        ctx.write_wav("input.wav", built.audio, rate)
        for name, audio in built.extra_wavs.items():
            ctx.write_wav(name, audio, rate)
        name, schema, official = built.official
        ctx.write_json(name, official, schema)
        ctx.write_json("sample.json", {
            "dataset": self.cfg["dataset"], "subset": ctx.sample.subset, "id": ctx.sample.id,
            "task": script.task, "duration_s": len(built.audio) / rate, "sample_rate": rate,
            "segments": built.segments, **built.annotation, "script_sha256": sha256_json(raw),
        }, "sample")

    def finalize(self, sctx: StageContext) -> None:
        rows, audio_s, synth_s, cached = [], 0.0, 0.0, 0
        for s in self.samples:
            status = sctx.statuses.get(s.key, {})
            if status.get("status") != "ok":
                # Listed, so later stages and the scores count it as failed, not as absent.
                rows.append({"subset": s.subset, "id": s.id, "task": s.task, "status": "failed",
                             "reason": status.get("reason", "not built")})
                continue
            folder = sctx.output / SAMPLES / s.subset / s.id
            files = {p.name: sha256_file(p) for p in sorted(folder.iterdir())
                     if p.is_file() and p.name != DONE and not p.name.startswith(".")}
            duration = _duration(folder / "sample.json")
            rows.append({"subset": s.subset, "id": s.id, "task": s.task, "duration_s": duration,
                         "files": files})
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
        sctx.write_json("manifest.json", manifest, "manifest")
        log(f"[tts-synth] manifest: {len(rows)} samples ({cached} cached), {audio_s:.1f} s of audio; "
            f"{synth_s:.1f} s spent synthesizing in this run")

    # -- helpers -----------------------------------------------------------------------------

    def _speaker(self, key: str, rate: int):
        def speak(text: str):
            try:
                return render(self.engine, text, rate)
            except SampleError:
                raise
            except DuplexEvalError as exc:
                raise SampleError(key, str(exc)) from None
        return speak

    def source(self) -> dict:
        e = self.engine
        return {
            "generator": "tts-synth", "generator_version": __version__,
            "engine": e.name, "voice": e.voice, "voice_model_sha256": e.model_sha256,
            "engine_settings": e.settings, "engine_sample_rate": e.sample_rate,
            "settings": {"sample_rate": self.cfg["sample_rate"], "limit": self.cfg["limit"],
                         "peak": PEAK, "trim_threshold": TRIM_THRESHOLD,
                         "timing": {sub: sc.timing for sub, sc in sorted(self.scripts.items())}},
            "scripts": {sc.path.name: sc.sha256 for _, sc in sorted(self.scripts.items())},
        }


def _duration(sample_json: Path) -> float:
    from duplexeval_common.jsonio import read_json
    return float(read_json(sample_json)["duration_s"])
