"""Measurement: how close the offline turn segmenter comes to the scripted user turns of the MTR
datasets, through the real dialogue ASR and VAD (issue 22, item 11).

    .venv/bin/python perf/mtr_turn_segmentation.py [--dataset mtr-mini] [--dataset mtr-synth]
        [--work DIR] [--jobs N] [--limit N] [--asr faster-whisper|none] [--rules gap-v1,gap-v2]
        [--json FILE]

For each dataset (benchmarks/mtr/datasets/<name>) it takes the dialogue-quality dialogues (what the
pipeline segments) and the conversational-feature dialogues (a harder case: interruptions, pauses
and background speech on the user channel), and for each dialogue:

1. builds its two channels with the benchmark's dataset builder, as the dataset stage does
   (duplexeval_mtr.dataset.build.MtrStage: the default voices, user piper joe, model flite slt,
   background flite kal at -10 dB), written to and read back from a 16-bit stereo WAV as
   dialogue.wav is;
2. transcribes both channels with the asr-aligner's dialogue mode
   (duplexeval_asr.dialogue.channel_record: faster-whisper tiny.en and Silero VAD with the
   stage's default settings), giving user.json and model.json. With --asr none the ASR is left
   out (no words, no segments) and only Silero runs: the offline segmenter reads a channel's
   words only when it has no VAD segments, so its turns are the same, at a fifth of the cost;
3. runs the turn-segmenter stage (offline segmenter) on them once per rule of --rules.

The truth is the layout's: a dialogue-quality user turn is each user line that is not a
backchannel; a feature dialogue's user turn of round k spans its first user line's start to its
last line's end (a pause inside it included). Background lines and user backchannels are speech on
the user channel that is no turn. Each true turn is matched with the segmented turn that overlaps
it most; per rule, dataset and kind of dialogue the script prints the end error (segmented end -
true end, s; positive is late) and the start error (median, p90 and max of the signed error, and
the share within 100 ms), the turns found within 100 ms at both ends, the background lines and
backchannels that lie (in part) inside a segmented turn, the segmented turns that overlap no true
turn, and the true turns no segmented turn overlaps.

Steps 1-2 are the slow part (about 12 s per dialogue with the ASR on 2 cores, 2-3 s without);
their files are kept in --work (default .build/mtr-turn-segmentation/<dataset>[-limit<N>][-asr-none])
and reused, so a second run only segments and compares. A dialogue the dataset builder refuses
(its layout does not fit) is left out and named under the table. Everything is deterministic:
the same inputs give the same numbers.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DATASETS = REPO / "benchmarks" / "mtr" / "datasets"
FEATURES = ("smooth_features", "interruption_features", "pause_features", "background_features",
            "mix_s_features", "mix_si_features", "mix_sip_features", "mix_sipb_features")
DQ = ("synthetic_dialogue_quality",)
RULES = ("gap-v1", "gap-v2")
TOL = 0.1
SR = 16000

_WORKER: dict = {}


# -- steps 1 and 2: the dialogue ASR's files, made once ----------------------------------------

def _stage(dataset: str, subsets: list[str], limit: int | None):
    from duplexeval_common.samples import Inputs
    from duplexeval_mtr.dataset.build import MtrStage
    from duplexeval_tts.synth import SYNTH
    st = MtrStage({"jobs": 1, "subsets": subsets, "limit": limit}, SYNTH)
    st.select(Inputs([DATASETS / dataset]), {})
    return st


class NoAsr:
    """--asr none: no words and no segments (what the offline segmenter's turns do not read
    when a channel has VAD segments)."""
    name, model, model_sha256, settings = "none", "none", None, {}

    def transcribe(self, audio):
        return []

    def transcribe_segments(self, audio):
        return [], []


def _init(dataset: str, subsets: list[str], limit: int | None, asr: str) -> None:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from duplexeval_asr.backends import BACKENDS
    from duplexeval_asr.vad import SileroVad
    _WORKER["stage"] = _stage(dataset, subsets, limit)
    _WORKER["backend"] = BACKENDS.load("faster-whisper")() if asr == "faster-whisper" else NoAsr()
    _WORKER["vad"] = SileroVad()


def truth_of(built, task: str) -> dict:
    """{"turns": [[start, end]], "other": [[start, end, what]]}: the user channel's turns and its
    speech that is no turn (background lines, backchannels), from the layout."""
    lay = built.layout
    other = [[p.start, p.end, "background" if p.role == "background" else "backchannel"]
             for p in lay.placements if p.role == "background" or (p.role == "user" and p.backchannel)]
    if task == "dialogue_quality":
        turns = [[p.start, p.end] for p in lay.placements if p.role == "user" and not p.backchannel]
    else:
        turns = [[w.fields()["user_lines"][0]["start"], w.fields()["user_lines"][-1]["end"]] for w in lay.windows]
    return {"turns": turns, "other": other, "duration_s": lay.duration_s}


def _transcribe(index: int, out: str) -> str:
    from duplexeval_asr.dialogue import ROLES, channel_record
    from duplexeval_common import wavio
    from duplexeval_common.errors import DuplexEvalError
    from duplexeval_common.jsonio import atomic_write_text, dumps
    st = _WORKER["stage"]
    unit = st.units[index]
    key = f"{unit.script.subset}/{unit.dialogue_id}"
    try:
        built = st.dialogue(unit)
    except DuplexEvalError as exc:   # the dataset stage fails this dialogue's samples the same way
        t = Path(out) / "failed" / f"{key}.txt"
        t.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(t, f"{exc}\n")
        return f"{key}: not built: {exc}"
    folder = Path(out) / "asr" / "samples" / unit.script.subset / unit.dialogue_id
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:  # dialogue.wav as the dataset stage writes it
        wav = Path(tmp) / "dialogue.wav"
        wavio.write_wav(wav, np.stack([built.user, built.model], axis=1), SR)
        data, sr = wavio.read_wav(wav, channels=None, mono=False)
    assert sr == SR
    for role, index_, side in ROLES:
        rec = channel_record(_WORKER["backend"], _WORKER["vad"], np.ascontiguousarray(data[:, index_]), role, side)
        atomic_write_text(folder / f"{role}.json", dumps(rec))
    t = Path(out) / "truth" / unit.script.subset / f"{unit.dialogue_id}.json"
    t.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(t, dumps(truth_of(built, unit.script.task)))
    return key


def prepare(dataset: str, work: Path, jobs: int, limit: int | None, asr: str) -> tuple[list[str], dict[str, str]]:
    """Make (or reuse) every dialogue's user.json, model.json and truth; returns the keys of the
    dialogues built and {key: why} of those the dataset builder refuses."""
    subsets = [s for s in DQ + FEATURES if (DATASETS / dataset / f"{s}.json").is_file()]
    st = _stage(dataset, subsets, limit)
    keys = [f"{u.script.subset}/{u.dialogue_id}" for u in st.units]
    todo = [i for i, k in enumerate(keys)
            if not (work / "failed" / f"{k}.txt").is_file()
            and (not all((work / "asr" / "samples" / k / f"{r}.json").is_file() for r in ("user", "model"))
                 or not (work / "truth" / f"{k}.json").is_file())]
    t0 = time.monotonic()
    if todo:
        print(f"[{dataset}] synthesizing and transcribing {len(todo)} of {len(keys)} dialogues "
              f"({jobs} process(es))", file=sys.stderr, flush=True)
        if jobs <= 1:
            _init(dataset, subsets, limit, asr)
            for n, i in enumerate(todo, 1):
                k = _transcribe(i, str(work))
                print(f"[{dataset}] {n}/{len(todo)} {k} {time.monotonic() - t0:.0f}s", file=sys.stderr, flush=True)
        else:
            with ProcessPoolExecutor(jobs, mp_context=get_context("spawn"), initializer=_init,
                                     initargs=(dataset, subsets, limit, asr)) as ex:
                futs = [ex.submit(_transcribe, i, str(work)) for i in todo]
                for n, f in enumerate(as_completed(futs), 1):
                    print(f"[{dataset}] {n}/{len(todo)} {f.result()} {time.monotonic() - t0:.0f}s",
                          file=sys.stderr, flush=True)
    failed = {k: (work / "failed" / f"{k}.txt").read_text().strip() for k in keys
              if (work / "failed" / f"{k}.txt").is_file()}
    return [k for k in keys if k not in failed], failed


# -- step 3 and the comparison -----------------------------------------------------------------

def segment(work: Path, keys: list[str], rule: str) -> dict[str, list[tuple[float, float]]]:
    """The offline segmenter's turns of each dialogue: the turn-segmenter stage on work/asr."""
    from duplexeval_common.jsonio import read_json
    from duplexeval_segmenter.stage import make_stage
    out = work / f"segment-{rule}"
    shutil.rmtree(out, ignore_errors=True)
    config = {"offline": {"rule": rule}}
    make_stage(config).run([work / "asr"], out, config, allow_failures=True)
    got = {}
    for k in keys:
        p = out / "samples" / k / "segmentation.json"
        got[k] = [(t["start"], t["end"]) for t in read_json(p)["turns"]] if p.is_file() else []
    return got


