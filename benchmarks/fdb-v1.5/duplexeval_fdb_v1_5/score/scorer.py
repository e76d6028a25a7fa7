"""Score a Full-Duplex-Bench v1.5 tree: load its samples, check them, run the VAD (cached), and
compute both columns per task (score_tree). The aggregate stage (stage.py) scores the tree it
merges from its input stages with this; `make score` scores a tree made elsewhere (tree_cli.py).

A tree is upstream's layout: `<subset>/<id>/` with input.wav, clean_input.wav and metadata.json
(the dataset), output.wav and clean_output.wav (the two runs), output.json and clean_output.json
(their ASR, official format), and, when judged, content_tag.json (the behaviour label). A
`manifest.json` at the root (a duplexeval dataset's) gives each subset's task; otherwise the
subset's name is its task (the official names). input.json and clean_input.json are the judge's
inputs, not the scorer's.

Per sample, the checks (score/checks.py; each a one-line InputError naming the sample): both
inputs and both outputs present, each clean twin of its file's rate, channel count and length,
metadata.json's window inside the audio and not reversed, the transcripts readable. Strict (the
default) stops at the first problem; exclude_invalid (the pipeline stage) makes such a sample
ineligible with "invalid:<code>", listed with its problem, and the others are scored.

Official column (equal to upstream's scripts on the same files, tests/golden/): per subset the
behaviour label ratios over the samples with content_tag.json (eval_behavior.py), the latency
lists of every sample (get_timing.py) with our aggregation of them, the speech-adaptation
features (eval_general_before_after.py) and their trimmed means, and the paired t-tests over the
C_RESPOND samples (significance_test.py). Unified column: score/unified.py's rows and summary,
the behaviour rates with Wilson intervals, and the clean-vs-overlap adaptation differences.
"""

from __future__ import annotations

import json
import math
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import soundfile as sf

from duplexeval_common.errors import InputError
from duplexeval_common.jsonio import atomic_write_many, dumps, jsonl_text
from duplexeval_common.optional import version
from duplexeval_common.samples import ScoredSample, id_sort_key, inside
from duplexeval_common.vad import FEED_OFFICIAL, SR, model_info, unified_feed
from duplexeval_common.vadcache import Job, ProbStore, default_root, ensure, hash_files

from ..schemas import SCHEMAS
from ..tasks import TASKS, check_tasks, task_of
from . import adaptation, behavior, checks, significance, timing, unified, vad

DEFINITIONS = "fdb-v1.5-1"
BENCHMARK = "fdb-v1.5"
SAMPLE_FILES = ("input.wav", "clean_input.wav", "metadata.json", "output.wav", "clean_output.wav",
                "output.json", "clean_output.json", "input.json", "clean_input.json", "content_tag.json",
                "runner.json", "clean_runner.json")
STATUS_FILES = ("runner.json", "clean_runner.json")


@dataclass
class Sample(ScoredSample):
    invalid: tuple[str, str] | None = None
    rate: int = 0
    frames: int = 0
    window: tuple[float, float] | None = None
    words: list = field(default_factory=list)
    clean_words: list = field(default_factory=list)
    tag: dict | None = None

    @property
    def T_s(self) -> float:
        return self.frames / self.rate


# -- loading -----------------------------------------------------------------------------------

def _json(path: Path, key: str):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise InputError(key, f"{path.name} is not valid JSON ({str(exc)[:120]})", "bad-json") from None


def _chunks(path: Path, key: str) -> list:
    """An ASR file's words ({"text", "timestamp": [start, end]}): a list, as upstream reads it (a
    word without usable times is skipped where times are needed: score/adaptation.word_time)."""
    doc = _json(path, key)
    chunks = doc.get("chunks") if isinstance(doc, dict) else None
    if not isinstance(chunks, list):
        raise InputError(key, f"{path.name} has no chunks list (the official ASR format)", "bad-words")
    return chunks


def _info(path: Path, key: str) -> checks.AudioInfo:
    try:
        return checks.audio_info(path)
    except Exception as exc:  # soundfile raises several types for bad files
        raise InputError(key, f"{path.name} is not readable audio ({str(exc)[:120]})", "unreadable-audio") from None


