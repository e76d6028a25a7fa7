"""score_tree: load a tree, run the VAD (cached), compute both columns, write three files.

Strict (the default): the first load-time problem of a sample stops everything with
InputError. exclude_invalid=True (`aggregator score --exclude-invalid`, the pipeline stage):
such a sample becomes ineligible with the reason "invalid:<code>", is listed under the
subset's "invalid" in unified.json with its one-line problem, counts in coverage, and is left
out of both columns; the official functions then read a view of the subset folder without it
(a temporary mirror: real folders, files linked).
"""

from __future__ import annotations

import os
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

import soundfile as sf

from . import DEFINITIONS, official, revisions, summary, unified_interrupt, unified_pause, \
    unified_turns
from .. import counterfactual
from duplexeval_common.errors import InputError
from duplexeval_common.jsonio import atomic_write_many as write_all, dumps, jsonl_text as jsonl
from duplexeval_common.optional import version
from ..schemas import SCHEMAS
from duplexeval_common.timebase import to_us
from .tree import (NO_SUBSET, Sample, check_manifest_hashes, discover_subsets, load_sample, manifest_samples,
                   manifest_tasks, mark_invalid, read_json, select_samples, upstream_failures)
from ..tasks import TASKS, check_tasks, task_of
from duplexeval_common.vad import FEED_OFFICIAL, OFFICIAL_SETTINGS, SR, UNIFIED_SETTINGS, model_info, official_segments, \
    unified_feed, unified_segments
from duplexeval_common.vadcache import Job, ProbStore, default_root, ensure, hash_files, sha256_file


def default_cache_dir() -> Path:
    """The VAD cache root when --cache-dir is not given: user_cache_dir()/vad (entries go in
    a namespace folder below it, see vadcache.py)."""
    return default_root()


def subset_tasks(tree: Path, manifest: dict | None, tasks: dict[str, str] | None) -> dict[str, str]:
    """{subset: task}: the user's --task first, then the manifest's rows, then the official names."""
    given = {**manifest_tasks(manifest), **check_tasks(tasks)}
    names = dict(discover_subsets(tree, given))
    for sub in (manifest or {}):
        task = given.get(sub) or task_of(sub)
        if task:
            names.setdefault(sub, task)
    for sub, task in names.items():
        if task not in TASKS:
            raise InputError(sub, f"task {task!r} is not a Full-Duplex-Bench v1.0 task (one of {', '.join(TASKS)})")
    return names


def _load_samples(tree: Path, failures: dict[str, str], exclude_invalid: bool = False,
                  link_roots: tuple = (), tasks: dict[str, str] | None = None
                  ) -> tuple[dict[str, list[Sample]], dict[str, str]]:
    manifest = manifest_samples(tree)
    names = subset_tasks(tree, manifest, tasks)
    if not names:
        raise InputError(str(tree), NO_SUBSET)
    fails = {**upstream_failures(tree), **(failures or {})}
    out = {}
    for subset in sorted(names):
        task = names[subset]
        samples = select_samples(tree, subset, task, manifest, fails,
                                 mark_invalid if exclude_invalid else None, link_roots=link_roots)
        rows = {str(r["id"]): r for r in (manifest or {}).get(subset, [])}
        for s in samples:
            try:
                if s.eligible and task != "backchannel":
                    load_sample(s)
            except InputError as exc:
                if not exclude_invalid:
                    raise
                mark_invalid(s, exc)
            try:
                if s.id in rows and s.dir.is_dir():
                    check_manifest_hashes(s, rows[s.id], sha256_file)
            except InputError as exc:
                if not exclude_invalid:
                    raise
                mark_invalid(s, exc)
        out[subset] = samples
    return out, names


def _exclude(by_key: dict[str, Sample], exc: InputError, exclude_invalid: bool) -> None:
    """Mark the sample an InputError names invalid, or re-raise (strict, or not a sample)."""
    s = by_key.get(exc.where)
    if not exclude_invalid or s is None or s.invalid is not None:
        raise exc
    mark_invalid(s, exc)


def _judge(tree: Path) -> dict | None:
    p = tree / "judge.json"
    if not p.is_file():
        return None
    j = read_json(p, "judge.json")
    if not isinstance(j, dict) or not isinstance(j.get("judge"), str) \
            or not isinstance(j.get("official"), bool):
        raise InputError("judge.json", 'expected {"judge": name, "model": ..., "official": bool}')
    return j


