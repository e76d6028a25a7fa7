"""The dataset stage of Full-Duplex-Bench v1.5 (the `dataset` hook): select samples from the
scripts, build each, write the manifest.

Per sample, in `samples/<subset>/<id>/`:

- `input.wav`: the user's audio with the overlap event (mono 16-bit PCM at `sample_rate`);
- `clean_input.wav`: the same audio without it: the same rate and length, sample-identical
  outside the overlap window (compose.py says why, by construction);
- `metadata.json`: the official format, `{"context_text", "current_turn_text", "timestamps":
  [start, end]}` (the event's text is current_turn_text; the window in seconds, rounded to 1e-6);
- `sample.json`: our annotation (schemas/sample.schema.json of this package, and the shared
  one): the context and the overlap (its exact sample indices as well), the voices.

Voices. A script's `voices` is one mix for every speaker (the `other` speaker then avoids the
user's voice while the mix has another) or a mix per speaker (`{"user": [...], "other": [...]}`).
The config's `voices` replaces every script's mix, and an explicit config `engine`/`voice`
speaks everything in that one voice. Each speaker of each sample gets a voice drawn from
sha256(seed, subset/id, speaker) (tts-synth's voices.choose), so the choice depends only on the
seed and the sample; the voices are recorded in sample.json and the manifest row.

Jobs. `jobs` worker processes synthesize samples; every sample depends only on its own entry and
voices, so the bytes do not depend on `jobs`.
"""

from __future__ import annotations


import numpy as np

from duplexeval_common import script_stage
from duplexeval_common.errors import DuplexEvalError, SampleError
from duplexeval_common.hashing import sha256_json
from duplexeval_common.jsonio import read_json
from duplexeval_common.progress import log
from duplexeval_common.samples import Inputs, Sample
from duplexeval_common.stage import SampleContext, StageContext

from ..schemas import SCHEMAS
from .compose import Built
from .scripts import Script, load_scripts, parse_entry

BUILDER = "duplexeval_fdb_v1_5.dataset.compose:build"   # runs in tts-synth's worker processes
TIME_DIGITS = 6                                          # times in metadata.json and sample.json: 1e-6 s


def seconds(n: int, sr: int) -> float:
    """A sample index as seconds, rounded to 1e-6 (round(t * sr) gives the index back up to far
    beyond 1 MHz)."""
    return round(n / sr, TIME_DIGITS)


def metadata(entry: dict, start_s: float, end_s: float) -> dict:
    """metadata.json, the official format exactly."""
    return {"context_text": entry["context"], "current_turn_text": entry["event"],
            "timestamps": [start_s, end_s]}


def _identity(spec: dict) -> tuple:
    return spec["engine"], spec.get("voice")


