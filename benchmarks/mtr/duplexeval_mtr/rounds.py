"""The dialogue-quality round samples of MTR-DuplexBench, cut from the segmentations (the
turn-segmenter's mode "samples", through the `segment` hook: segmentation.samples_stage).

`turn-segmenter run --input DATASET --input DIALOGUE_ASR --input SEGMENT --output OUT` with config
{"benchmark": "mtr", "mode": "samples"}. A dialogue is a sample of the inputs with `dialogue.wav` (stereo 16 kHz:
left = user, right = model) and no `round.json`; its `segmentation.json` (the segment stage's,
schemas/segmentation.schema.json) gives the user turns C_1..C_K, and its `user.json` and
`model.json` (the dialogue ASR's, schemas/turn-segmenter-channel.schema.json) give the lines.
Round k of dialogue D is the sample `<subset>/D-r<kk>` (benchmarks/mtr/README.md, the round sample contract):

  input.wav    mono 16 kHz PCM_16: the user channel over [0, end_s), exactly round(end_s * 16000)
               samples (zeros past the file's end), with the next user turn C_{k+1} zeroed
  history.wav  the model channel over [0, start_s), zeros from start_s on; input.wav's length
  round.json   schemas/round-sample.schema.json of this package (format mtr-round/1): start_s = C_k.start,
               end_s = C_{k+1}.end (the last round: the segmentation's dialogue_end_s), muted
               [[C_{k+1}.start, C_{k+1}.end]] ([] for the last), the encoding {"round": k,
               "scenario": "dialogue-quality", "features": [], "timestamps": {}}, user_lines = the
               user's lines that start before C_{k+1}.start (the last round: end_s) and whose
               midpoint is at or after start_s (so also a line that starts a few ms before the
               turn, as segment times rounded to 2 decimals give), history = every other ASR line
               (both channels) that starts before start_s, source "segmentation"

The lines of a channel are its `segments` when the file has them, else its words grouped by
duplexeval_common.ipus.segments_from_words (max_word_gap_s, 0.5 s); lines with no text are left
out. Audio samples are copied exactly (PCM values in, the same values out). A round whose user
turn has no user line (the ASR heard no words there) fails alone with one line: round.json needs
at least one (schemas/round-sample.schema.json).

Samples of the inputs that are already round samples (round.json: the dataset stage's features,
instruction-following and safety rounds) are not written again. A dialogue with no usable
segmentation (it failed or was skipped upstream, its segmentation.json is missing or
inconsistent, or a round's name would not be a plain sample name) gives no rounds: one line on
stderr names it, and stage.json's invocation_notes keep the reason. At the end, manifest.json
(schemas/manifest.schema.json) lists the dataset manifest's rows of kind "round" unchanged,
then one row per round sample of this stage (kind "round", group its dialogue; failed ones with their reason),
sorted as a dataset's are; so the stages that read [dataset, rounds, ...] see exactly the
round samples. Its `rounds` block records, per dialogue, the rounds and the sha256 of the files
they were cut from.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from duplexeval_common import schemas, wavio
from duplexeval_common.errors import DuplexEvalError, SampleError
from duplexeval_common.hashing import sha256_file, sha256_json
from duplexeval_common.ipus import segments_from_words
from duplexeval_common.jsonio import read_json
from duplexeval_common.progress import log
from duplexeval_common.samples import DONE, MANIFEST, SAMPLES, Inputs, Sample
from duplexeval_common.stage import SampleContext, StageContext

from .schemas import SCHEMAS

SEGMENTATION = "segmentation.json"   # the turn-segmenter's file per dialogue

RATE = 16000
FORMAT = "mtr-round/1"
ROUND_FILE = "round.json"
ROUND_SCHEMA = SCHEMAS["round-sample"]
DIALOGUE_WAV = "dialogue.wav"
CHANNEL_SCHEMA = "turn-segmenter-channel"
TASK = "dialogue_quality"
DECIMALS = 6


@dataclass(frozen=True)
class Round:
    dialogue: Sample
    k: int
    rounds: int
    start_s: float
    end_s: float
    muted: tuple[tuple[float, float], ...]
    user_until: float  # user_lines are the user's lines starting in [start_s, user_until)


@dataclass
class RoundsState:
    settings: dict
    rounds: dict[str, Round] = field(default_factory=dict)       # round sample key -> round
    dialogues: dict[str, Sample] = field(default_factory=dict)   # dialogue key -> sample (with rounds)
    without: dict[str, str] = field(default_factory=dict)        # dialogue key -> why no rounds


def _t(x: float) -> float:
    return round(float(x), DECIMALS)


def _finite(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def dialogue_rounds(d: Sample, path: Path) -> list[Round]:
    """The rounds of dialogue d from its segmentation.json; a one-line DuplexEvalError when the
    record is unusable."""
    try:
        rec = read_json(path)
    except ValueError as exc:
        raise SampleError(d.key, f"{SEGMENTATION} is not valid JSON ({exc})") from None
    schemas.validate("segmentation", rec, d.key)
    if rec["dialogue"] != d.key:
        raise SampleError(d.key, f"{SEGMENTATION} is the segmentation of {str(rec['dialogue'])[:80]!r}, "
                                 "not of this dialogue")
    turns = [(t["start"], t["end"]) for t in rec["turns"]]
    end = rec["dialogue_end_s"]
    for i, (s, e) in enumerate(turns):
        if not (_finite(s) and _finite(e) and s < e):
            raise SampleError(d.key, f"{SEGMENTATION}: turn {i + 1} spans ({s}, {e}) s")
        if i and s < turns[i - 1][1]:
            raise SampleError(d.key, f"{SEGMENTATION}: turn {i + 1} starts at {s} s, before turn {i} ends")
    if not (_finite(end) and end > turns[-1][0]):
        raise SampleError(d.key, f"{SEGMENTATION}: dialogue_end_s {end} is not after the last turn's start "
                                 f"{turns[-1][0]} s")
    k_all = len(turns)
    want = [{"round": k + 1, "start": s, "end": turns[k + 1][1] if k + 1 < k_all else end}
            for k, (s, _) in enumerate(turns)]
    if rec["windows"] != want:
        raise SampleError(d.key, f"{SEGMENTATION}: its windows disagree with its turns and dialogue end")
    out = []
    for k, (s, _) in enumerate(turns, start=1):
        if k < k_all:
            nxt = turns[k]
            out.append(Round(d, k, k_all, _t(s), _t(nxt[1]), ((_t(nxt[0]), _t(nxt[1])),), _t(nxt[0])))
        else:
            out.append(Round(d, k, k_all, _t(s), _t(end), (), _t(end)))
    return out


def round_sample(r: Round) -> Sample:
    return Sample(r.dialogue.subset, f"{r.dialogue.id}-r{r.k:02d}", TASK)


def select(inputs: Inputs, state: RoundsState) -> list[Sample]:
    """The round samples of every dialogue that has a usable segmentation (see the module)."""
    state.rounds.clear()
    state.dialogues.clear()
    state.without.clear()
    listed = inputs.samples()
    taken = {s.key for s in listed}
    out: list[Sample] = []
    for d in listed:
        try:
            if inputs.find(d, ROUND_FILE) is not None or inputs.find(d, DIALOGUE_WAV) is None:
                continue  # already a round sample (the dataset's), or no dialogue
            upstream = inputs.upstream_failure(d)
            if upstream:
                raise SampleError(d.key, upstream)
            seg = inputs.find(d, SEGMENTATION)
            if seg is None:
                raise SampleError(d.key, f"{SEGMENTATION} is missing (the segment stage made none)")
            rounds = dialogue_rounds(d, seg)
            names = []
            for r in rounds:
                try:
                    s = round_sample(r)
                except DuplexEvalError as exc:
                    raise SampleError(d.key, f"round {r.k} has no plain sample name ({exc})") from None
                if s.key in taken:
                    raise SampleError(d.key, f"round sample {s.key} is already a sample of the inputs")
                names.append(s)
        except DuplexEvalError as exc:
            reason = exc.problem if isinstance(exc, SampleError) else str(exc)
            state.without[d.key] = reason
            log(f"[turn-segmenter] {d.key}: no round samples: {reason}")
            continue
        state.dialogues[d.key] = d
        for s, r in zip(names, rounds):
            state.rounds[s.key] = r
            taken.add(s.key)
            out.append(s)
    return out


def _pcm(audio: np.ndarray) -> np.ndarray:
    """PCM_16 values of read_wav's float samples (exact for a PCM_16 file)."""
    return np.clip(np.round(np.asarray(audio, dtype=np.float64) * 32768.0), -32768, 32767)


