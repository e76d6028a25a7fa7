"""The judge prompts of Full-Duplex-Bench v1.0 (prompts/: versioned templates and specs) and
their parser (the benchmark's `prompts` hook).

fdb-v1-interruption rates the reply after a user interruption, 0-5, as upstream's
eval_user_interruption.py asks gpt-4-turbo (its text is upstream's, under its licence: NOTICE).
"""

from __future__ import annotations

import re
from pathlib import Path

from duplexeval_common.llm.prompts import Parsed, Parser, PromptSet, summary_mean

INTERRUPTION = "fdb-v1-interruption"
_FDB = re.compile(r"Analysis:\s*(.*?)\nI would rate the AI's response as (\d+)", re.DOTALL)


def parse_fdb_rating(text: str) -> Parsed | None:
    """Upstream's parse_output on `answer + "\\n"`: the last (analysis, rating) match. A rating
    outside 0-5 (which upstream would average in) counts as unparsed here."""
    found = None
    for m in _FDB.finditer(text + "\n"):
        found = (m.group(1).strip(), int(m.group(2).strip()))
    if found is None or not 0 <= found[1] <= 5:
        return None
    return Parsed(found[1], found[0])


PARSERS = {
    "fdb-v1-rating": Parser(parse_fdb_rating, summary_mean,
                            "last match of Analysis:\\s*(.*?)\\nI would rate the AI's response as (\\d+) "
                            "(DOTALL), rating 0-5"),
}
PROMPTS = PromptSet(Path(__file__).parent / "prompts", PARSERS)
