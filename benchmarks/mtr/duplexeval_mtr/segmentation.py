"""What the turn-segmenter asks of MTR-DuplexBench (its `segment` hook).

- the LLM segmenter (Algorithm 1, step 2): the versioned prompt it sends (SEGMENT of PROMPTS),
  the two-speaker transcript it renders as the released scripts write it (`transcript`), and the
  runs of one dialogue (`segment_turns`: run k sent with seed first_seed + k, each its own request
  and cache entry);
- mode "samples": the dialogue-quality round samples cut from the segmentations
  (`samples_stage`, rounds.py).
"""

from __future__ import annotations

from .judging import segment_turns, transcript  # noqa: F401  (the hook's functions)
from .prompts import PROMPTS, SEGMENT  # noqa: F401


def samples_stage(config: dict):
    from .rounds import make_rounds_stage
    return make_rounds_stage(config)