def _write_pcm(ctx: SampleContext, name: str, pcm: np.ndarray) -> None:
    # wavio writes round(x * 32767): x = pcm / 32767 gives back the same values
    ctx.write_wav(name, pcm / 32767.0, RATE)


def channel_lines(ctx: SampleContext, d: Sample, role: str, max_gap_s: float) -> list[dict]:
    """The time-sorted lines [{start, end, text}] of one channel of dialogue d."""
    name = f"{role}.json"
    path = ctx.inputs.find(d, name)
    if path is None:
        raise SampleError(ctx.id, f"{name} of dialogue {d.key} is missing (the dialogue ASR's {role} channel)")
    try:
        obj = read_json(path)
    except ValueError as exc:
        raise SampleError(ctx.id, f"{name} of dialogue {d.key} is not valid JSON ({exc})") from None
    schemas.validate(CHANNEL_SCHEMA, obj, ctx.id)
    if obj.get("segments") is not None:
        rows, what = obj["segments"], "segments"
    else:
        rows, what = segments_from_words(obj.get("words") or [], max_gap_s), "words"
    out = []
    for i, r in enumerate(rows):
        s, e = r.get("start"), r.get("end")
        if not (_finite(s) and _finite(e) and 0 <= s <= e):
            raise SampleError(ctx.id, f"{name} of dialogue {d.key}: {what}[{i}] spans ({s}, {e}) s")
        text = str(r.get("text", "")).strip()
        if text:
            out.append({"start": _t(s), "end": _t(e), "text": text})
    return sorted(out, key=lambda x: (x["start"], x["end"], x["text"]))