def _overlap(a: tuple[float, float], b: tuple[float, float]) -> float:
    return max(0.0, min(a[1], b[1]) - max(a[0], b[0]))


def compare(truths: dict[str, dict], got: dict[str, list]) -> dict:
    ends, starts, both = [], [], 0
    turns = missed = extra = 0
    other = {"background": [0, 0], "backchannel": [0, 0]}
    for k, t in truths.items():
        seg = got[k]
        for s, e in t["turns"]:
            turns += 1
            best = max(seg, key=lambda g: _overlap(g, (s, e)), default=None)
            if best is None or _overlap(best, (s, e)) <= 0:
                missed += 1
                continue
            ends.append(best[1] - e)
            starts.append(best[0] - s)
            both += abs(best[0] - s) <= TOL + 1e-9 and abs(best[1] - e) <= TOL + 1e-9
        extra += sum(1 for g in seg if not any(_overlap(g, (s, e)) > 0 for s, e in t["turns"]))
        for s, e, what in t["other"]:
            other[what][1] += 1
            other[what][0] += any(_overlap(g, (s, e)) > 0 for g in seg)
    return {"dialogues": len(truths), "turns": turns, "found_within_100ms": both,
            "end_error_s": _dist(ends), "start_error_s": _dist(starts), "missed": missed,
            "extra_turns": extra,
            "background_in_turns": other["background"], "backchannels_in_turns": other["backchannel"]}


