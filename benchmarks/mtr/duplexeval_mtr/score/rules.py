"""MTR-DuplexBench success rules for one round, under two definitions.

paper  The paper's Appendix A (arXiv 2511.10262): takeover TO over a window is 0 when the model
       channel holds only silence or backchannels there, a backchannel being a segment shorter than
       1 s AND with fewer than 2 words; interruption windows start tau = 2 s after the interruption.
code   The released evaluation code (ZhangHe0918/MTR-DuplexBench, commit 6d7c125, Eval/eval_*.py):
       its speak() rule (check_if_speak_at_the_same_time), no tau, the pause window
       [pause_start, pause_end + 1.0], check_time_range_in_ipu (+0.3 s, tolerance 0.1 s, 2.0 s word
       gap) for background, calculate_latency and calculate_frequency, with its quirks kept (a 0.0
       timestamp read as missing by eval_1, a range fully outside speech is a failure).

A segment is a `Seg` (made by `seg(start, end, text, words)`), `words` a tuple of (start, end)
pairs, all times in seconds on the dialogue timeline. Features: S smooth turn-taking, I interruption, P pause
handling, B background speech.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from duplexeval_common.timebase import US, to_us

# The paper's constants (Appendix A).
BC_MAX_S = 1.0          # a backchannel is shorter than this ...
BC_MAX_US = 1_000_000
BC_MAX_WORDS = 2        # ... and has fewer words than this
TAU_S = 2.0             # interruption: the no-takeover window starts this long after the cut-in

# The released code's constants (Eval/eval_1_scenario.py, eval_4_scenarios.py, ...).
CODE_DURATION_S = 1.0   # speak(): in-window word time at or above this is speech
CODE_WORDS = 3          # speak(): ... or more than this many in-window words
CODE_PAUSE_TAIL_S = 1.0  # pause window [pause_start, pause_end + 1.0]
CODE_BG_OFFSET_S = 0.3  # background range starts 0.3 s after background_start
CODE_BG_TOL_S = 0.1     # check_time_range_in_ipu tolerance
CODE_BG_GAP_S = 20 * CODE_BG_TOL_S  # a word gap over 2.0 s breaks the coverage
CODE_BC_MAX_S = 3       # calculate_frequency: backchannel shorter than 3 s ...
CODE_BC_WORDS = 2       # ... with at most 2 words (punctuation removed)

FEATURES = ("S", "I", "P", "B")
_PUNCT = re.compile(r"[^\w\s\[\]]")


class Seg(NamedTuple):
    start: float
    end: float
    text: str
    words: tuple   # ((start, end), ...) in seconds, as the transcript gives them
    start_us: int  # the segment's times in whole microseconds (the paper rules compare these)
    end_us: int


def seg(start: float, end: float, text: str = "", words=()) -> Seg:
    """A segment; `words` as (start, end) pairs."""
    return Seg(float(start), float(end), text, tuple((float(a), float(b)) for a, b in words),
               to_us(start), to_us(end))


# ---------------------------------------------------------------------------------------------
# paper definitions (on whole microseconds, so 0.99 s and 1.00 s are what the file says)

def is_backchannel(seg: Seg) -> bool:
    """Paper: a segment under 1 s and with fewer than 2 words."""
    return (seg.end_us - seg.start_us) < BC_MAX_US and len(seg.words) < BC_MAX_WORDS


def takeover(segs, a: float, b: float) -> int:
    """Paper TO over [a, b] (seconds): 1 when a segment that is not a backchannel overlaps the
    window by a positive length; 0 for silence or backchannels only (and for an empty window)."""
    a_us, b_us = to_us(a), to_us(b)
    if b_us <= a_us:
        return 0
    return int(any(s.start_us < b_us and s.end_us > a_us and not is_backchannel(s) for s in segs))


def takeover_after(segs, t: float) -> int:
    """Paper TO(t' > t): 1 when a segment that is not a backchannel ends after t."""
    t_us = to_us(t)
    return int(any(s.end_us > t_us and not is_backchannel(s) for s in segs))


def paper_latency(segs, t: float) -> float | None:
    """Seconds from t to the start of the model's takeover (the earliest non-backchannel segment
    ending after t, at least 0); None when there is no takeover (the latency is then not defined,
    as in Full-Duplex-Bench, which the paper follows)."""
    t_us = to_us(t)
    starts = [s.start_us for s in segs if s.end_us > t_us and not is_backchannel(s)]
    return max(0, min(starts) - t_us) / US if starts else None


def paper_bc_frequency(segs) -> float:
    """Backchannels by the paper's definition per second of model speech (0 with no speech)."""
    total = sum(s.end_us - s.start_us for s in segs)
    if total <= 0:
        return 0.0
    return sum(1 for s in segs if is_backchannel(s)) * US / total


def paper_smooth(segs, ts: dict) -> int:
    return int(takeover(segs, ts["user_start"], ts["user_end"]) == 0
               and takeover_after(segs, ts["user_end"]) == 1)


def paper_interruption(segs, ts: dict, tau: float = TAU_S) -> int:
    start = (to_us(ts["interruption_start"]) + to_us(tau)) / US
    return int(takeover(segs, start, ts["interruption_end"]) == 0
               and takeover_after(segs, ts["interruption_end"]) == 1)


def pause_window(ts: dict) -> tuple[float, float]:
    """The pause itself, or the user turn when the encoding gives no pause (both times absent or
    both 0.0, the release's "no pause")."""
    if ts.get("pause_start", 0.0) != 0.0 or ts.get("pause_end", 0.0) != 0.0:
        return ts["pause_start"], ts["pause_end"]
    return ts["user_start"], ts["user_end"]


def paper_pause(segs, ts: dict) -> int:
    a, b = pause_window(ts)
    return int(takeover(segs, a, b) == 0)


def paper_background(segs, ts: dict) -> int:
    """The model keeps its turn around the background speech: its turn (first to last segment
    that is not a backchannel) exists and t^A_s <= t^b_s < t^b_e <= t^A_e."""
    turn = [s for s in segs if not is_backchannel(s)]
    if not turn:
        return 0
    a_s = min(s.start_us for s in turn)
    a_e = max(s.end_us for s in turn)
    bs, be = to_us(ts["background_start"]), to_us(ts["background_end"])
    return int(a_s <= bs < be <= a_e)


def paper_round(segs, features, ts: dict) -> dict:
    """Paper success of one round: every feature of the round succeeds; latency from the end of
    the user's turn (the interruption's end for I)."""
    fs = set(features)
    checks = []
    if "I" in fs:
        checks.append(paper_interruption(segs, ts))
    elif "S" in fs:
        checks.append(paper_smooth(segs, ts))
    if "P" in fs:
        checks.append(paper_pause(segs, ts))
    if "B" in fs:
        checks.append(paper_background(segs, ts))
    ref = ts["interruption_end"] if "I" in fs else ts.get("user_end")
    return {"success": int(all(checks)),
            "latency_s": None if ref is None else paper_latency(segs, ref),
            "backchannel_freq": paper_bc_frequency(segs)}


# ---------------------------------------------------------------------------------------------
# the released code's rules (same comparisons, same order of float operations)

def code_speak(segs, a: float, b: float) -> int:
    """check_if_speak_at_the_same_time: per overlapping segment, the words lying fully inside
    [a, b]; 1 as soon as one segment has >= 1.0 s of such words, or < 1.0 s but > 3 words."""
    if not segs:
        return 0
    for s in segs:
        if not ((s.start < b and s.end > a) or (s.end < b and s.start > a)):
            continue
        duration = 0.0
        count = 0
        for ws, we in s.words:
            if ws >= a and we <= b:
                duration += we - ws
                count += 1
        if duration < CODE_DURATION_S:
            if count > CODE_WORDS:
                return 1
        else:
            return 1
    return 0


def code_latency(segs, user_end, model_start):
    """calculate_latency: the earliest-starting segment among those ending after user_end;
    max(0, its start - user_end); 0 when there is none or a time is missing."""
    if user_end is None or model_start is None:
        return 0
    after = [s for s in segs if s.end > user_end]
    if not after:
        return 0
    first = min(after, key=lambda s: s.start)
    return max(0, first.start - user_end)


def code_frequency(segs):
    """calculate_frequency: segments under 3 s with at most 2 words (punctuation removed), per
    second of all segments."""
    if not segs:
        return 0
    count = 0
    total = 0
    for s in segs:
        duration = s.end - s.start
        if duration < CODE_BC_MAX_S and len(_PUNCT.sub("", s.text).split()) <= CODE_BC_WORDS:
            count += 1
        total += duration
    if total == 0:
        return 0
    return count / total


def code_in_ipu(start, end, segs, tol: float = CODE_BG_TOL_S) -> int:
    """check_time_range_in_ipu: 1 only when one segment contains [start, end - tol] and its words
    touching the range cover it (first start <= start, last end >= end - tol) with no gap over
    2.0 s; 0 otherwise, including a range fully outside speech (contrary to its docstring)."""
    if start is None or end is None:
        return 0
    if not segs or start >= end:
        return 0
    if all(end <= s.start or start >= s.end - tol for s in segs):
        return 0
    for s in segs:
        if not (s.start <= start and end <= s.end - tol):
            continue
        if not s.words:
            continue
        rel = sorted((w for w in s.words if w[1] > start and w[0] < end + tol), key=lambda w: w[0])
        if not rel:
            continue
        if rel[0][0] > start:
            continue
        if rel[-1][1] < end - tol:
            continue
        if any(rel[i + 1][0] - rel[i][1] > CODE_BG_GAP_S for i in range(len(rel) - 1)):
            continue
        return 1
    return 0


def code_eval_1(segs, ts: dict) -> tuple:
    """eval_1_scenario (smooth turn-taking): (success, latency, frequency); a missing or 0.0
    user_end / model_start / model_end gives (0, 0, 0), as the release's `not all([...])` does."""
    if not all([ts.get("user_end"), ts.get("model_start"), ts.get("model_end")]):
        return 0, 0, 0
    if code_speak(segs, ts.get("user_start"), ts["user_end"]) == 1:
        success = 0
    else:
        success = 1 if code_speak(segs, ts["model_start"], ts["model_end"]) == 1 else 0
    return success, code_latency(segs, ts["user_end"], ts["model_start"]), code_frequency(segs)


def code_eval_2(segs, ts: dict) -> tuple:
    """eval_2_scenarios, interruption branch (no tau; `threshold` unused upstream)."""
    i_s, i_e = ts.get("interruption_start"), ts.get("interruption_end")
    if i_s is None or i_e is None:
        return 0, 0, 0
    ok = code_speak(segs, i_s, i_e) == 0 and code_speak(segs, ts.get("model_start"), ts.get("model_end")) == 1
    return (1 if ok else 0), code_latency(segs, i_e, ts.get("model_start")), code_frequency(segs)


def code_base(segs, features, ts: dict) -> tuple:
    """eval_2 / eval_3's dispatch: interruption rounds by eval_2, the others by eval_1."""
    return code_eval_2(segs, ts) if "I" in features else code_eval_1(segs, ts)


def code_pause(segs, ts: dict) -> tuple:
    """eval_single_scenario_pause (its calculate_tor import fixed to the speak() rule it needs):
    1 - speak over [pause_start, pause_end + 1.0], or over the user turn when both pause times
    are absent or 0.0."""
    p_s, p_e = ts.get("pause_start", 0.0), ts.get("pause_end", 0.0)
    if p_s == 0.0 and p_e == 0.0:
        spoke = code_speak(segs, ts.get("user_start"), ts.get("user_end"))
    else:
        spoke = code_speak(segs, p_s, p_e + CODE_PAUSE_TAIL_S)
    return (0 if spoke == 1 else 1), code_latency(segs, ts.get("user_end"), ts.get("model_start")), \
        code_frequency(segs)


def code_background_range(segs, ts: dict) -> int:
    return code_in_ipu(ts["background_start"] + CODE_BG_OFFSET_S, ts["background_end"], segs)


def code_background(segs, ts: dict) -> tuple:
    """eval_single_scenario_background: success from check_time_range_in_ipu alone; latency and
    frequency from eval_3's smooth-turn-taking branch (eval_1)."""
    _, latency, frequency = code_eval_1(segs, ts)
    return code_background_range(segs, ts), latency, frequency


def code_round(segs, features, ts: dict) -> dict:
    """The released function for the round's features (benchmarks/mtr/README.md, "Released-code column"):
    {P} eval_single_scenario_pause, {B} eval_single_scenario_background, S or I with B
    eval_4_scenarios (base rule AND the background range), else eval_1/2/3 (base rule only: the
    release checks no pause window in a mix)."""
    fs = set(features)
    if fs == {"P"}:
        success, latency, freq = code_pause(segs, ts)
    elif fs == {"B"}:
        success, latency, freq = code_background(segs, ts)
    else:
        success, latency, freq = code_base(segs, fs, ts)
        if "B" in fs:
            success = 1 if (success == 1 and code_background_range(segs, ts) == 1) else 0
    return {"success": success, "latency_s": latency, "backchannel_freq": freq}


def score_round(segs, features, ts: dict) -> dict:
    """Both columns of one round: {"paper": {...}, "code": {...}}."""
    return {"paper": paper_round(segs, features, ts), "code": code_round(segs, features, ts)}
