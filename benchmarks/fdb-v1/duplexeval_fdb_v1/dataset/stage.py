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


from duplexeval_common import script_stage
from duplexeval_common.errors import DuplexEvalError, SampleError
from duplexeval_common.hashing import sha256_json
from duplexeval_common.jsonio import read_json
from duplexeval_common.progress import log
from duplexeval_common.samples import Inputs, Sample
from duplexeval_common.stage import SampleContext, StageContext

from ..schemas import SCHEMAS
from .compose import Built, backchannel_gt, speakers_of, transcription
from .scripts import Script, load_scripts, parse_entry

ICC_GT = "icc_gt_distribution.json"
BUILDER = "duplexeval_fdb_v1.dataset.compose:build"   # runs in tts-synth's worker processes


class DatasetStage:
    """Holds the scripts between `select` and `process`, and the engines from `setup`."""

    def __init__(self, config: dict, synth):
        self.synth = synth
        self.cfg = synth.check_config(config)
        self.jobs: int = self.cfg["jobs"]
        self.scripts: dict[str, Script] = {}
        self.samples: list[Sample] = []
        self.engine = None                         # the single voice of fdb-mini-script/1 files
        self.loaded: dict[str, dict] = {}          # voice-spec id -> record, for the manifest
        self.pool = synth.pool(self.jobs)

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
        folder = script_stage.script_folder(inputs, "benchmarks/fdb-v1/datasets/fdb-mini")
        self.scripts = load_scripts(folder, self.cfg["timing"], self.synth.parse_specs)
        self.cfg["dataset"] = self.cfg["dataset"] or folder.name
        bc = [s for s, sc in self.scripts.items() if sc.task == "backchannel"]
        if len(bc) > 1:
            raise DuplexEvalError(f"at most one backchannel subset per dataset ({ICC_GT} is keyed by "
                                  f"sample id); found {', '.join(sorted(bc))}")
        self.scripts = script_stage.keep_subsets(self.scripts, self.cfg["subsets"])
        self.samples = script_stage.script_samples(self.scripts, self.cfg["limit"], self.cfg["samples"])
        return self.samples

    def setup(self, _config: dict) -> None:
        """Load every engine and voice in use, so a missing one stops the stage in one line."""
        used = {s.subset for s in self.samples}
        for subset in sorted(used):
            mix = self.mix(self.scripts[subset])
            if mix is None:
                if self.engine is None:
                    self.engine = self.synth.engine(self.cfg["engine"], self.cfg["voice"])
                continue
            for spec in mix[0]:
                key = script_stage.spec_id(spec)
                if key not in self.loaded:
                    self.loaded[key] = self.synth.record(self.synth.load(spec), spec)

    def process(self, ctx: SampleContext) -> None:
        script = self.scripts[ctx.sample.subset]
        raw = script.entries[int(ctx.sample.id)]
        try:
            entry = parse_entry(script.task, raw, script.v2)
        except ValueError as exc:
            raise SampleError(ctx.id, f"bad script entry {ctx.sample.id} in {script.path.name}: {exc}") from None
        rate = self.cfg["sample_rate"]
        mix = self.mix(script)
        voices = None if mix is None else self.synth.choose(mix[0], mix[1], ctx.id, speakers_of(entry))
        try:
            built, records = self.pool.build(BUILDER, {"task": script.task, "entry": entry, "timing": script.timing},
                                             voices, rate, tight=script.v2,
                                             single=(self.cfg["engine"], self.cfg["voice"]))
        except DuplexEvalError as exc:
            raise SampleError(ctx.id, str(exc)) from None
        assert isinstance(built, Built)
        ctx.write_wav("input.wav", built.audio, rate)
        for name, audio in built.extra_wavs.items():
            ctx.write_wav(name, audio, rate)
        name, schema, official = built.official
        ctx.write_json(name, official, SCHEMAS[schema] if schema else None)
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
        for s, folder in script_stage.each_built(self.samples, sctx, rows):
            files = self.synth.sample_files(folder)
            sample = read_json(folder / "sample.json")
            duration = float(sample["duration_s"])
            row = {"subset": s.subset, "id": s.id, "task": s.task, "duration_s": duration, "files": files}
            if "voices" in sample:
                row["voices"] = {sp: script_stage.voice_row(v) for sp, v in sample["voices"].items()}
            rows.append(row)
            if "backchannel" in sample:
                bc, sr = sample["backchannel"], int(sample["sample_rate"])
                gt[s.id] = backchannel_gt(bc["trps"], int(round(duration * sr)), sr,
                                          bc["delay_s"], bc["sd_s"], bc["bin_s"], bc.get("floor", 0.0))
            audio_s += duration
            status = sctx.statuses[s.key]
            synth_s += status.get("seconds", 0.0)
            cached += bool(status.get("cached"))
        manifest = {
            "dataset": self.cfg["dataset"],
            "version": script_stage.scripts_version(script_stage.used_scripts(self.scripts, rows)),
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
        out: dict = {"generator": self.synth.generator, "generator_version": self.synth.version}
        e = self.engine
        if e is not None or not self.loaded:  # the single voice (the original manifest keys)
            if e is None:
                e = self.engine = self.synth.engine(self.cfg["engine"], self.cfg["voice"])
            out |= {"engine": e.name, "voice": e.voice, "voice_model_sha256": e.model_sha256,
                    "engine_settings": e.settings, "engine_sample_rate": e.sample_rate}
        out["settings"] = {"sample_rate": self.cfg["sample_rate"], "limit": self.cfg["limit"],
                           "peak": self.synth.PEAK, "trim_threshold": self.synth.TRIM_THRESHOLD,
                           **({"edge_trim": {"frame_s": self.synth.EDGE_FRAME_S, "relative_rms": self.synth.EDGE_REL,
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


def make_stage(config: dict, synth) -> DatasetStage:
    """The dataset stage's hooks for a folder of Full-Duplex-Bench scripts: `jobs` samples at
    once, each synthesized in one of tts-synth's worker processes (synth: duplexeval_tts.synth)."""
    return DatasetStage(config, synth)