def _dist(xs: list[float]) -> dict:
    if not xs:
        return {"n": 0}
    a = np.array(xs)
    q = lambda p: float(np.sort(a)[min(len(a) - 1, int(np.ceil(p * len(a))) - 1)])  # noqa: E731 (ceil(qN))
    return {"n": len(a), "min": round(float(a.min()), 3), "median": round(q(0.5), 3), "p90": round(q(0.9), 3),
            "max": round(float(a.max()), 3),
            "within_100ms": round(float(np.mean(np.abs(a) <= TOL + 1e-9)), 4)}


def measure(dataset: str, work: Path, jobs: int, limit: int | None, rules: list[str], asr: str) -> dict:
    from duplexeval_common.jsonio import read_json
    keys, failed = prepare(dataset, work, jobs, limit, asr)
    truths = {k: read_json(work / "truth" / f"{k}.json") for k in keys}
    result = {"not_built": failed}
    for rule in rules:
        got = segment(work, keys, rule)
        groups = {"dialogue_quality": [k for k in keys if k.split("/")[0] in DQ],
                  "features": [k for k in keys if k.split("/")[0] in FEATURES]}
        result[rule] = {g: compare({k: truths[k] for k in ks}, got) for g, ks in groups.items() if ks}
    return result


def table(results: dict) -> str:
    """The results as a Markdown table (errors in ms), then the dialogues left out."""
    lines = ["| dataset | dialogues | rule | user turns | end error (ms): min / median / p90 / max "
             "| ends within 100 ms | start error (ms): min / median / p90 / max | both ends within 100 ms "
             "| background lines in a turn | backchannels in a turn | extra turns | missed turns |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    notes = []

    def ms(d: dict) -> str:
        return " / ".join(f"{1000 * d[x]:+.0f}" for x in ("min", "median", "p90", "max")) if d["n"] else "-"

    def share(pair: list) -> str:
        return f"{pair[0]} of {pair[1]}" if pair[1] else "-"

    for dataset, by_rule in results.items():
        for k, why in by_rule["not_built"].items():
            notes.append(f"{dataset}: {k} left out: {why}")
        for rule, groups in by_rule.items():
            if rule == "not_built":
                continue
            for g, r in groups.items():
                e = r["end_error_s"]
                lines.append(f"| {dataset} | {r['dialogues']} {g.replace('_', ' ')} | {rule} | {r['turns']} | {ms(e)} "
                             f"| {100 * e.get('within_100ms', 0):.1f}% | {ms(r['start_error_s'])} "
                             f"| {r['found_within_100ms']} | {share(r['background_in_turns'])} "
                             f"| {share(r['backchannels_in_turns'])} | {r['extra_turns']} | {r['missed']} |")
    return "\n".join(lines + notes)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", action="append", choices=("mtr-mini", "mtr-synth"))
    ap.add_argument("--work", type=Path, default=REPO / ".build" / "mtr-turn-segmentation")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--limit", type=int, default=None, help="at most this many dialogues per subset")
    ap.add_argument("--asr", choices=("faster-whisper", "none"), default="faster-whisper")
    ap.add_argument("--rules", default=",".join(RULES))
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    rules = [r for r in args.rules.split(",") if r]
    results = {}
    for dataset in args.dataset or ["mtr-mini"]:
        work = args.work / (dataset + ("" if args.limit is None else f"-limit{args.limit}")
                            + ("" if args.asr == "faster-whisper" else f"-asr-{args.asr}"))
        work.mkdir(parents=True, exist_ok=True)
        results[dataset] = measure(dataset, work, args.jobs, args.limit, rules, args.asr)
    print(table(results))
    if args.json:
        from duplexeval_common.jsonio import atomic_write_text, dumps
        atomic_write_text(args.json, dumps(results))


if __name__ == "__main__":
    main()
