"""`turn-segmenter` command: the standard `run` and `check` of the stage contract, and `list`."""

from __future__ import annotations

from duplexeval_common.cli import component_group
from duplexeval_common.registry import Registry

from . import __version__
from .stage import make_stage

SEGMENTERS = Registry("segmenter", pins="duplexeval_segmenter")
SEGMENTERS.add("offline", "duplexeval_segmenter.offline:segment",
               "deterministic: user speech merged across short gaps, split where the model responds "
               "and talked-over speech left out, turn ends from the VAD's probabilities (rule gap-v2; gap-v1 the rule "
               "before it; the default without an llm setting)")
SEGMENTERS.add("llm", "duplexeval_segmenter.llm:run",
               "the paper's Algorithm 1: 6 LLM segmentations (the benchmark's segmentation prompt, e.g. "
               "MTR-DuplexBench's), IoU>=0.3 clustering, median boundaries, >=2 votes, overlaps merged")

main = component_group("turn-segmenter", "User turns and response windows of two-channel dialogues.",
                       __version__, make_stage, SEGMENTERS)
