"""Benchmark: segmenting and scoring all 200 conversational-feature dialogues of mtr-synth from
cached transcripts (issue 9's target: under 10 s on 2 cores).

    python perf/bench_mtr_segment_score.py [--work DIR] [--repeat 3] [--rule gap-v2|gap-v1]

The transcripts stand for what the asr stages cached: each dialogue of benchmarks/mtr/datasets/mtr-synth's eight
feature subsets is laid out by the dataset's own layout (duplexeval_mtr.dataset.layout.layout) with
modelled line lengths (0.3 s per word + 0.2 s; no audio is synthesized), and every placed line
becomes evenly spaced word timestamps: the user channel (user turns and background speech) and
the model channel (the GT responses) as the asr-aligner's dialogue mode writes them (user.json,
model.json), and per round the model's words from the round's start on, as the round's ASR
writes them. They are written once, before the clock starts. Then, best of --repeat:

  segment  the turn-segmenter stage (offline rule, the default) over the 200 two-channel dialogues
  score    `aggregator score --benchmark mtr` on the 200 dialogues' scoring tree (load, both columns, tables, writes)

It also reports how many of the dialogues' user turns the segmenter found within 100 ms (start
and end), with the offline rule of --rule (gap-v2, the default). The feature dialogues put
background speech in the user channel inside the model's response, which gap-v1 takes for a user
turn, so this is a count, not a check. These transcripts are modelled (no audio, no VAD); through
the real ASR and VAD, perf/mtr_turn_segmentation.py measures the segmenter's errors.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

from duplexeval_mtr.score.score import score_outputs
from duplexeval_common.ipus import segments_from_words
from duplexeval_common.jsonio import atomic_write_text, dumps, read_json
from duplexeval_segmenter.stage import make_stage
from duplexeval_mtr.dataset import layout as mtr_layout
from duplexeval_mtr.dataset import script as mtr_script
from duplexeval_tts.voices import parse_specs

ROOT = Path(__file__).resolve().parents[1] / "benchmarks" / "mtr"
SUBSETS = ("smooth_features", "interruption_features", "pause_features", "background_features",
           "mix_s_features", "mix_si_features", "mix_sip_features", "mix_sipb_features")
WORD_S, LINE_S = 0.3, 0.2


def words_of(text: str, start: float, end: float) -> list[dict]:
    """Evenly spaced word timestamps over [start, end] (80% speech, 20% gap per word)."""
    ws = text.split() or ["uh"]
    step = (end - start) / len(ws)
    return [{"text": w, "start": round(start + i * step, 3), "end": round(start + (i + 0.8) * step, 3),
             "probability": 1.0} for i, w in enumerate(ws)]


def channel(role: str, words: list[dict], duration: float) -> dict:
    return {"backend": "modelled", "model": "none", "model_sha256": None, "settings": {},
            "text": " ".join(w["text"] for w in words), "offset_s": 0.0, "language": "en",
            "channel": "left" if role == "user" else "right", "words": words, "role": role,
            "duration_s": duration}


def prepare(work: Path) -> dict:
    """Write the cached transcripts: the segmenter's input stage and the scoring tree."""
    seg_in, tree = work / "asr", work / "tree"
    truth, n = {}, 0
    for subset in SUBSETS:
        script = mtr_script.load(ROOT / "datasets" / "mtr-synth" / f"{subset}.json", parse_specs)
        for entry in script.dialogues:
            d = mtr_script.parse_dialogue(script, entry)
            durations = {p.key: WORD_S * len(p.text.split()) + LINE_S for p in mtr_layout.pieces(d)}
            lay = mtr_layout.layout(d, durations)
            did = d["id"]
            placed = [(p, words_of(p.text, p.start, p.end)) for p in lay.placements]
            user = sorted((w for p, ws in placed if p.channel == "user" for w in ws), key=lambda w: w["start"])
            model = sorted((w for p, ws in placed if p.channel == "model" for w in ws), key=lambda w: w["start"])
            folder = seg_in / "samples" / subset / did
            folder.mkdir(parents=True)
            atomic_write_text(folder / "user.json", dumps(channel("user", user, lay.duration_s)))
            atomic_write_text(folder / "model.json", dumps(channel("model", model, lay.duration_s)))
            truth[f"{subset}/{did}"] = [(w.fields()["user_lines"][0]["start"], w.fields()["user_lines"][-1]["end"])
                                        for w in lay.windows]
            rounds = []
            for w in lay.windows:
                f = w.fields()
                mine = [x for x in model if f["start_s"] <= x["start"] < f["end_s"]]
                rounds.append({"round": w.round, "segments": segments_from_words(mine)})
            out = tree / subset / did
            out.mkdir(parents=True)
            enc = {"dialogue_id": did, "task": "features", "set": script.set,
                   "rounds": [w.encoding for w in lay.windows]}
            atomic_write_text(out / "encoding.json", dumps(enc))
            atomic_write_text(out / "transcript.json", dumps({"dialogue_id": did, "rounds": rounds}))
            n += 1
    return {"dialogues": n, "truth": truth}


def found_within(truth: dict, seg_out: Path, tol: float = 0.1) -> tuple[int, int]:
    hit = total = 0
    for key, turns in truth.items():
        got = read_json(seg_out / "samples" / key / "segmentation.json")["turns"]
        for a, b in turns:
            total += 1
            hit += any(abs(t["start"] - a) <= tol and abs(t["end"] - b) <= tol for t in got)
    return hit, total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, default=None)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rule", choices=("gap-v2", "gap-v1"), default="gap-v2")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="mtr-segscore-")) if args.work is None else args.work
    work.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    prep = prepare(work)
    prep_s = time.perf_counter() - t
    seg_times, score_times = [], []
    for i in range(args.repeat):
        out = work / f"segment-{i}"
        t = time.perf_counter()
        config = {"offline": {"rule": args.rule}}
        rc = make_stage(config).run([work / "asr"], out, config)
        seg_times.append(time.perf_counter() - t)
        assert rc == 0, f"segmenter exit {rc}"
        t = time.perf_counter()
        metrics, files = score_outputs(work / "tree")
        dest = work / f"score-{i}"
        dest.mkdir()
        for name, text in files.items():
            atomic_write_text(dest / name, text)
        score_times.append(time.perf_counter() - t)
    hit, total = found_within(prep["truth"], work / "segment-0")
    rounds = sum(s["rounds_observed"] for s in metrics["subsets"].values())
    result = {"rule": args.rule, "dialogues": prep["dialogues"], "rounds": rounds, "prepare_s": round(prep_s, 2),
              "segment_s": round(min(seg_times), 2), "score_s": round(min(score_times), 2),
              "segment_and_score_s": round(min(seg_times) + min(score_times), 2),
              "user_turns_found_within_100ms": f"{hit}/{total}"}
    print(json.dumps(result, indent=1))
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
