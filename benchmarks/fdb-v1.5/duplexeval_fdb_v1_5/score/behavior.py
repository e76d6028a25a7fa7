"""The behaviour judge: eval_behavior.py's request, reply parser, retry seeds and label ratios
(Full-Duplex-Bench @ d7336bd), as pure functions; nothing here calls a network.

**Request** (per sample that has all four transcripts clean_input.json, input.json,
clean_output.json and output.json; upstream skips the others without a word): model
gpt-4o-2024-08-06, messages [system: instruction/behavior.txt, user: the four transcript files'
JSON objects, each written compactly (json.dumps with separators (",", ":") and
ensure_ascii=False, the objects as json.load gives them, keys in file order), inside upstream's
indented wrapper], seed 1; no temperature or any other parameter is sent. The prompt is
prompts/fdb_v1_5_behaviour.v1.txt (upstream's text, character for character).

**Retries.** A request that fails or a reply that does not parse is sent again with seed + 1,
5 s later. Upstream retries without end; here the attempts are bounded (`MAX_ATTEMPTS`), and a
sample whose attempts all fail has no label (unified: unknown; official: left out, as upstream
would never finish).

**Parser** (upstream's `extract_json`): from each "{" of the reply in turn, a JSON value is
decoded (json.JSONDecoder.raw_decode); the first object that has the key "behaviour" is the
reply, written to content_tag.json as it is. An object without the key makes the search go on
after it, a decode error from the next "{".

**Ratios** (official): over the judged samples' `behaviour` lists, each tag counted once per
occurrence, divided by the number of tags (not of samples); upstream's log rounds them to 2
decimals. Upstream's count assumes every tag starts with "C" (any other first letter stops it).

`check_overlap` is upstream's computed-and-unused overlap flag (its one effect: input.json and
output.json must hold `chunks` with [start, end] timestamps, or the script stops).
"""

from __future__ import annotations

import json
from collections import Counter
from functools import lru_cache
from pathlib import Path

from duplexeval_common import stats
from duplexeval_common.errors import DuplexEvalError, InputError
from duplexeval_common.llm.prompts import Parsed, Parser, PromptSet

PROMPT_ID = "fdb-v1.5-behaviour"
MODEL = "gpt-4o-2024-08-06"
FIRST_SEED = 1
RETRY_SLEEP_S = 5
MAX_ATTEMPTS = 5
LABELS = ("C_RESPOND", "C_RESUME", "C_UNCERTAIN_HANDLING", "C_UNKNOWN")
FILES = {"input_clean": "clean_input.json", "input_noisy": "input.json",
         "output_clean": "clean_output.json", "output_noisy": "output.json"}
PROMPTS_DIR = Path(__file__).resolve().parent.parent / "prompts"


def compact_json(obj) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def parse_reply(text: str) -> dict | None:
    """The content_tag.json object upstream takes from a reply, or None (upstream retries)."""
    if not isinstance(text, str):
        return None
    dec = json.JSONDecoder()
    pos = text.find("{")
    while pos != -1:
        try:
            obj, end = dec.raw_decode(text, pos)
        except json.JSONDecodeError:
            pos = text.find("{", pos + 1)
            continue
        if "behaviour" in obj:
            return obj
        pos = text.find("{", end)
    return None


def label(tag: dict | None) -> str | None:
    """The one label of a content_tag.json object for the unified rates: `behaviour` is a list
    of exactly one of LABELS; anything else is None (unparsed)."""
    if not isinstance(tag, dict):
        return None
    b = tag.get("behaviour")
    if isinstance(b, list) and len(b) == 1 and b[0] in LABELS:
        return b[0]
    return None


def _parse(text: str) -> Parsed | None:
    obj = parse_reply(text)
    if obj is None:
        return None
    return Parsed(None, None, label(obj), {"content_tag": obj})


def _summary(parsed: list[Parsed]) -> dict:
    got = Counter(p.value for p in parsed if p.value is not None)
    return {"labels": {k: got.get(k, 0) for k in LABELS}, "unlabelled": sum(1 for p in parsed if p.value is None)}


PARSERS = {
    PROMPT_ID: Parser(_parse, _summary,
                      'the first JSON object with the key "behaviour" from any "{" of the reply '
                      "(upstream's extract_json); its label when behaviour is one of " + ", ".join(LABELS)),
}