# A tree without judge.json whose interruption samples hold rating.json files (the official
# judge's answers, as upstream's example data ships them): the official rating column reads them.
TREE_RATINGS = {"judge": "rating.json", "model": "the tree's rating.json files", "official": False}


def _tree_ratings(samples: dict[str, list[Sample]], names: dict[str, str]) -> dict | None:
    for subset, ss in samples.items():
        if names[subset] == "user_interruption" and any((s.dir / "rating.json").is_file() for s in ss):
            return dict(TREE_RATINGS)
    return None


def _vad_jobs(tree: Path, samples: dict[str, list[Sample]], names: dict[str, str],
              exclude_invalid: bool = False) -> tuple[list, list]:
    """(path, feed, owner) for every file the two columns need VAD on."""
    unified, official_ = [], []
    by_key = {s.key: s for ss in samples.values() for s in ss}
    for subset, ss in samples.items():
        task = ss[0].task if ss else names[subset]
        if task == "user_interruption":
            for s in ss:
                if s.eligible:
                    unified.append((s.dir / "output.wav", unified_feed(s.output_sr, s.output_channels), s))
        elif task == "backchannel" and (tree / subset).is_dir():
            for spk in official.backchannel_ids(tree / subset):
                key = f"{subset}/{spk}"
                p = tree / subset / spk / "output.wav"
                if not p.is_file() or (key in by_key and by_key[key].invalid is not None):
                    continue
                try:
                    try:
                        info = sf.info(str(p))
                    except RuntimeError as exc:
                        raise InputError(key, f"output.wav is not readable audio ({exc})",
                                         "unreadable-audio") from None
                    if info.channels != 1:
                        raise InputError(key, f"output.wav has {info.channels} channels; "
                                         "the official evaluator needs mono", "output-channels")
                except InputError as exc:
                    _exclude(by_key, exc, exclude_invalid)
                    continue
                official_.append((p, FEED_OFFICIAL, (subset, spk, info.frames, info.samplerate)))
    return unified, official_


def _cf_jobs(samples: dict[str, list[Sample]]) -> list[tuple[Sample, dict, Path, str, int]]:
    """(sample, its cf.json, file, feed, duration in microseconds) for output.wav and
    cf_output.wav of every eligible sample run with its counterfactual twin (counterfactual.py)."""
    out = []
    for ss in samples.values():
        for s in ss:
            if not (s.eligible and (s.dir / counterfactual.RECORD).is_file()
                    and (s.dir / f"{counterfactual.PREFIX}output.wav").is_file()):
                continue
            rec = read_json(s.dir / counterfactual.RECORD, f"{s.key} {counterfactual.RECORD}")
            if not isinstance(rec, dict) or rec.get("format") != counterfactual.FORMAT:
                raise InputError(s.key, f"{counterfactual.RECORD} is not a {counterfactual.FORMAT} record", "bad-input")
            feed = unified_feed(s.output_sr, s.output_channels)
            twin_us = round(int(rec["twin_samples"]) * 1e6 / int(rec["sample_rate"]))
            out.append((s, rec, s.dir / "output.wav", feed, s.T_us))
            out.append((s, rec, s.dir / f"{counterfactual.PREFIX}output.wav", feed, twin_us))
    return out


def _probabilities(jobs_u, jobs_o, cache_dir: Path, backend: str, workers: int, quiet: bool,
                   jobs_x: list | None = None) -> dict:
    """{(file, feed): (probabilities, n)}; jobs_x: further (file, feed, duration_s) to run."""
    seen = {(p, feed) for p, feed, _ in jobs_u + jobs_o}
    jobs_x = list({(p, feed): (p, feed, sec) for p, feed, sec in jobs_x or [] if (p, feed) not in seen}.values())
    paths = [p for p, _, _ in jobs_u + jobs_o + jobs_x]
    shas = hash_files(paths, workers)
    jobs = [Job(p, shas[p], feed, s.T_us / 1e6) for p, feed, s in jobs_u]
    jobs += [Job(p, shas[p], feed, frames / SR) for p, feed, (_, _, frames, _sr) in jobs_o]  # fed as 16 kHz
    jobs += [Job(p, shas[p], feed, seconds) for p, feed, seconds in jobs_x]
    probs = ensure(jobs, ProbStore(cache_dir, backend), workers, quiet) if jobs else {}
    return {(p, feed): probs[(shas[p], feed)] for p, feed, _ in jobs_u + jobs_o + jobs_x}


