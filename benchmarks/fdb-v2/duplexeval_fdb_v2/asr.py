"""What the asr-aligner transcribes of a fdb-v2 session (its `asr` hook): both channels, whole, as
upstream transcribes channel A (examiner, input.wav) and channel B (model, output.wav) for its
judge: output.json / transcript.json / vad.json of the model, input.json / input_transcript.json /
input_vad.json of the examiner. Only the judge stage reads them (the measured numbers do not)."""

from __future__ import annotations

from duplexeval_common.benchmarks import AsrTarget

TARGETS = (
    AsrTarget("output.wav", "output.json", "transcript.json", "vad.json"),
    AsrTarget("input.wav", "input.json", "input_transcript.json", "input_vad.json"),
)


def targets(ctx) -> list[AsrTarget]:
    return list(TARGETS)
