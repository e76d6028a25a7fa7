"""Synthetic two-channel dialogues with known user turns (constructed transcripts, no audio).

A dialogue of `rounds` rounds: each user turn is 1-3 speech fragments of 1-3 s separated by
pauses of 0.4-1.6 s (sometimes with a short model backchannel inside one), then the model answers after
0.3-1.0 s for 2-6 s; sometimes the user backchannels (0.3-0.7 s) inside the answer, and
sometimes the next user turn starts while the model is still talking (an interruption: the
model stops 0.5-1 s later). Words are 0.2-0.4 s with 0.05 s gaps; VAD segments are the
fragments padded by 30 ms. The truth is each turn's first fragment start and last fragment end.

With `probs`, each channel also has `vad_probs` as Silero gives them, modelled: 1.0 in every
0.032 s window that holds speech, then 0.9, 0.6 and 0.3 in the next three (the model's lag
after the speech ends, a slow case), 0.01 elsewhere; and its `vad_segments` are what Silero
makes of those probabilities (duplexeval_common.vad.segments_from_probs: threshold 0.5, lower
threshold 0.35, 30 ms pad), so they end 94-126 ms after the speech.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

VOCAB = ("well", "so", "tell", "me", "about", "the", "weather", "today", "and", "what", "should", "i",
         "cook", "for", "dinner", "maybe", "something", "with", "rice", "please")


def _words(rng: random.Random, start: float, end: float, last_stop: bool) -> list[dict]:
    out, t = [], start
    while t < end - 0.15:
        d = min(rng.uniform(0.2, 0.4), end - t)
        out.append({"text": rng.choice(VOCAB), "start": round(t, 3), "end": round(t + d, 3)})
        t += d + 0.05
    if not out:
        out.append({"text": rng.choice(VOCAB), "start": round(start, 3), "end": round(end, 3)})
    out[-1]["end"] = round(end, 3)
    if last_stop:
        out[-1]["text"] += "."
    return out


WINDOW_S = 512 / 16000


def vad_of(frags: list[tuple[float, float]], duration: float) -> tuple[dict, list[dict]]:
    """(vad_probs, vad_segments) of speech at `frags` (see the module)."""
    from duplexeval_common.vad import segments_from_probs
    n = int(round(duration * 16000))
    windows = -(-n // 512)
    values = [0.01] * windows
    for s, e in frags:
        first, last = int(s // WINDOW_S), min(windows - 1, int(e // WINDOW_S))
        for j in range(first, last + 1):
            values[j] = 1.0
        for j, p in ((last + 1, 0.9), (last + 2, 0.6), (last + 3, 0.3)):
            if j < windows and values[j] < p:
                values[j] = p
    segs = segments_from_probs(values, n, threshold=0.5, min_speech_duration_ms=250,
                               min_silence_duration_ms=100, speech_pad_ms=30)
    return ({"window_s": WINDOW_S, "threshold": 0.5, "values": values},
            [{"start": round(x["start"] / 16000, 3), "end": round(x["end"] / 16000, 3)} for x in segs])


def dialogue(seed: int, rounds: int = 10, start: float | None = None, probs: bool = False) -> dict:
    """{"user": user.json, "model": model.json, "turns": [(start, end)], "duration": s}; the
    first user turn starts at 1 s + (seed mod 50) x 0.1 s unless `start` is given."""
    start = 1.0 + (seed % 50) * 0.1 if start is None else start
    rng = random.Random(seed)
    user_frags, model_frags, truth = [], [], []
    t = start
    for r in range(rounds):
        n = rng.choice((1, 1, 2, 3))
        frags = []
        for k in range(n):
            d = rng.uniform(1.0, 3.0)
            frags.append((t, t + d))
            t += d
            if k + 1 < n:
                pause = rng.uniform(0.4, 1.6)
                if pause > 1.0 and rng.random() < 0.4:  # the model backchannels in the pause
                    model_frags.append((t + 0.2, t + 0.6, True))
                t += pause
        truth.append((round(frags[0][0], 2), round(frags[-1][1], 2)))
        user_frags += [(s, e, False) for s, e in frags]
        resp_start = t + rng.uniform(0.3, 1.0)
        resp_len = rng.uniform(2.0, 6.0)
        interrupted = r + 1 < rounds and rng.random() < 0.25
        if interrupted:
            nxt = resp_start + resp_len * rng.uniform(0.4, 0.7)
            model_frags.append((resp_start, nxt + rng.uniform(0.5, 1.0), False))
            answer_end, t = nxt, nxt
        else:
            model_frags.append((resp_start, resp_start + resp_len, False))
            answer_end, t = resp_start + resp_len, resp_start + resp_len + rng.uniform(0.4, 1.5)
        if rng.random() < 0.3 and answer_end - resp_start > 2.5:  # a user backchannel in the answer
            b = resp_start + rng.uniform(0.5, answer_end - resp_start - 1.5)
            user_frags.append((b, b + rng.uniform(0.3, 0.7), True))
    duration = round(max(e for _, e, _ in user_frags + model_frags) + 2.0, 2)

    def channel(frags, role):
        frags = sorted(frags)
        words = [w for s, e, bc in frags for w in _words(rng, s, e, not bc)]
        out = {"role": role, "channel": "left" if role == "user" else "right", "duration_s": duration,
               "words": words,
               "vad_segments": [{"start": round(max(0.0, s - 0.03), 3), "end": round(e + 0.03, 3)}
                                for s, e, _ in frags]}
        if probs:
            out["vad_probs"], out["vad_segments"] = vad_of([(s, e) for s, e, _ in frags], duration)
        return out
    return {"user": channel(user_frags, "user"), "model": channel(model_frags, "model"),
            "turns": truth, "duration": duration}


def write(root: Path, dialogues: dict[str, dict]) -> Path:
    """A stage folder (no manifest): samples/<subset>/<id>/{user,model}.json."""
    for key, d in dialogues.items():
        folder = root / "samples" / key
        folder.mkdir(parents=True, exist_ok=True)
        for role in ("user", "model"):
            if d.get(role) is not None:
                (folder / f"{role}.json").write_text(json.dumps(d[role]) if not isinstance(d[role], str)
                                                     else d[role])
    return root


def scripted_runs(truth: list[tuple[float, float]], seed: int, runs: int = 6) -> list[list[dict]]:
    """Six LLM segmentations of a dialogue whose true turns are `truth`, as a careful but noisy
    LLM might give them: each turn jittered by up to 60 ms, one in ten missing, in run 5 a
    spurious extra turn (a single vote), and in the last run the first two turns given as one
    (it joins the first turn's cluster, where the median ignores it)."""
    rng = random.Random(seed)
    out = []
    for r in range(runs):
        turns = []
        for k, (s, e) in enumerate(truth):
            if rng.random() < 0.1:
                continue
            turns.append({"start": round(s + rng.uniform(-0.06, 0.06), 2),
                          "end": round(e + rng.uniform(-0.06, 0.06), 2)})
        if r == runs - 1 and len(truth) > 2:
            a, b = truth[0], truth[1]
            turns = [{"start": a[0], "end": b[1]}] + turns[2:]
        if r == 4:
            turns.append({"start": round(truth[-1][1] + 0.5, 2), "end": round(truth[-1][1] + 1.0, 2)})
        out.append(turns)
    return out