def _mirror(src: Path, dst: Path, skip: set[str]) -> None:
    """dst: src's folders as real folders, every other entry linked, the names in skip left out."""
    dst.mkdir(parents=True)
    for name in os.listdir(src):
        if name in skip:
            continue
        p = src / name
        if p.is_dir() and not p.is_symlink():
            _mirror(p, dst / name, set())
        else:
            os.symlink(p.absolute(), dst / name)


def _official_column(tree: Path, subset: str, task: str, ss: list[Sample], segs: dict, gt: dict | None,
                     judge: dict | None, exclude_invalid: bool, stack: ExitStack,
                     revision: revisions.Revision):
    """The official numbers of a subset over its samples that are neither invalid nor marked
    ineligible by their runner (runner.json status "ineligible", e.g. realtime drift).

    With exclude_invalid, an InputError the official functions raise for one sample (e.g. an
    ineligible sample's output.json that is not JSON) marks that sample invalid and the subset
    is read again without it.
    """
    by_key = {s.key: s for s in ss}
    while True:
        # invalid samples, and those made but marked not to be scored (runner.json "ineligible")
        skip = {s.id for s in ss if s.invalid is not None
                or any(r.startswith("ineligible:") for r in s.reasons)}
        d = tree / subset
        if skip and d.is_dir():
            d = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="duplexeval-view-"))) / subset
            _mirror(tree / subset, d, skip)
        try:
            return _official(d, subset, task, segs, gt, judge, revision)
        except InputError as exc:
            _exclude(by_key, exc, exclude_invalid)


def _official(d: Path, subset: str, task: str, segs: dict, gt: dict | None, judge: dict | None,
              revision: revisions.Revision):
    if not d.is_dir():
        return {}, [f"{subset}: no folder; no official numbers"]
    if task == "pause_handling":
        vals, notes, _ = official.pause_handling(d)
    elif task == "smooth_turn_taking":
        vals, notes, _ = official.smooth_turn_taking(d)
    elif task == "user_interruption":
        vals, notes, _ = official.user_interruption(d, judged=judge is not None)
    else:
        vals, notes, _ = official.backchannel(d, segs.get(subset, {}), gt, revision)
    return vals, notes


def _rows(task: str, samples: list[Sample], vad_segs: dict) -> list[dict]:
    if task == "pause_handling":
        return [unified_pause.row(s) for s in samples]
    if task == "smooth_turn_taking":
        return [unified_turns.row(s) for s in samples]
    if task == "user_interruption":
        return [unified_interrupt.row(s, vad_segs.get(s.key)) for s in samples]
    return []


def _interrupt_segments(s: Sample, probs_n, T_us: int | None = None) -> list[tuple[int, int, bool]]:
    """The unified VAD segments (start_us, end_us, runs_to_end) of a file, clipped to its duration
    (the sample's T unless T_us says otherwise, e.g. a counterfactual twin with pauses cut out)."""
    probs, n = probs_n
    T = s.T_us if T_us is None else T_us
    out = []
    for a, b, open_end in unified_segments(probs, n):
        a_us = min(to_us(a / SR), T)
        b_us = min(to_us(b / SR), T)
        out.append((a_us, b_us, open_end))
    return out


def vad_record(backend: str) -> dict:
    info = {k: v for k, v in model_info(backend).items() if k != "path"}
    return {**info,
            "unified": {**UNIFIED_SETTINGS, "sampling_rate": SR,
                        "input": "output.wav as 16 kHz mono: 16 kHz as is, multiples of 16 kHz "
                                 "decimated as silero does, other rates by scipy resample_poly; "
                                 "channels averaged"},
            "official": {**OFFICIAL_SETTINGS, "sampling_rate": SR,
                         "input": "output.wav samples unchanged, taken as 16 kHz"}}