def _subsets(tree: Path, tasks: dict[str, str] | None) -> dict[str, str]:
    """{subset: task}: the manifest's rows, then the user's --task, then the official names."""
    given: dict[str, str] = {}
    man = tree / "manifest.json"
    if man.is_file():
        doc = _json(man, "manifest.json")
        for r in doc.get("samples", []) if isinstance(doc, dict) else []:
            if isinstance(r, dict) and isinstance(r.get("subset"), str) and isinstance(r.get("task"), str):
                given.setdefault(r["subset"], r["task"])
    given.update(check_tasks(tasks))
    out = {}
    for d in sorted(p for p in tree.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))):
        task = given.get(d.name) or task_of(d.name)
        if task is not None:
            out[d.name] = task
    for sub, task in out.items():
        if task not in TASKS:
            raise InputError(sub, f"task {task!r} is not a Full-Duplex-Bench v1.5 task (one of {', '.join(TASKS)})")
    return out


def load_sample(s: Sample, roots: tuple) -> None:
    """The sample's files, checked (InputError for the first problem)."""
    key = s.key
    for name in SAMPLE_FILES:
        p = s.dir / name
        if p.exists() and not any(inside(r, p) for r in roots):
            raise InputError(key, f"{name} is a link leading out of the tree", "link-outside")
    for name in STATUS_FILES:
        if (s.dir / name).is_file():
            rec = _json(s.dir / name, key)
            if isinstance(rec, dict) and rec.get("status") == "ineligible":
                s.reasons.append(f"ineligible:{(rec.get('ineligible') or {}).get('code', 'runner')}")
    for name in ("input.wav", "output.wav"):
        checks.require(key, name, (s.dir / name).is_file())
    inp = _info(s.dir / "input.wav", key)
    cin = _info(s.dir / "clean_input.wav", key) if (s.dir / "clean_input.wav").is_file() else None
    checks.check_twin(key, "input.wav", inp, cin)
    if inp.channels != 1:
        raise InputError(key, f"input.wav has {inp.channels} channels; the benchmark's inputs are mono", "channels")
    out = _info(s.dir / "output.wav", key)
    if out.channels != 1:
        raise InputError(key, f"output.wav has {out.channels} channels; get_timing.py reads mono", "channels")
    cout = _info(s.dir / "clean_output.wav", key) if (s.dir / "clean_output.wav").is_file() else None
    checks.check_twin(key, "output.wav", out, cout)
    if out.frames * inp.rate != inp.frames * out.rate and abs(out.seconds - inp.seconds) > 1.0 / out.rate:
        raise InputError(key, f"output.wav lasts {out.seconds:.6f} s, input.wav {inp.seconds:.6f} s", "output-length")
    checks.require(key, "metadata.json", (s.dir / "metadata.json").is_file())
    s.window = checks.overlap_window(key, _json(s.dir / "metadata.json", key), inp.seconds)
    s.rate, s.frames = out.rate, out.frames
    for name in ("output.json", "clean_output.json"):
        checks.require(key, name, (s.dir / name).is_file(), "the speech-adaptation words")
    s.words = _chunks(s.dir / "output.json", key)
    s.clean_words = _chunks(s.dir / "clean_output.json", key)
    if (s.dir / "content_tag.json").is_file():
        tag = _json(s.dir / "content_tag.json", key)
        s.tag = tag if isinstance(tag, dict) else None


def load(tree: Path, failures: dict[str, str], exclude_invalid: bool, roots: tuple,
         tasks: dict[str, str] | None) -> dict[str, list[Sample]]:
    out: dict[str, list[Sample]] = {}
    for sub, task in _subsets(tree, tasks).items():
        ss = []
        for d in sorted((p for p in (tree / sub).iterdir() if p.is_dir() and not p.name.startswith(".")),
                        key=lambda p: id_sort_key(p.name)):
            s = Sample(sub, d.name, task, d)
            if s.key in failures:
                s.reasons.append(failures[s.key])
                ss.append(s)
                continue
            try:
                load_sample(s, roots)
            except InputError as exc:
                if not exclude_invalid:
                    raise
                code = getattr(exc, "code", None) or "bad-input"
                s.reasons = [f"invalid:{code}"]
                s.invalid = (f"invalid:{code}", exc.problem)
            ss.append(s)
        out[sub] = ss
    return out


# -- the VAD ----------------------------------------------------------------------------------

