"""The dataset stage for "mtr-script/1" folders: MTR-DuplexBench round samples and dialogues.

A features / instruction-following / safety dialogue with K rounds gives the K round samples
`<dialogue_id>-r01` .. `-rKK` (input.wav, history.wav, round.json; benchmarks/mtr/README.md); a dialogue-quality
dialogue gives the sample `<dialogue_id>` (dialogue.wav, dialogue.json). Each dialogue is
synthesized once: the first of its samples to run renders every piece (each distinct
(voice, text) once, in the `jobs` worker processes when there are several), lays the dialogue out
with the pure mtr_layout.layout and mixes the two channels; the dialogue's other samples are cut
from that (a few recent dialogues are kept; one evicted is built again, to the same bytes). A
dialogue that cannot be parsed, synthesized or laid out fails each of its samples with one line
naming the dialogue; the other dialogues go on. `limit` and `subsets` select dialogues: at most
`limit` dialogues per subset, every round of a dialogue kept together.

Voices: per role (user, model, background) from the script's `voices`, else DEFAULT_VOICES
(user piper joe, model flite slt, background flite kal at background_gain_db, -10 dB by
default). The config's `voices` mix (one voice per dialogue for the user, drawn from
sha256(seed, subset/dialogue_id, "user")) or an explicit `engine`/`voice` replaces the user's.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from pathlib import Path

import numpy as np

from duplexeval_common import script_stage
from duplexeval_common.errors import DuplexEvalError, SampleError
from duplexeval_common.jsonio import read_json
from duplexeval_common.progress import log
from duplexeval_common.samples import SAMPLES, Inputs, Sample
from duplexeval_common.script_stage import spec_id
from duplexeval_common.stage import SampleContext, StageContext

from ..schemas import SCHEMAS
from . import layout as mtr_layout
from . import script as mtr_script

SAMPLE_RATE = 16000
ROUND_FORMAT = "mtr-round/1"
DIALOGUE_FORMAT = "mtr-dialogue/1"
KEEP_DIALOGUES = 3          # built dialogues kept in memory (plus one per worker)


def round_id(dialogue_id: str, k: int) -> str:
    return f"{dialogue_id}-r{k:02d}"


def dialogue_of(sample_id: str) -> str:
    """The dialogue of a round sample id `<dialogue>-r<kk>` (the id itself when it is none)."""
    head, sep, tail = sample_id.rpartition("-r")
    return head if sep and head and tail.isascii() and tail.isdigit() and len(tail) >= 2 else sample_id


@dataclasses.dataclass
class Unit:
    """One dialogue of one script, as selected."""
    script: mtr_script.MtrScript
    index: int
    dialogue_id: str
    samples: list            # [Sample] (round samples, or the one dialogue sample)


@dataclasses.dataclass
class BuiltDialogue:
    dialogue: dict
    layout: mtr_layout.Layout
    user: np.ndarray         # the user channel (user lines + background), float32
    model: np.ndarray        # the GT model channel, float32


class MtrStage:
    def __init__(self, config: dict, synth):
        self.synth = synth
        self.cfg = synth.check_config(config)
        if self.cfg["timing"]:
            raise DuplexEvalError("setting timing does not apply to an mtr-script/1 dataset (its scripts "
                                  "carry every gap)")
        if self.cfg["sample_rate"] != SAMPLE_RATE:
            raise DuplexEvalError(f"setting sample_rate must be {SAMPLE_RATE} for an MTR dataset "
                                  "(round samples are 16 kHz)")
        self.folder: Path | None = None
        self.jobs: int = self.cfg["jobs"]
        self.scripts: dict[str, mtr_script.MtrScript] = {}
        self.units: list[Unit] = []
        self.by_key: dict[str, tuple[Unit, int]] = {}    # sample key -> (unit, round or 0)
        self.loaded: dict[str, dict] = {}                # voice spec id -> record
        self._built: OrderedDict[tuple, tuple] = OrderedDict()
        self._locks: dict[tuple, threading.Lock] = {}
        self._lock = threading.Lock()
        self.pool = synth.pool(self.jobs)

    # -- selection ---------------------------------------------------------------------------

    def select(self, inputs: Inputs, _config: dict) -> list[Sample]:
        self.folder = script_stage.script_folder(inputs)
        self.cfg["dataset"] = self.cfg["dataset"] or self.folder.name
        files = sorted(self.folder.glob("*.json"))
        others = [p.name for p in files if not mtr_script.is_mtr_file(p)]
        if others:
            raise DuplexEvalError(f"{self.folder}: mixes {mtr_script.FORMAT} scripts with other files "
                                  f"({', '.join(others)}); an MTR dataset folder holds only {mtr_script.FORMAT} files")
        self.scripts = {s.subset: s for s in (mtr_script.load(f, self.synth.parse_specs) for f in files)}
        self.scripts = script_stage.keep_subsets(self.scripts, self.cfg["subsets"])
        limit = self.cfg["limit"]
        for subset, script in sorted(self.scripts.items()):
            entries = script.dialogues if limit is None else script.dialogues[:limit]
            for i, entry in enumerate(entries):
                did = mtr_script.raw_id(entry, i)
                if script.task == "dialogue_quality":
                    samples = [Sample(subset, did, script.task)]
                else:
                    samples = [Sample(subset, round_id(did, k), script.task)
                               for k in range(1, mtr_script.raw_rounds(entry) + 1)]
                self.units.append(Unit(script, i, did, samples))
        only = self.cfg["samples"]
        if only is not None:   # "subset/round id" or "subset/dialogue id" (all its rounds)
            keys = set(only)
            known = {s.key for u in self.units for s in u.samples} | \
                {f"{u.script.subset}/{u.dialogue_id}" for u in self.units}
            script_stage.check_known(keys, known)
            for u in self.units:
                if f"{u.script.subset}/{u.dialogue_id}" not in keys:
                    u.samples = [s for s in u.samples if s.key in keys]
            self.units = [u for u in self.units if u.samples]
        for u in self.units:
            for s in u.samples:
                k = int(s.id.rsplit("-r", 1)[1]) if u.script.task != "dialogue_quality" else 0
                self.by_key[s.key] = (u, k)
        return [s for u in self.units for s in u.samples]

    # -- voices --------------------------------------------------------------------------------

    def voices_of(self, unit: Unit) -> dict[str, dict]:
        """{role: spec} of one dialogue."""
        out = {r: dict(v) for r, v in unit.script.voices.items()}
        seed = self.cfg["seed"] if self.cfg["seed"] is not None else unit.script.seed
        if self.cfg["voices"] is not None:
            key = f"{unit.script.subset}/{unit.dialogue_id}"
            out["user"] = self.synth.choose(self.cfg["voices"], seed, key, ["user"])["user"]
        elif self.cfg["_explicit_voice"]:
            out["user"] = {"engine": self.cfg["engine"], "voice": self.cfg["voice"], "rate": 1.0}
        return out

    def setup(self, _config: dict) -> None:
        """Load every voice in use, so a missing engine or voice stops the stage in one line."""
        for u in self.units:
            for spec in self.voices_of(u).values():
                key = spec_id(spec)
                if key not in self.loaded:
                    self.loaded[key] = self.synth.record(self.synth.load(spec), spec)

    # -- one dialogue --------------------------------------------------------------------------

    def dialogue(self, unit: Unit) -> BuiltDialogue:
        """The built dialogue (cached); SampleError-ready DuplexEvalError naming it otherwise."""
        key = (unit.script.subset, unit.index)
        with self._lock:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            with self._lock:
                hit = self._built.get(key)
                if hit is not None:
                    self._built.move_to_end(key)
            if hit is None:
                try:
                    hit = ("ok", self._build(unit))
                except (DuplexEvalError, ValueError) as exc:
                    hit = ("error", f"dialogue {unit.dialogue_id} (entry {unit.index} of "
                                    f"{unit.script.path.name}): {exc}")
                with self._lock:
                    self._built[key] = hit
                    while len(self._built) > KEEP_DIALOGUES + self.jobs:
                        self._built.popitem(last=False)
        if hit[0] != "ok":
            raise DuplexEvalError(hit[1])
        return hit[1]

    def _build(self, unit: Unit) -> BuiltDialogue:
        dialogue = mtr_script.parse_dialogue(unit.script, unit.script.dialogues[unit.index])
        voices = self.voices_of(unit)
        pieces = mtr_layout.pieces(dialogue)
        jobs: dict[tuple, tuple] = {}
        for p in pieces:
            spec = voices[p.voice]
            jobs.setdefault((spec_id(spec), p.spoken), (spec, p.spoken))
        order = list(jobs)
        audio = dict(zip(order, self.pool.render([jobs[k] for k in order], SAMPLE_RATE, tight=True)))
        seg = {p.key: audio[(spec_id(voices[p.voice]), p.spoken)] for p in pieces}
        lay = mtr_layout.layout(dialogue, {k: len(a) / SAMPLE_RATE for k, a in seg.items()}, SAMPLE_RATE)
        gain = 10.0 ** (unit.script.background_gain_db / 20.0)
        channels = {"user": np.zeros(lay.end_n, np.float32), "model": np.zeros(lay.end_n, np.float32)}
        fade = int(round(mtr_layout.FADE_S * SAMPLE_RATE))
        for p in lay.placements:
            a = seg[p.key][: p.end_n - p.start_n].astype(np.float32)
            if p.cut:   # an interrupted response: a short fade to its cut
                m = min(fade, len(a))
                a = a.copy()
                a[len(a) - m:] *= np.linspace(1.0, 0.0, m, dtype=np.float32)
            if p.role == "background":
                a = a * np.float32(gain)
            channels[p.channel][p.start_n: p.end_n] += a
        return BuiltDialogue(dialogue, lay, channels["user"], channels["model"])

    # -- Stage hooks -------------------------------------------------------------------------

    def process(self, ctx: SampleContext) -> None:
        unit, k = self.by_key[ctx.sample.key]
        try:
            built = self.dialogue(unit)
        except DuplexEvalError as exc:
            raise SampleError(ctx.id, str(exc)) from None
        script = unit.script
        if script.task == "dialogue_quality":
            lay = built.layout
            ctx.write_wav("dialogue.wav", np.stack([built.user, built.model], axis=1), SAMPLE_RATE)
            lines = []
            for p in lay.placements:
                line = {"role": "user" if p.role == "user" else "assistant",
                        "start": p.start, "end": p.end, "text": p.text}
                if p.backchannel:
                    line["backchannel"] = True
                lines.append(line)
            ctx.write_json("dialogue.json", {"format": DIALOGUE_FORMAT, "dialogue_id": unit.dialogue_id,
                                             "task": script.task, "duration_s": lay.duration_s,
                                             "lines": lines}, SCHEMAS["dialogue"])
            return
        rounds = built.dialogue["rounds"]
        if k > len(rounds):   # cannot happen with a parsed dialogue: raw_rounds counted them
            raise SampleError(ctx.id, f"dialogue {unit.dialogue_id} has no round {k}")
        w = built.layout.windows[k - 1]
        heard = built.user[: w.end_n].copy()
        for a, b in w.muted_n:
            heard[a:b] = 0.0
        history = built.model[: w.end_n].copy()
        history[w.start_n:] = 0.0
        ctx.write_wav("input.wav", heard, SAMPLE_RATE)
        ctx.write_wav("history.wav", history, SAMPLE_RATE)
        doc = {"format": ROUND_FORMAT, "dialogue_id": unit.dialogue_id, "round": k, "rounds": len(rounds),
               "task": script.task, "set": script.set, **w.fields(), "source": "script"}
        ctx.write_json("round.json", doc, SCHEMAS["round-sample"])

    def finalize(self, sctx: StageContext) -> None:
        self.close()
        rows, audio_s, cached = [], 0.0, 0
        for u in self.units:
            voices = self.voices_of(u)
            kind = "dialogue" if u.script.task == "dialogue_quality" else "round"
            for s in u.samples:
                status = sctx.statuses.get(s.key, {})
                if status.get("status") != "ok":
                    rows.append(script_stage.failed_row(s, u.script.task, status, "not built")
                                | {"kind": kind, "group": u.dialogue_id})
                    continue
                folder = sctx.output / SAMPLES / s.subset / s.id
                doc = read_json(folder / ("dialogue.json" if kind == "dialogue" else "round.json"))
                duration = float(doc["duration_s"] if kind == "dialogue" else doc["end_s"])
                row = {"subset": s.subset, "id": s.id, "task": u.script.task, "duration_s": duration,
                       "files": self.synth.sample_files(folder), "kind": kind, "group": u.dialogue_id,
                       "voices": {role: self._voice_row(spec) for role, spec in voices.items()}}
                rows.append(row)
                audio_s += duration
                cached += bool(status.get("cached"))
        used = {u.script.subset: u.script for u in self.units}
        manifest = {"dataset": self.cfg["dataset"],
                    "version": script_stage.scripts_version(used),
                    "source": self.source(used), "samples": rows}
        sctx.write_json("manifest.json", manifest, "manifest")
        log(f"[tts-synth] MTR manifest: {len(rows)} samples of {len(self.units)} dialogues ({cached} cached), "
            f"{audio_s:.1f} s of audio")

    def _voice_row(self, spec: dict) -> dict:
        rec = self.loaded.get(spec_id(spec))
        if rec is None:   # setup did not run (every sample was cached): load it now
            rec = self.loaded[spec_id(spec)] = self.synth.record(self.synth.load(spec), spec)
        return script_stage.voice_row(rec)

    def source(self, used: dict) -> dict:
        L = mtr_layout
        return {"generator": self.synth.generator, "generator_version": self.synth.version, "mode": "mtr",
                "format": mtr_script.FORMAT,
                "settings": {"sample_rate": SAMPLE_RATE, "limit": self.cfg["limit"], "peak": self.synth.PEAK,
                             "trim_threshold": self.synth.TRIM_THRESHOLD,
                             "edge_trim": {"frame_s": self.synth.EDGE_FRAME_S, "relative_rms": self.synth.EDGE_REL},
                             "layout": {"lead_s": L.LEAD_S, "tail_s": L.TAIL_S, "cut_after_s": L.CUT_AFTER_S,
                                        "background_end_margin_s": L.BG_END_MARGIN_S,
                                        "interrupt_margin_s": L.INTERRUPT_MARGIN_S,
                                        "backchannel_after_user_s": L.BACKCHANNEL_AFTER_USER_S,
                                        "fade_s": L.FADE_S},
                             "config_voices": self.cfg["voices"], "seed": self.cfg["seed"]},
                "scripts": {sc.path.name: sc.sha256 for _, sc in sorted(used.items())},
                "roles": {sub: {"voices": sc.voices, "background_gain_db": sc.background_gain_db}
                          for sub, sc in sorted(used.items())},
                "voices": {k: self.loaded[k] for k in sorted(self.loaded)}}

    # -- helpers -----------------------------------------------------------------------------

    def close(self) -> None:
        self.pool.close()
        with self._lock:
            self._built.clear()


def make_stage(config: dict, synth) -> MtrStage:
    """The dataset stage's hooks for a folder of mtr-script/1 scripts (synth: duplexeval_tts.synth)."""
    return MtrStage(config, synth)
