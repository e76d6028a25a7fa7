"""The behaviour judge prompt of Full-Duplex-Bench v1.5 (prompts/: versioned template and spec) and
its parser (the benchmark's `prompts` hook).

fdb-v1.5-behavior asks, as upstream's eval_behavior.py does, which one of C_RESPOND, C_RESUME,
C_UNCERTAIN_HANDLING or C_UNKNOWN describes the model's first new segment after the overlap, from
the four transcripts (clean and overlapped input, clean and overlapped output). Its text is
upstream's, under its licence (NOTICE). The official settings: gpt-4o-2024-08-06, seed 1, no
temperature, and a reply that does not parse asked again with seed + 1 (upstream retries without
end; here at most max_parse_attempts times, then the sample is counted as unparsed).
"""

from __future__ import annotations

import json
from pathlib import Path

from duplexeval_common.llm.prompts import Parsed, Parser, PromptSet

BEHAVIOR = "fdb-v1.5-behavior"
KEY = "behaviour"
LABELS = ("C_RESPOND", "C_RESUME", "C_UNCERTAIN_HANDLING", "C_UNKNOWN")


def compact(obj) -> str:
    """A transcript as the prompt carries it: eval_behavior.py's json_dict_to_compact_text (no
    spaces after separators, non-ASCII kept), the object's key order as read from its file."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def first_object_with(text: str, key: str = KEY) -> dict | None:
    """eval_behavior.py's extract_json: from each "{" in turn, the first JSON object that decodes
    there and has `key` (a dict whose key it is; nested objects are not searched); None for none."""
    decoder = json.JSONDecoder()
    pos = text.find("{")
    while pos != -1:
        try:
            obj, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:
            pos = text.find("{", pos + 1)
            continue
        if isinstance(obj, dict) and key in obj:
            return obj
        pos = text.find("{", end)
    return None


def parse_behaviour(text: str) -> Parsed | None:
    """The reply's {"behaviour": [...]} object. Upstream accepts any such object and counts every
    tag in it; here the tags must be a list of strings each starting with "C" (upstream's counter
    raises on any other prefix), so a reply upstream would crash on is unparsed instead."""
    obj = first_object_with(text or "")
    if obj is None:
        return None
    tags = obj[KEY]
    if not isinstance(tags, list) or not all(isinstance(t, str) and t.startswith("C") for t in tags):
        return None
    return Parsed(None, None, value=obj, extra={"tags": list(tags)})


def summarize(parsed: list[Parsed]) -> dict:
    """Label ratios as eval_behavior.py's stats_by_axis computes them: each tag's count over all
    tags of all parsed replies (a reply may hold several, or none)."""
    counts: dict[str, int] = {}
    for p in parsed:
        for t in p.extra["tags"]:
            counts[t] = counts.get(t, 0) + 1
    total = sum(counts.values())
    return {"counts": dict(sorted(counts.items())),
            "ratios": {t: c / total for t, c in sorted(counts.items())} if total else {}}


PARSERS = {
    "fdb-v1.5-behaviour": Parser(parse_behaviour, summarize,
                                 'the first JSON object holding "behaviour" (eval_behavior.py extract_json), '
                                 'its tags a list of C_* strings'),
}
PROMPTS = PromptSet(Path(__file__).parent / "prompts", PARSERS)