def _probabilities(samples: list[Sample], cache: Path, backend: str, workers: int, quiet: bool) -> dict:
    """{(file, "timing" | "unified"): (probs, n)} of input.wav (timing), output.wav and
    clean_output.wav (timing, unified) of every eligible sample. The unified feed goes through
    the VAD cache (duplexeval_common.vad.unified_feed); so does the timing feed of a 16 kHz mono
    file (then the same samples); another file's timing feed, upstream's torchaudio resampling
    (vad.timing_feed), is computed here."""
    jobs, here = [], []
    for s in samples:
        if not s.eligible:
            continue
        for name in ("input.wav", "output.wav", "clean_output.wav"):
            p = s.dir / name
            i = checks.audio_info(p)
            uni = unified_feed(i.rate, i.channels)
            if name != "input.wav":
                jobs.append((p, "unified", uni, i.frames / i.rate))
            if i.rate == SR and i.channels == 1:
                jobs.append((p, "timing", FEED_OFFICIAL, i.frames / SR))
            else:
                here.append((p, i))
    shas = hash_files([p for p, _, _, _ in jobs], workers)
    got = ensure([Job(p, shas[p], feed, sec) for p, _, feed, sec in jobs], ProbStore(cache, backend), workers,
                 quiet) if jobs else {}
    out = {(p, use): got[(shas[p], feed)] for p, use, feed, _ in jobs}
    for p, i in here:
        data, rate = sf.read(str(p), dtype="float32", always_2d=True)
        feed = vad.timing_feed(data, rate, p.parent.name, p.name)
        out[(p, "timing")] = (vad.speech_probs(feed, backend), len(feed))
    return out


# -- the columns --------------------------------------------------------------------------------

def _adaptation_audio(path: Path) -> np.ndarray:
    data, rate = sf.read(str(path), dtype="float32", always_2d=True)
    return vad.adaptation_feed(data, rate)


def _sample_rows(ss: list[Sample], probs: dict, backend: str, adaptation_on: bool) -> list[dict]:
    rows = []
    for s in ss:
        row = {"sample_id": s.key, "subset": s.subset, "id": s.id, "task": s.task, "eligible": s.eligible,
               "reasons": list(s.reasons)}
        if s.invalid is not None:
            row["problem"] = s.invalid[1]
        if not s.eligible:
            rows.append(row)
            continue
        pin, nin = probs[(s.dir / "input.wav", "timing")]
        pout, nout = probs[(s.dir / "output.wav", "timing")]
        row["latency_intervals"] = timing.latency_intervals(vad.segments(pin, nin, vad.TIMING_SETTINGS),
                                                            vad.segments(pout, nout, vad.TIMING_SETTINGS))
        T_us = round(s.T_s * 1e6)
        segs = unified.segments_us(*probs[(s.dir / "output.wav", "unified")], T_us)
        csegs = unified.segments_us(*probs[(s.dir / "clean_output.wav", "unified")], T_us)
        row["unified"] = unified.row(s.window, s.T_s, segs, csegs)
        if adaptation_on:
            out, clean = _adaptation_audio(s.dir / "output.wav"), _adaptation_audio(s.dir / "clean_output.wav")
            probs_fn = lambda x: vad.speech_probs(x, backend)  # noqa: E731
            split = adaptation.sample_features(out, s.words, s.window[1], clean, s.clean_words, probs_fn,
                                               sample=s.key)
            row["general_split"] = split
            row["adaptation_window"] = adaptation.window_features(out, s.words, clean, s.clean_words,
                                                                  split["split_t"], probs_fn, sample=s.key)
        if s.tag is not None:
            row["content_tag"] = s.tag
            row["behaviour"] = behavior.label(s.tag)
        rows.append(row)
    return rows