def in_turn(line: dict, r: Round) -> bool:
    """Whether a user line is the round's user turn (see the module)."""
    return line["start"] < r.user_until and (line["start"] + line["end"]) / 2 >= r.start_s


def round_record(r: Round, user: list[dict], model: list[dict]) -> dict:
    rank = {"user": 0, "assistant": 1}
    turn = [dict(x) for x in user if in_turn(x, r)]
    history = [{"role": "user", **x} for x in user if x["start"] < r.start_s and not in_turn(x, r)] + \
              [{"role": "assistant", **x} for x in model if x["start"] < r.start_s]
    history.sort(key=lambda x: (x["start"], rank[x["role"]], x["end"], x["text"]))
    return {
        "format": FORMAT, "dialogue_id": r.dialogue.id, "round": r.k, "rounds": r.rounds, "task": TASK,
        "set": None, "start_s": r.start_s, "end_s": r.end_s, "muted": [list(m) for m in r.muted],
        "encoding": {"round": r.k, "scenario": "dialogue-quality", "features": [], "timestamps": {}},
        "history": history,
        "user_lines": turn,
        "source": "segmentation",
    }


def process(ctx: SampleContext, state: RoundsState) -> None:
    r = state.rounds.get(ctx.sample.key)
    if r is None:
        raise SampleError(ctx.id, "not a round of any segmented dialogue of the inputs")
    d = r.dialogue
    path = ctx.inputs.find(d, DIALOGUE_WAV)
    if path is None:
        raise SampleError(ctx.id, f"{DIALOGUE_WAV} of dialogue {d.key} is missing")
    audio, sr = wavio.read_wav(path, ctx.id, channels=2, mono=False)
    if sr != RATE:
        raise SampleError(ctx.id, f"{DIALOGUE_WAV} of dialogue {d.key} has rate {sr} Hz, expected {RATE} Hz")
    n = int(round(r.end_s * RATE))
    cut = int(round(r.start_s * RATE))
    if len(audio) <= cut:
        raise SampleError(ctx.id, f"{DIALOGUE_WAV} of dialogue {d.key} ends at {len(audio) / RATE:.3f} s, "
                                  f"before the round's start {r.start_s} s")
    user = np.zeros(n)
    model = np.zeros(n)
    m = min(n, len(audio))
    user[:m] = _pcm(audio[:m, 0])
    model[:min(m, cut)] = _pcm(audio[:min(m, cut), 1])
    for a, b in r.muted:
        user[int(round(a * RATE)):int(round(b * RATE))] = 0.0
    gap = state.settings["max_word_gap_s"]
    rec = round_record(r, channel_lines(ctx, d, "user", gap), channel_lines(ctx, d, "model", gap))
    if not rec["user_lines"]:
        raise SampleError(ctx.id, f"no line of user.json (dialogue {d.key}) in the round's user turn, from "
                                  f"{r.start_s} s to {r.user_until} s: the dialogue ASR heard no words there")
    schemas.validate(ROUND_SCHEMA, rec, ctx.id)
    _write_pcm(ctx, "input.wav", user)
    _write_pcm(ctx, "history.wav", model)
    ctx.write_json(ROUND_FILE, rec)