@lru_cache(maxsize=None)
def prompt():
    """The behaviour prompt (duplexeval_common.llm.prompts.Prompt) of prompts/."""
    return PromptSet(PROMPTS_DIR, PARSERS).get(PROMPT_ID)


def prompt_fields(transcripts: dict) -> dict:
    """The prompt's fields for one sample. transcripts: {"clean_input.json": obj, "input.json": obj,
    "clean_output.json": obj, "output.json": obj} (the loaded JSON of each file)."""
    missing = [f for f in FILES.values() if f not in transcripts]
    if missing:
        raise DuplexEvalError(f"behaviour request needs {', '.join(missing)}")
    return {field: compact_json(transcripts[f]) for field, f in FILES.items()}


def messages(transcripts: dict) -> list[dict]:
    """The chat messages for one sample (prompt_fields in the prompt)."""
    return prompt().render(**prompt_fields(transcripts))


def seed(attempt: int) -> int:
    """The seed of attempt 0, 1, 2, ...: 1, 2, 3, ... (upstream: seed + 1 per retry)."""
    return FIRST_SEED + attempt


def request(transcripts: dict, attempt: int = 0) -> dict:
    """One chat-completions request as upstream sends it: {"model", "messages", "seed"}."""
    return {"model": MODEL, "messages": messages(transcripts), "seed": seed(attempt)}


def requests(transcripts: dict, max_attempts: int = MAX_ATTEMPTS) -> list[dict]:
    """The requests of attempts 0 .. max_attempts - 1, to be sent in order, RETRY_SLEEP_S apart,
    until one reply parses (`parse_reply`)."""
    if max_attempts < 1:
        raise DuplexEvalError("max_attempts must be at least 1")
    msgs = messages(transcripts)
    return [{"model": MODEL, "messages": msgs, "seed": seed(a)} for a in range(max_attempts)]


def check_overlap(sample: str, input_noisy: dict, output_noisy: dict) -> int:
    """Whether an input word and an output word overlap in time (1) or not (0), as upstream
    computes it (it never uses the result). Input it cannot read is an InputError."""
    try:
        for a in input_noisy["chunks"]:
            a0, a1 = a["timestamp"]
            for b in output_noisy["chunks"]:
                b0, b1 = b["timestamp"]
                if max(a0, b0) < min(a1, b1):
                    return 1
    except (KeyError, TypeError, ValueError):
        raise InputError(sample, "input.json and output.json need chunks with [start, end] timestamps "
                                 "(upstream's eval_behavior.py stops otherwise)", "bad-words") from None
    return 0


def official_ratios(tags: dict[str, dict]) -> dict:
    """Upstream's label ratios over {sample: content_tag.json object} of the judged samples:
    {"C": {tag: ratio}} in full precision, "rounded" as its log prints them (2 decimals, tags
    sorted), and the counts."""
    counts: Counter = Counter()
    for sid in sorted(tags):
        for tag in (tags[sid] or {}).get("behaviour", []):
            if not isinstance(tag, str) or not tag or tag[0] != "C":
                raise DuplexEvalError(f"{sid}: content_tag.json behaviour {tag!r} does not start with C "
                                      "(upstream's ratio count stops on it)")
            counts[tag] += 1
    total = sum(counts.values())
    ratios = {t: c / total for t, c in counts.items()}
    return {"C": dict(sorted(ratios.items())), "rounded": {"C": {t: round(v, 2) for t, v in sorted(ratios.items())}},
            "counts": dict(sorted(counts.items())), "tags": total, "samples": len(tags)}


def unified_rates(labels: dict[str, str | None], selected: int | None = None) -> dict:
    """Per label, the share of labelled samples with 95% Wilson interval and the bounds over
    the selected samples (unknown: unlabelled, plus selected samples not in `labels`)."""
    sel = len(labels) if selected is None else selected
    known = [v for v in labels.values() if v is not None]
    n = len(known)
    unknown = sel - n
    out = {}
    for lab in LABELS:
        k = sum(1 for v in known if v == lab)
        out[lab] = {"kind": "share", "value": k / n if n else None, "interval": stats.wilson(k, n),
                    "count": k, "n": n,
                    "selected_bounds": [k / sel, (k + unknown) / sel] if sel else None}
    return {"rates": out, "counts": {"selected": sel, "labelled": n, "unlabelled": unknown},
            "coverage": n / sel if sel else None}
