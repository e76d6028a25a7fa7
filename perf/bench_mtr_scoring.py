"""Benchmark: `aggregator score --benchmark mtr` scoring of 200 ten-round conversational-feature dialogues from
cached (already transcribed) transcripts.

    python perf/bench_mtr_scoring.py [--dialogues 200] [--rounds 10] [--work DIR] [--repeat 3]

It writes a synthetic tree (benchmarks/mtr/README.md): 50 dialogues each of smooth turn-taking,
interruption, pause handling and the S+I+P+B mix, each round with a model reply of 8-30 words
(word-timestamped segments of up to 10 words, deterministic pseudo-random timing, some rounds
talking over the user, some silent). Then it times, best of --repeat:

  load    reading and validating every encoding.json and transcript.json
  score   both columns for every round and the per-round / cumulative tables
  total   score_tree (load + score), what `aggregator score --benchmark mtr` does before writing

The target (issue 9) is segmenting and scoring under 10 s on 2 cores; this measures the scoring
part only (segmenting is the ASR/turn segmentation upstream of the tree).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import tempfile
import time
from pathlib import Path

from duplexeval_mtr.score.encodings import load_tree
from duplexeval_mtr.score.score import score_dialogues, score_tree

SETS = (("single_smooth", "smooth"), ("single_interruption", "interruption"), ("single_pause", "pause"),
        ("mix_sipb", "S+I+P+B"))


def _words(rng: random.Random, start: float, n: int) -> list[dict]:
    out, t = [], start
    for _ in range(n):
        d = round(rng.uniform(0.15, 0.5), 3)
        out.append({"start": round(t, 3), "end": round(t + d, 3), "text": "word"})
        t += d + round(rng.uniform(0.02, 0.3), 3)
    return out


def _segments(rng: random.Random, start: float, n_words: int) -> list[dict]:
    segs, t = [], start
    while n_words > 0:
        k = min(n_words, rng.randint(3, 10))
        ws = _words(rng, t, k)
        segs.append({"start": ws[0]["start"], "end": ws[-1]["end"], "text": " ".join(w["text"] for w in ws),
                     "words": ws})
        t = ws[-1]["end"] + rng.uniform(0.1, 0.8)
        n_words -= k
    return segs


def _round(rng: random.Random, set_: str, k: int) -> tuple[dict, dict]:
    o = 40.0 * (k - 1)
    feats = {"smooth": "smooth-turntaking", "interruption": "interruption", "pause": "pause-handling"}
    if set_ == "S+I+P+B":
        parts = ["interruption" if k % 2 == 0 else "smooth-turntaking"]
        if k % 3 == 0:
            parts.append("pause-handling")
        if k % 2 == 1:
            parts.append("background")
        scenario = "_".join(parts)
    else:
        scenario = feats[set_]
    ts = {"user_start": o + 1.0, "user_end": o + 6.0, "model_start": o + 6.0, "model_end": o + 30.0}
    if "interruption" in scenario:
        ts.update(interruption_start=o + 12.0, interruption_end=o + 15.0, model_start=o + 15.0)
    if "pause-handling" in scenario:
        ts.update(pause_start=o + 3.0, pause_end=o + 4.5)
    if "background" in scenario:
        ts.update(background_start=o + 9.0, background_end=o + 11.0)
    end = ts["interruption_end"] if "interruption" in scenario else ts["user_end"]
    segs = []
    if "interruption" in scenario:
        segs += _segments(rng, o + 6.3, 12)
    roll = rng.random()
    if roll < 0.1:
        pass  # silent
    elif roll < 0.25:
        segs += _segments(rng, end - 2.0, rng.randint(8, 30))  # talks over the end of the turn
    else:
        segs += _segments(rng, end + rng.uniform(0.2, 2.0), rng.randint(8, 30))
    segs.sort(key=lambda s: s["start"])
    return ({"round": k, "scenario": scenario, "timestamps": ts}, {"round": k, "segments": segs})


def build(root: Path, dialogues: int, rounds: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    for i in range(dialogues):
        subset, set_ = SETS[i % len(SETS)]
        did = str(i // len(SETS) + 1)
        d = root / subset / did
        d.mkdir(parents=True)
        enc, tr = zip(*(_round(rng, set_, k) for k in range(1, rounds + 1)))
        (d / "encoding.json").write_text(json.dumps({"dialogue_id": did, "task": "features", "set": set_,
                                                     "rounds": list(enc)}))
        (d / "transcript.json").write_text(json.dumps({"dialogue_id": did, "rounds": list(tr)}))


def best(fn, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dialogues", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--work", type=Path, default=None)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="mtr-bench-"))
    tree = work / "tree"
    if tree.exists():
        shutil.rmtree(tree)
    build(tree, args.dialogues, args.rounds)
    t_load, (dialogues, invalid) = best(lambda: load_tree(tree), args.repeat)
    assert not invalid, invalid
    t_score, (metrics, rows) = best(lambda: score_dialogues(dialogues, invalid), args.repeat)
    t_total, _ = best(lambda: score_tree(tree), args.repeat)
    n_rounds = sum(len(d.rounds) for d in dialogues)
    n_segs = sum(len(s) for d in dialogues for s in d.segments.values())
    print(f"{len(dialogues)} dialogues, {n_rounds} rounds, {n_segs} segments")
    print(f"load   {t_load:7.3f} s")
    print(f"score  {t_score:7.3f} s")
    print(f"total  {t_total:7.3f} s   (target: under 10 s on 2 cores, segmenting included)")
    for name, s in metrics["subsets"].items():
        r = s["ranges"].get("1-10") or {}
        print(f"  {name:20s} paper {r.get('paper', {}).get('success', {}).get('value')}  "
              f"code {r.get('code', {}).get('success', {}).get('value')}")
    if args.work is None:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
