"""The deterministic offline segmenter: user turns from the two channels' speech.

No LLM, no randomness: the same transcripts give the same turns. It stands in for the paper's
LLM segmentation (Algorithm 1, step 2) where no LLM is configured, and is not the paper's method.
Two rules (setting `rule`); gap-v2 is the default, gap-v1 the rule before it, kept as it was.

Both read each channel's speech (VAD segments when the file has them, else its ASR words'
spans), whose silences shorter than `min_silence_s` (0.3 s: the gaps between the words of one
phrase) are bridged, and then:

1. Drop the user's speech that takes no turn.
   gap-v1: a user speech interval shorter than `backchannel_max_s` (1.0 s, the paper's
   backchannel length) that overlaps model speech is a backchannel: no turn and no boundary.
   gap-v2: a user speech interval the model talks through takes no turn, whatever its length:
   the model's speech, its pauses shorter than `talkover_pause_s` (0.5 s) bridged, runs from
   at or before the interval's start to at least `talkover_hold_s` (0.1 s) after its end. That
   is a backchannel (also one said into a short pause of the model), or background speech on
   the user channel inside a model response (another voice, MTR-DuplexBench's B feature, which
   gap-v1 took for a turn or joined to the next one). A user who cuts into the model's speech
   and outlasts it (an interruption, also one whose first words stop for a pause) keeps the
   turn; gap-v1 dropped such a start when it was shorter than 1 s. `backchannel_max_s` does not
   apply.
2. The remaining user intervals, in time order, are grouped into turns: the next interval
   starts a new turn when the silence before it is at least `max_gap_s` (2.5 s), or when the
   model responds in it: its speech intervals that reach into the gap last, from the gap's start
   on, at least `min_response_s` (1.0 s) together, counted whole even where they run on after
   the user comes back (an answer the user cuts into). Anything shorter is a backchannel and the
   user's turn goes on; otherwise the interval continues the current turn (a pause inside one
   request).
3. A turn spans its first interval's start to its last interval's end.
   gap-v2, when the user's speech is its VAD segments and user.json has Silero's probabilities
   (`vad_probs`, the asr-aligner's dialogue mode): the turn ends at the start of the last
   window, inside its last interval, whose probability is at least the VAD's threshold. A
   Silero segment ends 30 ms (the pad) after the first window below the lower threshold (0.35),
   which comes only after the probability has decayed for a window or more past the speech, so
   segment ends are 25-140 ms late (mtr-mini's dialogue-quality dialogue); the probability stays
   at or above the threshold for about one window after the speech ends, so the last such
   window's start is close to it (perf/mtr_turn_segmentation.py measures both;
   benchmarks/mtr/README.md has the numbers). Without probabilities, or from words, the end is
   the interval's.
   Times are rounded to 2 decimals.
4. Only turns that start inside the span [span start, span end), and end after they start (a
   word without an end time alone is no turn), are kept.
"""

from __future__ import annotations

import math

from .channels import Probs, merge_intervals, overlap
from .voting import DECIMALS, Turn

RULES = ("gap-v1", "gap-v2")
DEFAULT_RULE = "gap-v2"
DEFAULTS = {"rule": DEFAULT_RULE, "speech_source": "auto", "min_silence_s": 0.3, "max_gap_s": 2.5,
            "min_response_s": 1.0, "backchannel_max_s": 1.0, "talkover_pause_s": 0.5, "talkover_hold_s": 0.1}
# the parameters each rule reads (the record lists these)
PARAMETERS = {"gap-v1": ("speech_source", "min_silence_s", "max_gap_s", "min_response_s", "backchannel_max_s"),
              "gap-v2": ("speech_source", "min_silence_s", "max_gap_s", "min_response_s", "talkover_pause_s",
                         "talkover_hold_s")}


def defaults(rule: str = DEFAULT_RULE) -> dict:
    """The parameters of a rule with their defaults (what segmentation.json records)."""
    return {k: DEFAULTS[k] for k in PARAMETERS[rule]}


def segment(user: list[tuple[float, float]], model: list[tuple[float, float]], span: tuple[float, float],
            min_silence_s: float = 0.3, max_gap_s: float = 2.5, min_response_s: float = 1.0,
            backchannel_max_s: float = 1.0, decimals: int = DECIMALS, rule: str = DEFAULT_RULE,
            probs: Probs | None = None, talkover_pause_s: float = 0.5,
            talkover_hold_s: float = 0.1) -> list[Turn]:
    """Turns from the speech intervals of the user and the model (see the module). `probs`: the
    user channel's VAD probabilities, read by gap-v2 for the turn ends when `user` is that VAD's
    segments."""
    if rule not in RULES:
        raise ValueError(f"unknown offline rule {rule!r}")
    user, model = bridge(user, min_silence_s), bridge(model, min_silence_s)
    if rule == "gap-v1":
        kept = [iv for iv in user
                if not (iv[1] - iv[0] < backchannel_max_s and overlap(iv, model) > 0)]
    else:
        floor = bridge(model, talkover_pause_s)
        kept = [iv for iv in user if not talked_over(iv, floor, talkover_hold_s)]
    groups: list[list[float]] = []    # [start, end, start of its last interval]
    for s, e in kept:
        if groups:
            gap = (groups[-1][1], s)
            if gap[1] - gap[0] < max_gap_s and response(gap, model) < min_response_s:
                if e > groups[-1][1]:
                    groups[-1][1], groups[-1][2] = e, s
                continue
        groups.append([s, e, s])
    if rule == "gap-v2" and probs is not None:
        groups = [[s, speech_end(e, last, probs), last] for s, e, last in groups]
    turns = [Turn(round(s, decimals), round(e, decimals)) for s, e, _ in groups if span[0] <= s < span[1]]
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


def talked_over(iv: tuple[float, float], floor: list[tuple[float, float]], hold_s: float = 0.1) -> bool:
    """gap-v2: one interval of the model's speech (`floor`: its pauses shorter than
    talkover_pause_s bridged) runs from at or before the user interval's start to at least
    hold_s after its end."""
    return any(s <= iv[0] and iv[1] + hold_s <= e for s, e in floor)


def speech_end(end: float, lo: float, probs: Probs) -> float:
    """gap-v2: the start of the last window starting in [lo, end) whose probability is at least
    the threshold; `end` itself when there is none."""
    w = probs.window_s
    j = min(len(probs.values), math.ceil(end / w - 1e-9)) - 1
    while j >= 0 and j * w > lo:
        if probs.values[j] >= probs.threshold:
            return min(end, j * w)
        j -= 1
    return end
