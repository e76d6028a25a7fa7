"""Algorithm 1, steps 3 and 4 of the MTR-DuplexBench paper (arXiv:2511.10262), and the windows.

Pure functions on (start, end) pairs in seconds; nothing here reads files or calls a server.

Step 3, majority voting with clustering, as the author's released segmentation code does it
(ZhangHe0918/Duplex-Semantic-Eval-Bench, semantic_eval/gpt4o_divide_turn_regard_semantic_conditional.py,
`majority_voting_turns`; the benchmark repository ZhangHe0918/MTR-DuplexBench @ 6d7c125 holds no
segmenter):
  - every turn of every run, in run order and then in the order the run lists them, joins the
    first cluster whose current representative (the median start, the median end of its
    members so far) it overlaps with IoU >= the threshold (0.3; the paper's ">=30% time
    overlap", read as intersection over union as the code does), else starts a new cluster;
  - a cluster's votes are its member count; clusters with at least `min_votes` (2) are kept,
    with the median start and end of their members, rounded to 2 decimals, when start < end;
  - the median is the upper median (sorted values at index n // 2), as the code takes it, or
    with median="middle" the mean of the two middle values for an even count.
The IoU comparison allows 1e-9 of float rounding (a pair of turns whose IoU is exactly 0.3 on
paper joins even when the floats give 0.29999999999999993).

Step 4, final overlap resolution (in the paper, absent from the released code): the kept turns,
sorted by (start, end), are merged while the next one starts before the current one ends
(turns that only touch stay apart); a merged turn's votes are the sum of its members' and
`merged` counts them.

Response windows (the paper's context-inconsistency rule): round k (1-based) of K turns is
[C_k.start, C_{k+1}.end], the last one [C_K.start, dialogue end].
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

OVERLAP = 0.30
MIN_VOTES = 2
RUNS = 6
DECIMALS = 2
MEDIANS = ("upper", "middle")
EPS = 1e-9


@dataclass(frozen=True)
class Turn:
    start: float
    end: float
    votes: int | None = None   # None: the offline segmenter (no voting)
    merged: int = 1            # kept candidates merged into this turn (step 4)

    def as_dict(self) -> dict:
        return {"start": self.start, "end": self.end, "votes": self.votes, "merged": self.merged}


@dataclass
class Cluster:
    starts: list[float] = field(default_factory=list)
    ends: list[float] = field(default_factory=list)
    members: list[tuple[int, int]] = field(default_factory=list)  # (run, index in that run)

    @property
    def votes(self) -> int:
        return len(self.members)

    def representative(self, kind: str) -> tuple[float, float]:
        return median(self.starts, kind), median(self.ends, kind)


def iou(a: tuple[float, float], b: tuple[float, float]) -> float:
    """Intersection over union of two intervals (0 when the union is empty)."""
    inter = max(0.0, min(a[1], b[1]) - max(a[0], b[0]))
    union = max(a[1], b[1]) - min(a[0], b[0])
    return inter / union if union > 0 else 0.0


def median(values: list[float], kind: str = "upper") -> float:
    if not values:
        raise ValueError("median of nothing")
    s = sorted(values)
    n = len(s)
    if kind == "upper" or n % 2:
        return s[n // 2]
    if kind == "middle":
        return (s[n // 2 - 1] + s[n // 2]) / 2
    raise ValueError(f"median must be one of {', '.join(MEDIANS)}, not {kind!r}")


def cluster(runs: list[list[tuple[float, float]]], threshold: float = OVERLAP,
            median_kind: str = "upper") -> list[Cluster]:
    """Step 3's clustering: each turn joins the first cluster whose representative it overlaps
    with IoU >= threshold (see the module docstring)."""
    clusters: list[Cluster] = []
    for r, turns in enumerate(runs):
        for i, (s, e) in enumerate(turns):
            for c in clusters:
                if iou((s, e), c.representative(median_kind)) >= threshold - EPS:
                    break
            else:
                c = Cluster()
                clusters.append(c)
            c.starts.append(float(s))
            c.ends.append(float(e))
            c.members.append((r, i))
    return clusters


def merge_overlaps(turns: list[Turn]) -> list[Turn]:
    """Step 4: sorted by (start, end), overlapping turns (next.start < current.end) merged."""
    out: list[Turn] = []
    for t in sorted(turns, key=lambda t: (t.start, t.end)):
        if out and t.start < out[-1].end:
            last = out[-1]
            votes = None if last.votes is None and t.votes is None else (last.votes or 0) + (t.votes or 0)
            out[-1] = Turn(last.start, max(last.end, t.end), votes, last.merged + t.merged)
        else:
            out.append(t)
    return out


@dataclass
class Vote:
    candidates: list[dict]   # every cluster: start, end (medians, rounded), votes, runs (1-based), kept, why not
    turns: list[Turn]        # the final turns (after step 4 when merge is on)


def vote(runs: list[list[tuple[float, float]]], threshold: float = OVERLAP, min_votes: int = MIN_VOTES,
         median_kind: str = "upper", merge: bool = True, decimals: int = DECIMALS) -> Vote:
    """Steps 3 and 4 over the runs' turns (each run a list of (start, end))."""
    candidates, kept = [], []
    for c in cluster(runs, threshold, median_kind):
        s, e = c.representative(median_kind)
        s, e = round(s, decimals), round(e, decimals)
        why = None
        if c.votes < min_votes:
            why = f"{c.votes} vote(s) < {min_votes}"
        elif not s < e:
            why = "median start not before median end"
        candidates.append({"start": s, "end": e, "votes": c.votes,
                           "runs": sorted({r + 1 for r, _ in c.members}), "kept": why is None,
                           **({"dropped": why} if why else {})})
        if why is None:
            kept.append(Turn(s, e, c.votes))
    kept.sort(key=lambda t: (t.start, t.end))
    return Vote(candidates, merge_overlaps(kept) if merge else kept)


def windows(turns: list[Turn], dialogue_end: float) -> list[dict]:
    """Round k's response window [C_k.start, C_{k+1}.end]; the last one ends at the dialogue end."""
    out = []
    for k, t in enumerate(turns):
        end = turns[k + 1].end if k + 1 < len(turns) else dialogue_end
        out.append({"round": k + 1, "start": t.start, "end": end})
    return out


def continuations(turns: list[Turn], model_speech: list[tuple[float, float]], decimals: int = DECIMALS,
                  ) -> list[dict]:
    """Where the model is still talking as a turn starts, as the author's code records it (not in
    the paper): the model speaks both at the previous turn's end and at this turn's start (an
    interval of merged model speech holding each point, its end +1 ms); the continuation ends at
    min(that interval's end, this turn's end). `current_turn` is the turn's 0-based index, as
    the code writes it (so the released data's files read the same); `round` is its 1-based
    round number."""
    def speaking_at(t: float) -> tuple[float, float] | None:
        for iv in model_speech:
            if iv[0] <= t <= iv[1] + 1e-3:
                return iv
        return None

    out = []
    for k in range(1, len(turns)):
        prev, cur = turns[k - 1], turns[k]
        at_prev, at_cur = speaking_at(prev.end), speaking_at(cur.start)
        if at_prev is not None and at_cur is not None:
            end = min(at_cur[1], cur.end)
            if cur.start < end:
                out.append({"round": k + 1, "current_turn": k, "start_time_of_continuation_user_turn": round(cur.start, decimals),
                            "end_time_of_continuation_response": round(end, decimals)})
    return out


def finite(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