class DatasetStage:
    """Holds the scripts between `select` and `process`, and the voices from `setup`."""

    def __init__(self, config: dict, synth):
        self.synth = synth
        self.cfg = synth.check_config(config)
        self.scripts: dict[str, Script] = {}
        self.samples: list[Sample] = []
        self.loaded: dict[str, dict] = {}          # voice-spec id -> record, for the manifest
        self.pool = synth.pool(self.cfg["jobs"])

    # -- voices --------------------------------------------------------------------------------

    def mix(self, script: Script) -> tuple[list | dict, int]:
        """(voice mix: a list for every speaker or {speaker: list}, seed) of a script's samples."""
        seed = self.cfg["seed"] if self.cfg["seed"] is not None else script.seed
        if self.cfg["voices"] is not None:
            return self.cfg["voices"], seed
        if self.cfg["_explicit_voice"] or script.voices is None:
            return [{"engine": self.cfg["engine"], "voice": self.cfg["voice"], "rate": 1.0, "weight": 1.0}], seed
        return script.voices, seed

    def choose(self, script: Script, key: str, speakers: list[str]) -> dict[str, dict]:
        """{speaker: voice spec} of one sample."""
        mix, seed = self.mix(script)
        if isinstance(mix, list):
            return self.synth.choose(mix, seed, key, speakers)
        chosen = self.synth.choose(mix["user"], seed, key, ["user"])
        if "other" in speakers:
            pool = mix.get("other", mix["user"])
            pool = [s for s in pool if _identity(s) != _identity(chosen["user"])] or pool
            chosen["other"] = self.synth.choose(pool, seed, key, ["other"])["other"]
        return chosen

    @staticmethod
    def specs(mix: list | dict) -> list[dict]:
        return list(mix) if isinstance(mix, list) else [s for sp in sorted(mix) for s in mix[sp]]

    # -- Stage hooks -------------------------------------------------------------------------

    def select(self, inputs: Inputs, _config: dict) -> list[Sample]:
        folder = script_stage.script_folder(inputs, "benchmarks/fdb-v1.5/datasets/fdb-v1.5-mini")
        self.scripts = load_scripts(folder, self.cfg["timing"], self.synth.parse_specs)
        self.cfg["dataset"] = self.cfg["dataset"] or folder.name
        self.scripts = script_stage.keep_subsets(self.scripts, self.cfg["subsets"])
        self.samples = script_stage.script_samples(self.scripts, self.cfg["limit"], self.cfg["samples"])
        return self.samples

    def setup(self, _config: dict) -> None:
        """Load every voice in use, so a missing engine or voice stops the stage in one line."""
        for subset in sorted({s.subset for s in self.samples}):
            for spec in self.specs(self.mix(self.scripts[subset])[0]):
                key = script_stage.spec_id(spec)
                if key not in self.loaded:
                    self.loaded[key] = self.synth.record(self.synth.load(spec), spec)

    def process(self, ctx: SampleContext) -> None:
        script = self.scripts[ctx.sample.subset]
        raw = script.entries[int(ctx.sample.id)]
        rate = self.cfg["sample_rate"]
        try:
            entry = parse_entry(script.task, raw)
            if entry["lowpass_hz"] is not None and entry["lowpass_hz"] >= rate / 2:
                raise ValueError(f"lowpass_hz {entry['lowpass_hz']:g} is not below half the sample rate "
                                 f"({rate} Hz)")
        except ValueError as exc:
            raise SampleError(ctx.id, f"bad script entry {ctx.sample.id} in {script.path.name}: {exc}") from None
        speakers = ["user"] + (["other"] if entry["speaker"] != "user" else [])
        voices = self.choose(script, ctx.id, speakers)
        payload = {"entry": entry, "timing": script.timing, "peak": self.synth.PEAK,
                   "threshold": self.synth.TRIM_THRESHOLD, "edge_frame_s": self.synth.EDGE_FRAME_S,
                   "edge_rel": self.synth.EDGE_REL}
        try:
            built, records = self.pool.build(BUILDER, payload, voices, rate, tight=True)
        except DuplexEvalError as exc:
            raise SampleError(ctx.id, str(exc)) from None
        assert isinstance(built, Built)
        check_twins(ctx.id, built)
        (c0, c1), (s, e) = built.context, built.overlap
        start, end = seconds(s, rate), seconds(e, rate)
        meta = metadata(entry, start, end)
        SCHEMAS.validate("metadata", meta, ctx.id)
        sample = {
            "dataset": self.cfg["dataset"], "subset": ctx.sample.subset, "id": ctx.sample.id,
            "task": script.task, "duration_s": len(built.audio) / rate, "sample_rate": rate,
            "segments": [
                {"speaker": "user", "text": entry["context"], "start": seconds(c0, rate),
                 "end": seconds(c1, rate), "role": "context"},
                {"speaker": entry["speaker"], "text": entry["event"], "start": start, "end": end,
                 "role": "overlap"}],
            "context": {"text": entry["context"], "start": seconds(c0, rate), "end": seconds(c1, rate),
                        "start_sample": c0, "end_sample": c1},
            "overlap": {"start": start, "end": end, "start_sample": s, "end_sample": e,
                        "kind": entry["kind"], "text": entry["event"], "speaker": entry["speaker"],
                        "level_db": entry["level_db"], "lowpass_hz": entry["lowpass_hz"]},
            "voices": records,
            "script_sha256": sha256_json(raw),
        }
        SCHEMAS.validate("sample", sample, ctx.id)
        ctx.write_wav("input.wav", built.audio, rate)
        ctx.write_wav("clean_input.wav", built.clean, rate)
        ctx.write_json("metadata.json", meta)
        ctx.write_json("sample.json", sample, "sample")

    def finalize(self, sctx: StageContext) -> None:
        self.close()
        rows, audio_s, synth_s, cached = [], 0.0, 0.0, 0
        for s, folder in script_stage.each_built(self.samples, sctx, rows):
            sample = read_json(folder / "sample.json")
            duration = float(sample["duration_s"])
            rows.append({"subset": s.subset, "id": s.id, "task": s.task, "duration_s": duration,
                         "files": self.synth.sample_files(folder),
                         "voices": {sp: script_stage.voice_row(v) for sp, v in sample["voices"].items()}})
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
        sctx.write_json("manifest.json", manifest, "manifest")
        log(f"[tts-synth] manifest: {len(rows)} samples ({cached} cached), {audio_s:.1f} s of audio per input; "
            f"{synth_s:.1f} s spent synthesizing in this run")

    # -- helpers -----------------------------------------------------------------------------

    def close(self) -> None:
        self.pool.close()

    def source(self) -> dict:
        mixes = {}
        for sub, sc in sorted(self.scripts.items()):
            mix, seed = self.mix(sc)
            mixes[sub] = {"seed": seed, "voices": mix}
        return {
            "generator": self.synth.generator, "generator_version": self.synth.version,
            "settings": {"sample_rate": self.cfg["sample_rate"], "limit": self.cfg["limit"],
                         "peak": self.synth.PEAK, "trim_threshold": self.synth.TRIM_THRESHOLD,
                         "edge_trim": {"frame_s": self.synth.EDGE_FRAME_S, "relative_rms": self.synth.EDGE_REL},
                         "timing": {sub: sc.timing for sub, sc in sorted(self.scripts.items())}},
            "scripts": {sc.path.name: sc.sha256 for _, sc in sorted(self.scripts.items())},
            "voice_mixes": mixes,
            "voices": {k: self.loaded[k] for k in sorted(self.loaded)},
        }


def check_twins(sample: str, built: Built) -> None:
    """What compose.py builds by construction, checked on the 16-bit samples written: both
    inputs as long, the same outside the window, and differing at its first and last sample."""
    a = np.round(np.asarray(built.audio, dtype=np.float64) * 32767.0)
    b = np.round(np.asarray(built.clean, dtype=np.float64) * 32767.0)
    s, e = built.overlap
    diff = np.flatnonzero(a != b)
    if len(a) != len(b) or diff.size == 0 or diff[0] != s or diff[-1] != e - 1:
        raise RuntimeError(f"{sample}: internal error: input.wav and clean_input.wav differ outside the "
                           f"window [{s}, {e}) or not at its edges")


def make_stage(config: dict, synth) -> DatasetStage:
    """The dataset stage's hooks for a folder of Full-Duplex-Bench v1.5 scripts: `jobs` samples at
    once, each synthesized in one of tts-synth's worker processes (synth: duplexeval_tts.synth)."""
    return DatasetStage(config, synth)
