"""The official column of fdb-v2's judged scores: upstream's judge request rebuilt from the user's
own copy of upstream's `v2/eval/eval_prompts.json` (Full-Duplex-Bench @ d7336bd; CC BY-NC, so no
text of it is in this repository), and upstream's reply read as its scoring/parse.py reads it.

- `load(path)`: the file checked (the five keys upstream's eval_single_item.py requires, each a
  text, task_specific_prompts a list of {id, prompt}) and its sha256; a missing or malformed file
  is refused with one line (`OfficialPromptsError`).
- `render(sections, task, goals, a_text, b_text, b_words)`: the one consolidated prompt of a session,
  the sections in upstream's order: system instruction, turn-taking fluency rubric, multi-turn
  instruction-following rubric, the task's rubric (correction, entity_tracking, safety; none for
  daily), output format, the staged goals T1-T4, the transcript (channel A's text, channel B's text,
  channel B's word chunks as `[start, end]: word`), and the closing constraints.
- `parse(reply)`: {"events": [[[start, end], fluency, instruction], ...], "task_score"} or None.
  Lenient in the ways parse.py is: fenced blocks holding the key are read one by one (else the
  whole reply); each block as JSON after rewriting `{a, b}` and `{"start": a, "end": b}` intervals
  to `[a, b]`; failing that, the bracket-colon form of the output format (`[s, e]: 4, 5`) is
  scanned event by event; times may be `m:ss`; a score is int(float(x)) or null.

Our own code, written from upstream's behaviour (nothing copied).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.hashing import sha256_bytes

MODEL = "gemini-2.5-pro"            # upstream's judge (eval_single_item.py's default)
TEMPERATURE = 0.2                   # upstream's generationConfig temperature
GEMINI_BASE_URL = "https://generativelanguage.googleapis.com/v1beta/openai/"
MAX_TIME_S = 120.0                  # upstream transcribes and judges the first 120 s
KEYS = ("system_prompt", "turn_taking_fluency_prompt", "multi_turn_instruction_following_prompt",
        "output_format_prompt")
TASK_KINDS = ("correction", "entity_tracking", "safety")
EVENTS = "Turn-taking event and score"
TASK = "Task-specific score"


class OfficialPromptsError(DuplexEvalError):
    """The eval_prompts.json given cannot be used (one line saying why)."""


def load(path) -> dict:
    """{"sha256", "file", "sections": {system_prompt, ..., "task": {kind: text}}} of the file."""
    p = Path(str(path)).expanduser()
    what = f"judge official: prompts file {p}"
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise OfficialPromptsError(f"{what}: cannot be read ({exc.strerror or exc}); give your copy of "
                                   "upstream's v2/eval/eval_prompts.json") from None
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise OfficialPromptsError(f"{what}: not valid JSON") from None
    if not isinstance(doc, dict):
        raise OfficialPromptsError(f"{what}: not a JSON object")
    for k in KEYS:
        if not isinstance(doc.get(k), str) or not doc[k].strip():
            raise OfficialPromptsError(f"{what}: {k} must be a non-empty text")
    tasks = doc.get("task_specific_prompts")
    if not isinstance(tasks, list) or not all(isinstance(t, dict) and isinstance(t.get("id"), str)
                                              and isinstance(t.get("prompt"), str) for t in tasks):
        raise OfficialPromptsError(f"{what}: task_specific_prompts must be a list of {{id, prompt}}")
    by_id = {t["id"]: t["prompt"] for t in tasks}
    for kind in TASK_KINDS:
        if kind not in by_id:
            raise OfficialPromptsError(f"{what}: task_specific_prompts has no id {kind!r}")
    return {"sha256": sha256_bytes(data), "file": p.name,
            "sections": {**{k: doc[k] for k in KEYS}, "task": {k: by_id[k] for k in TASK_KINDS}}}


def word_lines(words: list[dict]) -> str:
    return "\n".join(f"[{float(w['start']):.2f}, {float(w['end']):.2f}]: {w['text']}" for w in words)


def render(sections: dict, task: str, goals: list[str], a_text: str, b_text: str, b_words: list[dict]) -> str:
    """The consolidated prompt of one session (module docstring), as one user message's text."""
    g = list(goals) + [""] * max(0, 4 - len(goals))
    parts = [("SYSTEM INSTRUCTION", sections["system_prompt"]),
             ("TURN-TAKING FLUENCY RUBRIC", sections["turn_taking_fluency_prompt"]),
             ("MULTI-TURN INSTRUCTION-FOLLOWING RUBRIC", sections["multi_turn_instruction_following_prompt"])]
    rubric = (sections.get("task") or {}).get(task, "").strip() if task != "daily" else ""
    if rubric:
        parts.append(("TASK-SPECIFIC RUBRIC", rubric))
    parts.append(("OUTPUT FORMAT", sections["output_format_prompt"]))
    out = [f"{head}:\n{body.strip()}" for head, body in parts]
    out.append("\n".join(["Dataset staged goals (T1\u2013T4):"] + [f"T{i + 1}: {g[i]}" for i in range(4)]))
    out.append("\n".join(["Transcript summary:", "Channel A (Examiner) summary:", a_text, "",
                          "Channel B (Examinee) summary:", b_text, "",
                          "Channel B (Examinee) segments with timestamps:", word_lines(b_words)]))
    out.append("Constraints:\n- Keep each evaluation output about ~100 words.\n"
               "- Follow the JSON shape exactly as in OUTPUT FORMAT.\n"
               "- Use time ranges from the provided Channel B timestamps.\n")
    return "\n\n".join(s for s in out if s)


