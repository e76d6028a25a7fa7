"""The deterministic offline segmenter (rule `gap-v1`): user turns from the two channels' speech.

No LLM, no randomness: the same transcripts give the same turns. It stands in for the paper's
LLM segmentation (Algorithm 1, step 2) where no LLM is configured, and is not the paper's method.

The rule, on each channel's speech (VAD segments when the file has them, else its ASR words'
spans), whose silences shorter than `min_silence_s` (0.3 s: the gaps between the words of one
phrase) are bridged:
1. User backchannels are dropped: a user speech interval shorter than `backchannel_max_s` (1.0 s,
   the paper's backchannel length) that overlaps model speech is no turn and no boundary.
2. The remaining user intervals, in time order, are grouped into turns: the next interval
   starts a new turn when the silence before it is at least `max_gap_s` (2.5 s), or when the
   model responds in it: its speech intervals that reach into the gap last, from the gap's start
   on, at least `min_response_s` (1.0 s) together, counted whole even where they run on after
   the user comes back (an answer the user cuts into). Anything shorter is a backchannel and the
   user's turn goes on; otherwise the interval continues the current turn (a pause inside one
   request).
3. A turn spans its first interval's start to its last interval's end, rounded to 2 decimals.
4. Only turns that start inside the span [span start, span end), and end after they start (a
   word without an end time alone is no turn), are kept.
"""

from __future__ import annotations

from .channels import merge_intervals, overlap
from .voting import DECIMALS, Turn

RULE = "gap-v1"
DEFAULTS = {"speech_source": "auto", "min_silence_s": 0.3, "max_gap_s": 2.5, "min_response_s": 1.0,
            "backchannel_max_s": 1.0}


def segment(user: list[tuple[float, float]], model: list[tuple[float, float]], span: tuple[float, float],
            min_silence_s: float = 0.3, max_gap_s: float = 2.5, min_response_s: float = 1.0,
            backchannel_max_s: float = 1.0, decimals: int = DECIMALS) -> list[Turn]:
    """Turns from the speech intervals of the user and the model (see the module)."""
    user, model = bridge(user, min_silence_s), bridge(model, min_silence_s)
    kept = [iv for iv in user
            if not (iv[1] - iv[0] < backchannel_max_s and overlap(iv, model) > 0)]
    groups: list[list[float]] = []
    for s, e in kept:
        if groups:
            gap = (groups[-1][1], s)
            if gap[1] - gap[0] < max_gap_s and response(gap, model) < min_response_s:
                groups[-1][1] = max(groups[-1][1], e)
                continue
        groups.append([s, e])
    turns = [Turn(round(s, decimals), round(e, decimals)) for s, e in groups if span[0] <= s < span[1]]
    return [t for t in turns if t.start < t.end]


def bridge(spans: list[tuple[float, float]], min_silence_s: float) -> list[tuple[float, float]]:
    """Sorted, merged intervals with every silence shorter than min_silence_s filled."""
    out: list[list[float]] = []
    for s, e in merge_intervals(spans):
        if out and s - out[-1][1] < min_silence_s:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def response(gap: tuple[float, float], model: list[tuple[float, float]]) -> float:
    """Seconds the model speaks from the start of the gap on, in its intervals that reach into
    the gap (so an answer the user cuts into counts whole, not only its part in the gap)."""
    return sum(e - max(s, gap[0]) for s, e in model if s < gap[1] and e > gap[0])