def build(tree: Path, icc_gt: Path | None = None, cache_dir: Path | None = None,
          out: Path | None = None, vad_backend: str = "onnx", jobs: int | None = None,
          failures: dict[str, str] | None = None, quiet: bool = False,
          official_only: bool = False, *, exclude_invalid: bool = False,
          official_revision: str | revisions.Revision | None = None,
          link_roots: tuple = (), canonical_order: bool = False,
          tasks: dict[str, str] | None = None) -> tuple[dict, dict, list]:
    """Compute (metrics, unified, rows) for a tree without writing anything but the VAD cache.

    canonical_order: the official column walks folders in the canonical order, not the file
    system's (official.listdir); the pipeline stage, whose tree it builds itself, sets it.
    The other arguments: see _build.
    """
    with official.canonical_order(canonical_order):
        return _build(tree, icc_gt, cache_dir, out, vad_backend, jobs, failures, quiet, official_only,
                      exclude_invalid=exclude_invalid, official_revision=official_revision,
                      link_roots=link_roots, tasks=tasks)


def _build(tree: Path, icc_gt: Path | None, cache_dir: Path | None, out: Path | None, vad_backend: str,
           jobs: int | None, failures: dict[str, str] | None, quiet: bool, official_only: bool, *,
           exclude_invalid: bool, official_revision: str | revisions.Revision | None,
           link_roots: tuple, tasks: dict[str, str] | None = None) -> tuple[dict, dict, list]:
    """build() in the walk order its caller set.

    official_only skips the unified column (and its VAD): unified metrics are {} and no rows.
    cache_dir is the VAD cache root (default user_cache_dir()/vad); `out` is not used for it.
    exclude_invalid: see the module docstring. link_roots: folders besides the tree that a sample's
    file links may lead into (the pipeline's input stages); any other link is refused.
    tasks: {subset: task} for subsets the manifest and the official names do not give a task.
    official_revision: the upstream revision whose
    rules the official column reproduces (a name of revisions.REVISIONS or an alias; None:
    revisions.DEFAULT); an unknown name raises revisions.UnknownRevision before any work.
    """
    revision = official_revision if isinstance(official_revision, revisions.Revision) \
        else revisions.get(official_revision)
    tree = Path(tree)
    workers = jobs or os.cpu_count() or 1
    samples, names = _load_samples(tree, failures or {}, exclude_invalid, (tree, *link_roots), tasks)
    judge = _judge(tree) or _tree_ratings(samples, names)
    if icc_gt is None and (tree / "icc_gt_distribution.json").is_file():
        icc_gt = tree / "icc_gt_distribution.json"
    gt = read_json(Path(icc_gt), str(icc_gt)) if icc_gt else None
    if icc_gt and not Path(icc_gt).is_file():
        raise InputError(str(icc_gt), "ICC ground-truth file not found")

    jobs_u, jobs_o = _vad_jobs(tree, samples, names, exclude_invalid)
    jobs_cf = [] if official_only else _cf_jobs(samples)
    if official_only:
        jobs_u = []
    cache = Path(cache_dir) if cache_dir else default_cache_dir()
    probs = _probabilities(jobs_u, jobs_o, cache, vad_backend, workers, quiet,
                           [(p, feed, T / 1e6) for _, _, p, feed, T in jobs_cf])
    vad_segs = {s.key: _interrupt_segments(s, probs[(p, feed)]) for p, feed, s in jobs_u}
    cf_segs: dict[str, tuple[dict, list]] = {}
    for s, rec, p, feed, T in jobs_cf:
        cf_segs.setdefault(s.key, (rec, []))[1].append(_interrupt_segments(s, probs[(p, feed)], T))
    off_segs: dict[str, dict] = {}
    for p, feed, (subset, spk, frames, sr) in jobs_o:
        pr, n = probs[(p, feed)]
        off_segs.setdefault(subset, {})[spk] = (official_segments(pr, n), frames, sr)

    metrics = {"definitions": DEFINITIONS, "official_revision": revision.record(), "subsets": {}}
    uni = {"definitions": DEFINITIONS, "official_revision": revision.record(),
           "generator": {"package": "duplexeval-aggregator", "version": version("duplexeval-aggregator")},
           "inputs": {"manifest_sha256": sha256_file(tree / "manifest.json")
                      if (tree / "manifest.json").is_file() else None,
                      "asr_sha256": sha256_file(tree / "asr.json") if (tree / "asr.json").is_file() else None,
                      "icc_gt_sha256": sha256_file(Path(icc_gt)) if icc_gt else None,
                      "judge": judge},
           "vad": vad_record(vad_backend),
           "subsets": {}}
    all_rows: list[dict] = []
    official_cols = {}
    with ExitStack() as stack:  # the temporary views without invalid samples
        for subset, ss in samples.items():
            official_cols[subset] = _official_column(tree, subset, names[subset], ss, off_segs, gt,
                                                     judge, exclude_invalid, stack, revision)
    rating_label = None if judge is None else (
        "official" if judge.get("official") else str(judge.get("model") or judge.get("judge")))
    for subset, ss in samples.items():
        task = names[subset]
        rows = [] if official_only else _rows(task, ss, vad_segs)
        for r in rows:
            if r["sample_id"] in cf_segs:
                rec, (main, twin) = cf_segs[r["sample_id"]][0], cf_segs[r["sample_id"]][1]
                r["counterfactual"] = counterfactual.sample_row(rec, main, twin)
        off, notes = official_cols[subset]
        um = summary.unified_metrics(task, rows) if rows else {}
        cnt = summary.counts(task, rows) if rows else summary.counts(task, [
            {"eligible": s.eligible, "reasons": s.reasons} for s in ss], base_only=True)
        cov = cnt["eligible"] / cnt["selected"] if cnt["selected"] else None
        metrics["subsets"][subset] = {"n": len(ss), "official": off, "unified": um,
                                      "counts": cnt, "coverage": cov}
        invalid = [{"sample_id": s.key, "reason": s.invalid[0], "problem": s.invalid[1]}
                   for s in ss if s.invalid is not None]
        entry = {"task": task, "n": len(ss), "counts": cnt, "coverage": cov, "metrics": um,
                 "official": off, "official_notes": notes, "invalid": invalid}
        if task in ("smooth_turn_taking", "user_interruption"):
            entry["min_observable_s"] = summary.min_observable_s(rows)
        if task == "user_interruption":
            entry["rating_label"] = rating_label
            metrics["subsets"][subset]["rating_label"] = rating_label
        cf = counterfactual.summary(rows)
        if cf is not None:
            entry["counterfactual"] = cf
        uni["subsets"][subset] = entry
        all_rows += rows
    SCHEMAS.check_output("metrics", metrics, "metrics.json")
    SCHEMAS.check_output("unified", uni, "unified.json")
    for r in all_rows:
        SCHEMAS.check_output("unified-sample", r, f"unified-samples.jsonl row {r['sample_id']}")
    return metrics, uni, all_rows


