"""Round samples of multi-round benchmarks (MTR-DuplexBench, arXiv 2511.10262; benchmarks/mtr/README.md).

A sample whose folder has `round.json` (format "mtr-round/1", duplexeval_mtr/schemas/round-sample.schema.json)
is one round k of a dialogue: `input.wav` is the user channel from the dialogue's start to the
round's `end_s`, `history.wav` the ground-truth (GT) model channel over [0, start_s) (zeros after),
exactly input.wav's length and rate. The runner hears input.wav from 0 on its clock; how it meets
the history is its class attribute `history` (protocol.HISTORY_MODES):

- "teacher-forced" (a StepRunner with its own `force`): every frame that starts before start_s goes
  to `force(user_frame, assistant_frame, session)` (the GT model audio of that frame at in_sr)
  instead of `step`; from the first frame starting at or after start_s on, `step` as usual;
- "replayed" (the default; every StreamRunner): the runner runs over the history like over any
  input; what it said there is discarded;
- "external" (an OfflineRunner such as `replay`): the output made elsewhere is taken as it is.

Either way the output before start_s is history.wav's GT audio, and from start_s on the model's own
(audio it queued before start_s that plays past it is kept: its behaviour at the round's start).
runner.json gets `round` {dialogue_id, round, start_s, end_s, history, model_history_s} and
events.jsonl a `history_end` event at start_s. Only the fields used here are checked; a bad
round.json or history.wav fails its sample with one line naming the file and the problem.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from duplexeval_common.errors import SampleError

ROUND_FILE = "round.json"
HISTORY_FILE = "history.wav"
FORMAT = "mtr-round/1"
ROLES = {"user": "user", "assistant": "assistant"}


@dataclass(frozen=True)
class Round:
    """One round sample: its parsed round.json and the GT history audio at the input's rate."""
    data: dict
    start_s: float
    end_s: float
    history: np.ndarray  # float32, mono, the input's length: GT model audio over [0, start_s)

    def start_index(self, sr: int) -> int:
        """The first sample at rate sr that belongs to the round (not the history)."""
        return int(round(self.start_s * sr))

    def record(self, mode: str, model_history_s: float) -> dict:
        """runner.json's `round`."""
        d = self.data
        return {"dialogue_id": d["dialogue_id"], "round": d["round"], "start_s": round(self.start_s, 6),
                "end_s": round(self.end_s, 6), "history": mode, "model_history_s": round(model_history_s, 6)}


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def parse(obj, key: str, n_samples: int, sr: int) -> tuple[float, float]:
    """(start_s, end_s) of a round.json object, checked against input.wav (n_samples at sr)."""
    def bad(problem: str) -> SampleError:
        return SampleError(key, f"{ROUND_FILE}: {problem}")

    if not isinstance(obj, dict):
        raise bad("is not a JSON object")
    if obj.get("format") != FORMAT:
        raise bad(f"format must be {FORMAT!r} (got {obj.get('format')!r})")
    if not isinstance(obj.get("dialogue_id"), str) or not obj["dialogue_id"]:
        raise bad(f"dialogue_id must be a non-empty string (got {obj.get('dialogue_id')!r})")
    k = obj.get("round")
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise bad(f"round must be a whole number >= 1 (got {k!r})")
    for name in ("start_s", "end_s"):
        if not _number(obj.get(name)):
            raise bad(f"{name} must be a number (got {obj.get(name)!r})")
    start, end = float(obj["start_s"]), float(obj["end_s"])
    if not 0 <= start <= end:
        raise bad(f"start_s {start:g} and end_s {end:g} must satisfy 0 <= start_s <= end_s")
    if abs(end * sr - n_samples) > 1.0 + 1e-6:  # within one sample frame of input.wav's length
        raise bad(f"end_s {end:g} does not match input.wav's length ({n_samples} samples at {sr} Hz "
                  f"= {n_samples / sr:.6f} s)")
    return start, end


def load(ctx, n_samples: int, sr: int) -> Round | None:
    """The sample's round (None for an ordinary sample without round.json)."""
    if not ctx.has_input(ROUND_FILE):
        return None
    data = ctx.read_json(ROUND_FILE)  # invalid JSON: a one-line SampleError naming the file
    start, end = parse(data, ctx.id, n_samples, sr)
    hist, hsr = ctx.read_wav(HISTORY_FILE, channels=None)  # missing or corrupt: one line
    if hsr != sr or len(hist) != n_samples:
        raise SampleError(ctx.id, f"{HISTORY_FILE} is {len(hist)} samples at {hsr} Hz; input.wav is "
                                  f"{n_samples} samples at {sr} Hz (they must match)")
    return Round(data=data, start_s=start, end_s=end, history=hist)


def history_lines(session_round: dict | None) -> list[dict]:
    """The GT history of a round as chat messages, in order: [{"role": "user"|"assistant",
    "content": text}], consecutive lines of one role joined by a space, empty texts left out.
    A malformed `history` raises ValueError with a one-line reason."""
    if not session_round:
        return []
    lines = session_round.get("history", [])
    if not isinstance(lines, list):
        raise ValueError(f"{ROUND_FILE}: history must be a list")
    out: list[dict] = []
    for i, line in enumerate(lines):
        if not isinstance(line, dict) or line.get("role") not in ROLES or not isinstance(line.get("text"), str):
            raise ValueError(f"{ROUND_FILE}: history[{i}] must have role user|assistant and a text string")
        text = " ".join(line["text"].split())
        if not text:
            continue
        role = ROLES[line["role"]]
        if out and out[-1]["role"] == role:
            out[-1]["content"] += " " + text
        else:
            out.append({"role": role, "content": text})
    return out


def model_audio_before(segments: list[tuple[int, int]], cut: int, sr: int) -> float:
    """Seconds of model audio placed on [0, cut) (TimelineBuffer segments at sr)."""
    return sum(max(min(e, cut) - s, 0) for s, e in segments) / sr