# ---- the reply -------------------------------------------------------------------------------

_NUM = r"[+-]?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?"
_TOKEN = rf"(?:{_NUM}|\"[^\"]*\"|'[^']*'|\d+(?::\d+(?:\.\d+)?)+)"
_SE = re.compile(rf"\{{\s*['\"](?:start_time|start|startTime)['\"]\s*:\s*({_TOKEN})\s*,\s*"
                 rf"['\"](?:end_time|end|endTime)['\"]\s*:\s*({_TOKEN})\s*\}}")
_ES = re.compile(rf"\{{\s*['\"](?:end_time|end|endTime)['\"]\s*:\s*({_TOKEN})\s*,\s*"
                 rf"['\"](?:start_time|start|startTime)['\"]\s*:\s*({_TOKEN})\s*\}}")
_PAIR = re.compile(r"\{\s*([^{}]+?)\s*\}", re.S)
_FENCE = re.compile(r"```(?:json)?\s*([\s\S]*?)\s*```", re.I)


def seconds(tok) -> float:
    """A time: a number, or "m:ss" / "h:mm:ss" (quotes allowed); ValueError otherwise."""
    if isinstance(tok, bool):
        raise ValueError(tok)
    if isinstance(tok, (int, float)):
        return float(tok)
    s = str(tok).strip().strip("\"'")
    total = 0.0
    for part in s.split(":"):
        total = total * 60.0 + float(part)
    return total


def score_of(x) -> int | None:
    if x is None or isinstance(x, bool):
        return None
    s = str(x).strip().strip("\"'")
    try:
        return int(float(s))
    except ValueError:
        return None


def _is_time(s: str) -> bool:
    try:
        seconds(s)
        return True
    except ValueError:
        return False


def normalize(text: str) -> str:
    text = _SE.sub(lambda m: f"[{m.group(1)}, {m.group(2)}]", text)
    text = _ES.sub(lambda m: f"[{m.group(2)}, {m.group(1)}]", text)

    def pair(m):
        parts = [p.strip() for p in m.group(1).split(",")]
        return f"[{parts[0]}, {parts[1]}]" if len(parts) == 2 and all(map(_is_time, parts)) else m.group(0)
    return _PAIR.sub(pair, text)


