"""What the asr-aligner transcribes of a Full-Duplex-Bench v1.0 sample (its `asr` hook).

output.wav, whole, except for user interruption: the official ASR step (get_transcript/asr.py
with --task user_interruption) transcribes only the audio from the end of the interruption R on
and adds R back to every word time, so the same is done here and the official numbers stay
comparable; the VAD still hears the whole file.
"""

from __future__ import annotations

from duplexeval_common.benchmarks import AsrTarget

from .schemas import SCHEMAS


def targets(ctx) -> list[AsrTarget]:
    if ctx.sample.task == "user_interruption":
        ann = ctx.read_json("interrupt.json", SCHEMAS["interrupt"])
        return [AsrTarget(offset=float(ann[0]["timestamp"][1]), what="interruption end")]
    return [AsrTarget()]