def _finite(x):
    """NaN and infinities as None (JSON has none of them)."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite(v) for v in x]
    return x


def subset_scores(task: str, ss: list[Sample], rows: list[dict], adaptation_on: bool) -> dict:
    elig = [r for r in rows if r["eligible"]]
    judged = {r["id"]: r["content_tag"] for r in elig if "content_tag" in r}
    official: dict = {
        "behaviour": behavior.official_ratios(judged) if judged else None,
        "timing": timing.summary({r["id"]: r["latency_intervals"] for r in elig}),
    }
    uni = unified.summary([{**r.get("unified", {}), "eligible": r["eligible"]} for r in rows])
    uni["behaviour"] = behavior.unified_rates({r["id"]: r.get("behaviour") for r in elig if "content_tag" in r},
                                              selected=len(rows)) if judged else None
    if adaptation_on:
        splits = [r["general_split"] for r in elig]
        official["adaptation"] = {"trimmed_means": adaptation.aggregate(splits),
                                  "clean_trimmed_means": adaptation.aggregate(splits, ("clean",))["clean"],
                                  "clean_label": "our addition: upstream aggregates pre and post only"}
        sig_rows = significance.rows({r["id"]: (r["general_split"], r.get("content_tag")) for r in elig})
        if sig_rows:
            results, skipped = significance.tests(sig_rows)
        else:  # upstream tests the C_RESPOND samples only
            results, skipped = [], [("all", "no sample labelled C_RESPOND (judged: "
                                             f"{sum(1 for r in elig if 'content_tag' in r)})")]
        official["significance"] = {"tests": results, "skipped": [list(x) for x in skipped]}
        uni["adaptation"] = {f: unified.adaptation_pairs([r["adaptation_window"] for r in elig], f)
                             for f in adaptation.FEATURES if f != "utmosv2" or adaptation.utmosv2_available()}
    invalid = [{"sample_id": s.key, "reason": s.invalid[0], "problem": s.invalid[1]} for s in ss if s.invalid]
    return _finite({"task": task, "n": len(ss), "official": official, "unified": uni, "invalid": invalid})


def build(tree: Path, cache_dir: Path | None = None, vad_backend: str = "onnx", jobs: int | None = None,
          failures: dict[str, str] | None = None, quiet: bool = False, *, exclude_invalid: bool = False,
          link_roots: tuple = (), tasks: dict[str, str] | None = None,
          adaptation_on: bool = True) -> tuple[dict, list[dict]]:
    """(metrics, rows) of a tree, writing nothing but the VAD cache."""
    tree = Path(tree)
    samples = load(tree, failures or {}, exclude_invalid, (tree, *link_roots), tasks)
    workers = jobs or os.cpu_count() or 1
    cache = Path(cache_dir) if cache_dir else default_root()
    probs = _probabilities([s for ss in samples.values() for s in ss], cache, vad_backend, workers, quiet)
    metrics = {"benchmark": BENCHMARK, "definitions": DEFINITIONS, "unified_definitions": unified.DEFINITIONS,
               "generator": {"package": "duplexeval-aggregator", "version": version("duplexeval-aggregator")},
               "vad": {k: v for k, v in model_info(vad_backend).items() if k != "path"},
               "settings": {"timing": vad.TIMING_SETTINGS, "trim": vad.TRIM_SETTINGS, "unified": vad.UNIFIED,
                            "adaptation": adaptation_on, "utmosv2": adaptation.utmosv2_available()},
               "subsets": {}}
    all_rows = []
    for sub, ss in samples.items():
        rows = _sample_rows(ss, probs, vad_backend, adaptation_on)
        metrics["subsets"][sub] = subset_scores(ss[0].task if ss else "", ss, rows, adaptation_on)
        all_rows += rows
    all_rows = [_finite(r) for r in all_rows]
    SCHEMAS.check_output("metrics", metrics, "metrics.json")
    return metrics, all_rows


def score_tree(tree: Path, out: Path, cache_dir: Path | None = None, *, failures: dict[str, str] | None = None,
               quiet: bool = False, exclude_invalid: bool = False, link_roots: tuple = (),
               tasks: dict[str, str] | None = None, adaptation_on: bool = True, vad_backend: str = "onnx",
               jobs: int | None = None) -> dict:
    """Score a tree into out/metrics.json, samples.jsonl and report.md (all or nothing)."""
    from .report import render
    out = Path(out)
    metrics, rows = build(tree, cache_dir, vad_backend, jobs, failures, quiet, exclude_invalid=exclude_invalid,
                          link_roots=link_roots, tasks=tasks, adaptation_on=adaptation_on)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_many({out / "metrics.json": dumps(metrics), out / "samples.jsonl": jsonl_text(rows),
                       out / "report.md": render(metrics)})
    if not quiet:
        print(f"[aggregator] wrote {out}/metrics.json, samples.jsonl, report.md", file=sys.stderr)
    return metrics
