"""What the asr-aligner transcribes of a Full-Duplex-Bench v1.5 sample (its `asr` hook): both runs'
outputs and both inputs, whole, each into the official ASR format beside its audio (output.json,
clean_output.json, input.json, clean_input.json). Upstream's behaviour judge reads all four, and
nothing upstream makes the last three (its asr.py writes output.json only), so they are made here
with the same backend and settings as output.json."""

from __future__ import annotations

from duplexeval_common.benchmarks import AsrTarget

TARGETS = (
    AsrTarget("output.wav", "output.json", "transcript.json", "vad.json"),
    AsrTarget("clean_output.wav", "clean_output.json", "clean_transcript.json", "clean_vad.json"),
    AsrTarget("input.wav", "input.json", "input_transcript.json", "input_vad.json"),
    AsrTarget("clean_input.wav", "clean_input.json", "clean_input_transcript.json", "clean_input_vad.json"),
)


def targets(ctx) -> list[AsrTarget]:
    return list(TARGETS)