def score_tree(tree: Path, out: Path, icc_gt: Path | None = None, cache_dir: Path | None = None,
               *, vad_backend: str = "onnx", jobs: int | None = None,
               failures: dict[str, str] | None = None, quiet: bool = False,
               official_only: bool = False, exclude_invalid: bool = False,
               official_revision: str | revisions.Revision | None = None,
               link_roots: tuple = (), canonical_order: bool = False,
               tasks: dict[str, str] | None = None) -> dict:
    """Score a Full-Duplex-Bench v1.0 tree into out/{metrics.json, unified.json, unified-samples.jsonl}.

    failures maps "subset/id" to a reason (e.g. "failed:duplex-runner") for samples an
    upstream stage failed; those samples are ineligible. exclude_invalid turns a sample's
    load-time problem into the ineligibility reason "invalid:<code>" instead of an error.
    official_revision names the upstream revision of the official column (see build()).
    Returns the metrics.json content. Raises InputError (bad input, nothing written) or
    revisions.UnknownRevision.
    """
    out = Path(out)
    metrics, uni, rows = build(Path(tree), icc_gt, cache_dir, out, vad_backend, jobs, failures, quiet,
                               official_only, exclude_invalid=exclude_invalid, link_roots=link_roots,
                               official_revision=official_revision, canonical_order=canonical_order,
                               tasks=tasks)
    write_all({out / "metrics.json": dumps(metrics), out / "unified.json": dumps(uni),
               out / "unified-samples.jsonl": jsonl(rows)})
    if not quiet:
        print(f"[aggregator] wrote {out}/metrics.json, unified.json, unified-samples.jsonl",
              file=sys.stderr)
    return metrics