def _files(folder: Path) -> dict[str, str]:
    return {p.name: sha256_file(p) for p in sorted(folder.iterdir())
            if p.is_file() and p.name != DONE and not p.name.startswith(".")}


def finalize(sctx: StageContext, state: RoundsState) -> None:
    src = sctx.inputs.root_file(MANIFEST)
    ds = read_json(src) if src is not None else {}
    rows = [r for r in ds.get("samples", []) if isinstance(r, dict) and r.get("kind") == "round"]
    per_dialogue: dict[str, dict] = {}
    for key, r in state.rounds.items():
        s = round_sample(r)
        status = sctx.statuses.get(key, {})
        if status.get("status") == "ok":
            rows.append({"subset": s.subset, "id": s.id, "task": TASK,
                         "duration_s": int(round(r.end_s * RATE)) / RATE,
                         "files": _files(sctx.output / SAMPLES / s.subset / s.id), "kind": "round",
                         "group": r.dialogue.id})
        else:
            rows.append({"subset": s.subset, "id": s.id, "task": TASK, "status": "failed",
                         "reason": status.get("reason", "not written"), "kind": "round", "group": r.dialogue.id})
        per_dialogue.setdefault(r.dialogue.key, {"rounds": r.rounds})
    for dkey, info in per_dialogue.items():
        d = state.dialogues[dkey]
        info["files"] = {name: sha256_file(p) for name in (DIALOGUE_WAV, SEGMENTATION, "user.json", "model.json")
                         if (p := sctx.inputs.find(d, name)) is not None}
    rows.sort(key=lambda x: Sample(x["subset"], x["id"]).sort_key())
    manifest = {
        "dataset": ds.get("dataset") or "mtr-rounds",
        "version": sha256_json({"dataset": ds.get("version"), "samples": rows})[:16],
        "source": ds.get("source") or {},
        "samples": rows,
        "rounds": {"benchmark": "mtr", "mode": "samples",
                   "dataset_manifest_sha256": sha256_file(src) if src is not None else None,
                   "dataset_version": ds.get("version"),
                   "dialogues": dict(sorted(per_dialogue.items())),
                   "dialogues_without_rounds": dict(sorted(state.without.items()))},
    }
    sctx.write_json(MANIFEST, manifest, "manifest")
    if state.without:
        sctx.invocation["dialogues_without_rounds"] = dict(sorted(state.without.items()))
    log(f"[turn-segmenter] rounds: {len(state.rounds)} round samples of {len(state.dialogues)} dialogues; "
        f"{len(state.without)} dialogue(s) without rounds")


@dataclass
class RoundsStage:
    """The stage's hooks (the turn-segmenter makes the Stage of them)."""
    settings: dict

    def __post_init__(self) -> None:
        self.state = RoundsState(self.settings)
        self.workers = self.settings["workers"]

    def select(self, inputs: Inputs, _config: dict) -> list[Sample]:
        return select(inputs, self.state)

    def process(self, ctx: SampleContext) -> None:
        process(ctx, self.state)

    def finalize(self, sctx: StageContext) -> None:
        finalize(sctx, self.state)


def make_rounds_stage(settings: dict) -> RoundsStage:
    return RoundsStage(settings)
