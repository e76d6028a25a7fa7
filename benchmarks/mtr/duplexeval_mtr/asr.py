"""What the asr-aligner transcribes of an MTR-DuplexBench round sample (its `asr` hook).

The model's turn starts at the round's `start_s` (before it, output.wav holds the ground-truth
history), so output.wav is cropped there (word times shifted back onto the dialogue timeline),
and the VAD hears the same crop: vad.json's segments are the crop's, shifted by start_s. A sample
without round.json (a dialogue-quality dialogue sample) is transcribed whole.
"""

from __future__ import annotations

import math

from duplexeval_common.benchmarks import AsrTarget
from duplexeval_common.errors import SampleError

ROUND_FILE = "round.json"


def round_start(ctx) -> float:
    """start_s of the sample's round.json (one line naming the sample when it cannot be read)."""
    rnd = ctx.read_json(ROUND_FILE)
    start = rnd.get("start_s") if isinstance(rnd, dict) else None
    if isinstance(start, bool) or not isinstance(start, (int, float)) or not math.isfinite(start):
        raise SampleError(ctx.id, f"{ROUND_FILE} has no numeric start_s (got {start!r})")
    return float(start)


def targets(ctx) -> list[AsrTarget]:
    if ctx.has_input(ROUND_FILE):
        return [AsrTarget(offset=round_start(ctx), what="round start", vad_crop=True)]
    return [AsrTarget()]
