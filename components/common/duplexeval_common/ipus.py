"""Word-timestamped ASR output grouped into segments (inter-pausal units).

MTR-DuplexBench's rules read ASR *segments* ({start, end, text, words}), as whisper-timestamped
gives them; backends that give only words are grouped here by one rule, shared by the
turn-segmenter (the lines of its LLM transcript) and the aggregator (the model channel's
segments of each round):

a segment ends after a word that ends a sentence (`.`, `!` or `?`, possibly followed by a closing
quote or bracket), or when the gap to the next word is over `max_gap_s` (default 0.5 s).
Words with empty text are left out. A word with no end time ends at its start.
"""

from __future__ import annotations

import re
from typing import Iterable

MAX_GAP_S = 0.5
SENTENCE_END = re.compile(r"[.!?]['\")\]]*$")


def _end(word: dict) -> float:
    return float(word["start"] if word.get("end") is None else word["end"])


def group_words(words: Iterable[dict], max_gap_s: float = MAX_GAP_S) -> list[list[dict]]:
    """Words ({text, start, end}) in time order, split into runs by the rule above."""
    runs: list[list[dict]] = []
    cur: list[dict] = []
    for w in words:
        text = str(w.get("text", "")).strip()
        if not text:
            continue
        if cur and (float(w["start"]) - _end(cur[-1]) > max_gap_s
                    or SENTENCE_END.search(str(cur[-1]["text"]).strip())):
            runs.append(cur)
            cur = []
        cur.append(w)
    if cur:
        runs.append(cur)
    return runs


def segments_from_words(words: Iterable[dict], max_gap_s: float = MAX_GAP_S) -> list[dict]:
    """[{start, end, text, words}] with each segment's words as {start, end, text}."""
    out = []
    for run in group_words(words, max_gap_s):
        ws = [{"start": float(w["start"]), "end": _end(w), "text": str(w["text"]).strip()} for w in run]
        out.append({"start": ws[0]["start"], "end": max(w["end"] for w in ws),
                    "text": " ".join(w["text"] for w in ws), "words": ws})
    return out