def _intervals(obj) -> list[list[float]]:
    if isinstance(obj, list) and len(obj) == 2 and all(isinstance(x, (int, float, str)) and not isinstance(x, bool)
                                                       for x in obj):
        try:
            return [[seconds(obj[0]), seconds(obj[1])]]
        except ValueError:
            return []
    return [iv for o in obj for iv in _intervals(o)] if isinstance(obj, list) else []


def _from_json(block: str) -> dict | None:
    try:
        d = json.loads(normalize(block))
    except ValueError:
        return None
    if not isinstance(d, dict) or (EVENTS not in d and TASK not in d):
        return None
    events = []
    for item in d.get(EVENTS) if isinstance(d.get(EVENTS), list) else []:
        if isinstance(item, list) and len(item) >= 3:
            fl, inst = score_of(item[-2]), score_of(item[-1])
            events += [[iv, fl, inst] for iv in _intervals(item[:-2])]
    return {"events": events, "task_score": score_of(d.get(TASK))}


def _close(text: str, i: int) -> int:
    """The index of the bracket closing text[i] ("["), quotes skipped; -1 when none."""
    depth, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            j = text.find(c, i + 1)
            if j == -1:
                return -1
            i = j
        elif c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def _token(text: str, i: int) -> tuple[str | None, int]:
    while i < len(text) and text[i] in " \t\r\n,":
        i += 1
    if i < len(text) and text[i] == '"':
        j = text.find('"', i + 1)
        return (None, i) if j == -1 else (text[i + 1:j], j + 1)
    m = re.compile(r"[^,\[\]{}:\s]*").match(text, i)
    return (m.group(0) or None), m.end()


def _scan(block: str) -> dict | None:
    """The bracket-colon form: `"<events key>": [ [s, e]: fl, if, ... ]` (and the task score)."""
    k = -1
    for key in (f'"{EVENTS}"', f"'{EVENTS}'"):
        k = block.find(key)
        if k != -1:
            lb = block.find("[", k + len(key))
            rb = _close(block, lb) if lb != -1 else -1
            if rb != -1:
                break
    else:
        return None
    if k == -1:
        return None
    body, i, events = block[lb + 1:rb], 0, []
    while True:
        lb2 = body.find("[", i)
        if lb2 == -1:
            break
        rb2 = _close(body, lb2)
        if rb2 == -1:
            break
        j = rb2 + 1
        while j < len(body) and body[j] in " \t\r\n":
            j += 1
        if j >= len(body) or body[j] != ":":
            i = rb2 + 1
            continue
        t1, j = _token(body, j + 1)
        t2, j = _token(body, j)
        try:
            ivs = _intervals(json.loads(re.sub(r",\s*]", "]", normalize(body[lb2:rb2 + 1]))))
        except ValueError:
            ivs = []
        events += [[iv, score_of(t1), score_of(t2)] for iv in ivs]
        i = j
    m = (re.search(rf'"{TASK}"\s*:\s*("[^"]+"|[^\s,}}\]]+)', block[rb:])
         or re.search(rf'"{TASK}"\s*:\s*("[^"]+"|[^\s,}}\]]+)', block)
         or re.search(rf"'{TASK}'\s*:\s*('[^']+'|[^\s,}}\]]+)", block))
    return {"events": events, "task_score": score_of(m.group(1)) if m else None}


def parse(reply: str) -> dict | None:
    """{"events", "task_score"} of a reply (module docstring), or None when nothing in it reads
    as the output format (no events key or task score found)."""
    reply = reply or ""
    blocks = [m.group(1) for m in _FENCE.finditer(reply) if EVENTS in m.group(1)] or [reply]
    events, tasks, found = [], [], False
    for b in blocks:
        got = _from_json(b) or _scan(b)
        if got is None:
            continue
        found = True
        events += got["events"]
        if got["task_score"] is not None:
            tasks.append(got["task_score"])
    if not found:
        return None
    return {"events": events, "task_score": tasks[-1] if tasks else None}
