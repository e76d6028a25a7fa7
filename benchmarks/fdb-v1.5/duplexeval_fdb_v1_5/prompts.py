"""The judge prompt of Full-Duplex-Bench v1.5 (the benchmark's `prompts` hook): prompts/ holds the
versioned behaviour prompt, upstream's text under its licence (NOTICE); its parser, request and
retry rules are score/behavior.py's."""

from __future__ import annotations

from pathlib import Path

from duplexeval_common.llm.prompts import PromptSet

from .score.behavior import PARSERS, PROMPT_ID as BEHAVIOR  # noqa: F401  (the prompt the judge asks)

PROMPTS = PromptSet(Path(__file__).parent / "prompts", PARSERS)
