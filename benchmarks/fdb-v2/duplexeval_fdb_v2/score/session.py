"""One live session's numbers, from the examiner's turns (examiner.json: placed by the examiner,
so exact) and the model's speech intervals (the VAD of output.wav). Pure: no file is read here.

Per examiner turn that is not the end phrase, the response window opens at the turn's end and
closes `window_s` later, or when the examiner's next turn starts, whichever comes first. The turn
is *answered* when a model speech interval starts inside the window (latency: that start minus
the turn's end). A turn whose window the end of the recording cuts short and that got no answer
in what was recorded is *censored*: it counts for neither side of the response rate. Model
speech that was already going when the turn ended, or that starts while the examiner speaks,
does not answer it (the latter is a talk-over).

- response_rate: answered turns / (answerable turns - censored ones);
- latencies: of the answered turns, seconds;
- overlap_rate: seconds during which both speak / seconds the examiner speaks (every turn);
- model_talk_over: model speech starts strictly inside an examiner turn;
- examiner_talk_over: examiner.json's talked_over_model (turns it started while the model spoke);
- turns_completed: examiner turns played; examiner_yielded: those it cut short (slow preset);
- goals_reached: examiner.json's goals_reached among the task's goals / the task's goals;
- examiner_ended_early: the examiner ended (end phrase or turn limit, not the session's end)
  before it opened the task's last goal.
"""

from __future__ import annotations

import math

KINDS = ("opening", "follow_up", "scripted", "end")
REASONS = ("end_phrase", "turn_limit", "duration")
EPS = 1e-6


class SessionError(ValueError):
    """examiner.json does not hold what the scorer needs (the message says what)."""


def _num(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def turns_of(examiner: dict, duration_s: float) -> list[dict]:
    """examiner.json's turns, checked and in time order."""
    if not isinstance(examiner, dict) or examiner.get("format") != "duplexeval-examiner/1":
        raise SessionError("examiner.json: format must be duplexeval-examiner/1")
    turns = examiner.get("turns")
    if not isinstance(turns, list):
        raise SessionError("examiner.json: turns must be a list")
    for i, t in enumerate(turns):
        if not isinstance(t, dict) or not _num(t.get("start_s")) or not _num(t.get("end_s")):
            raise SessionError(f"examiner.json: turn {i} has no start_s/end_s numbers")
        if t.get("kind") not in KINDS:
            raise SessionError(f"examiner.json: turn {i} kind must be one of {', '.join(KINDS)}")
        if not 0 <= t["start_s"] <= t["end_s"] <= duration_s + EPS:
            raise SessionError(f"examiner.json: turn {i} [{t['start_s']}, {t['end_s']}] s lies outside "
                               f"the session [0, {duration_s:g}] s or is reversed")
    return sorted(turns, key=lambda t: (t["start_s"], t.get("index", 0)))


def _union(intervals) -> list[tuple[float, float]]:
    out: list[list[float]] = []
    for s, e in sorted((float(s), float(e)) for s, e in intervals if e > s):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def _length(intervals) -> float:
    return sum(e - s for s, e in intervals)


def _intersection(a, b) -> float:
    a, b, i, j, total = _union(a), _union(b), 0, 0, 0.0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        total += max(0.0, hi - lo)
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def turn_responses(turns: list[dict], model: list[tuple[float, float]], duration_s: float,
                   window_s: float) -> list[dict]:
    """Per answerable turn: {index, end_s, window_end_s, answered, latency_s, censored}."""
    starts = sorted(s for s, _ in model)
    rows = []
    for k, t in enumerate(turns):
        if t["kind"] == "end":
            continue
        end = float(t["end_s"])
        nxt = next((float(u["start_s"]) for u in turns[k + 1:] if u["start_s"] >= end), math.inf)
        close = min(end + window_s, nxt)
        onset = next((s for s in starts if end <= s < close), None)
        censored = onset is None and close > duration_s + EPS
        rows.append({"index": t.get("index", k), "end_s": end, "window_end_s": round(min(close, duration_s), 6),
                     "answered": onset is not None,
                     "latency_s": None if onset is None else round(onset - end, 6), "censored": censored})
    return rows


def session_metrics(examiner: dict, model: list[tuple[float, float]], duration_s: float, window_s: float,
                    goal_ids: list[str]) -> dict:
    """The numbers of one session (module docstring); raises SessionError on a bad examiner.json."""
    turns = turns_of(examiner, duration_s)
    model = [(max(0.0, float(s)), min(duration_s, float(e))) for s, e in model]
    responses = turn_responses(turns, model, duration_s, window_s)
    counted = [r for r in responses if not r["censored"]]
    answered = [r for r in counted if r["answered"]]
    exam = [(float(t["start_s"]), float(t["end_s"])) for t in turns]
    exam_s = _length(_union(exam))
    overlap_s = _intersection(exam, model)
    talk_over = sum(1 for s, _ in model for a, b in exam if a < s < b)
    reached = sorted(set(examiner.get("goals_reached") or []) & set(goal_ids))
    opened = {t.get("goal") for t in turns}
    ended = examiner.get("ended") or {}
    if ended.get("reason") not in REASONS:
        raise SessionError(f"examiner.json: ended.reason must be one of {', '.join(REASONS)}")
    early = ended["reason"] != "duration" and bool(goal_ids) and goal_ids[-1] not in opened
    talked = examiner.get("talked_over_model", 0)
    if isinstance(talked, bool) or not isinstance(talked, int) or talked < 0:
        raise SessionError("examiner.json: talked_over_model must be a whole number >= 0")
    return {
        "turns": responses,
        "answerable": len(counted), "censored": len(responses) - len(counted), "answered": len(answered),
        "response_rate": len(answered) / len(counted) if counted else None,
        "latencies_s": [r["latency_s"] for r in answered],
        "response_latency_s": (sum(r["latency_s"] for r in answered) / len(answered)) if answered else None,
        "examiner_speech_s": round(exam_s, 6), "overlap_s": round(overlap_s, 6),
        "overlap_rate": overlap_s / exam_s if exam_s > 0 else None,
        "model_speech_s": round(_length(_union(model)), 6),
        "model_talk_over": talk_over, "examiner_talk_over": talked,
        "turns_completed": len(turns), "examiner_yielded": sum(bool(t.get("yielded")) for t in turns),
        "goals": len(goal_ids), "goals_reached": len(reached), "goals_reached_ids": reached,
        "goals_reached_share": len(reached) / len(goal_ids) if goal_ids else None,
        "examiner_ended_early": early, "ended_reason": ended["reason"],
        "llm_lines": sum(1 for t in turns if t.get("kind") == "follow_up"),
    }
