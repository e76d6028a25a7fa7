"""The official-compatible column: upstream v1_v1.5/evaluation/eval_*.py of Full-Duplex-Bench.

Each function re-does what the official script does on one subset folder, quirks included:
the directory walk (os.listdir order; canonical in the pipeline, see listdir), the 1 s / 3-word take-over rule over the whole
output.json, latency clipped at 0 and averaged over take-over samples only, the zip of
separately built turn-taking lists, the backchannel loop with its per-segment TOR overwrite,
stop at the first segment over 3 s, 0.2 s bins with 1e-10, and the official script's SciPy
calls: the ground truth resized by scipy.interpolate.interp1d(kind="linear",
fill_value="extrapolate") over linspace(0, 1) and scipy.spatial.distance.jensenshannon with
its defaults (natural log, a distance; 1 without backchannels). Both are re-done here with
the numpy operations SciPy performs, in its order, and SciPy's relative entropy formula with the
C library's log (_interp_linear, _jensenshannon, _rel_entr: the same floats, tested against
SciPy with ==), so scoring imports no SciPy module (a quarter of a second of every rescore).

The rules that differ between upstream revisions are flags of a revisions.Revision (one
entry per revision in revisions.py); the functions that need one take it. Today that is the
backchannel list: at d7336bd (the default; since commit 1d40caa) every segment up to the 3 s
stop is counted as a backchannel, at bb59575 (the paper era, before 1d40caa) a take-over
segment empties the list instead. benchmarks/fdb-v1/duplexeval_fdb_v1/tests/golden/golden.json keeps the numbers of both.

Where the official script would stop with an exception, the sample is handled as described
in a note (returned with the numbers) instead, so a tree the official scripts cannot score
still gets a column; on any tree where they run, the numbers are theirs.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import math
import os
from pathlib import Path

import numpy as np

from duplexeval_common.errors import InputError
from .revisions import Revision, get as get_revision

# The official scripts walk folders in os.listdir order, which the file system decides (ext4: a
# hash of the names with a per-file-system seed), and their sums follow that order to the last
# bit. On a user's tree (`aggregator score`, `make score`) the column walks as they do. The
# pipeline's aggregate stage scores a tree it builds itself in a temporary folder; there the walk
# is in the canonical order (numeric ids numerically, then the other names), so the same run
# gives the same bytes on every machine, in both runtimes, and when an archive is rescored
# elsewhere (a different order can move the last digit of a mean, never more).
_CANONICAL = contextvars.ContextVar("duplexeval_official_canonical_order", default=False)


def _order_key(name: str) -> tuple:
    return (0, int(name), name) if name.isascii() and name.isdigit() else (1, 0, name)


def listdir(path) -> list[str]:
    """os.listdir as the official scripts walk; sorted canonically inside canonical_order()."""
    names = os.listdir(path)
    if _CANONICAL.get():
        names.sort(key=_order_key)
    return names


@contextlib.contextmanager
def canonical_order(on: bool = True):
    """Within this block the official functions walk folders in the canonical order."""
    token = _CANONICAL.set(on)
    try:
        yield
    finally:
        _CANONICAL.reset(token)


TURN_DURATION_THRESHOLD = 1
TURN_NUM_WORDS_THRESHOLD = 3
WINDOW_SIZE = 0.2
EPSILON = 1e-10
TIME_THRESHOLD = 3


def _load(path: Path, where: str):
    try:
        with open(path, "r") as f:
            return json.load(f)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise InputError(where, f"{path.name} is not valid JSON ({exc})") from None


def _last_end(chunks: list, notes: list, where: str, fallback_note: bool) -> float:
    end = chunks[-1]["timestamp"][-1]
    if end is None:
        if fallback_note:
            notes.append(f"{where}: last word has a null end; the official script raises "
                         "TypeError here; its start was used (as eval_pause_handling.py does)")
        return chunks[-1]["timestamp"][0]
    return end


def take_turn(chunks: list, notes: list, where: str, null_is_quirk: bool = True) -> int:
    """TOR: 0 without words; else 0 if the words span < 1 s and number at most 3; else 1."""
    if len(chunks) == 0:
        return 0
    duration = _last_end(chunks, notes, where, null_is_quirk) - chunks[0]["timestamp"][0]
    if duration < TURN_DURATION_THRESHOLD:
        return 0 if len(chunks) <= TURN_NUM_WORDS_THRESHOLD else 1
    return 1


def _mean(xs: list) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _folders(data_dir: Path, notes: list, subset: str) -> list[Path]:
    """os.listdir of the subset, skipping names ending with .DS_Store or .md."""
    out = []
    for folder in listdir(data_dir):
        if folder.endswith(".DS_Store") or folder.endswith(".md"):
            continue
        p = data_dir / folder
        if not p.is_dir():
            notes.append(f"{subset}/{folder}: not a folder; the official script raises "
                         "NotADirectoryError; skipped")
            continue
        out.append(p)
    return out


def pause_handling(data_dir: Path) -> tuple[dict, list[str], dict]:
    """eval_pause_handling.py: TOR over every file ending with output.json."""
    notes: list[str] = []
    subset = data_dir.name
    files = [p / f for p in _folders(data_dir, notes, subset)
             for f in listdir(p) if f.endswith("output.json")]
    tors = []
    per = {}
    for f in files:
        where = f"{subset}/{f.parent.name}"
        tor = take_turn(_load(f, where)["chunks"], notes, where, null_is_quirk=False)
        tors.append(tor)
        per[f.parent.name] = {"tor": tor}
    return {"tor": _mean(tors)}, notes, per


def smooth_turn_taking(data_dir: Path) -> tuple[dict, list[str], dict]:
    """eval_smooth_turn_taking.py: lists of outputs and annotations built apart, then zipped."""
    notes: list[str] = []
    subset = data_dir.name
    outputs, annotations = [], []
    for p in _folders(data_dir, notes, subset):
        names = listdir(p)
        for f in names:
            if f.endswith("output.json"):
                outputs.append(p / f)
                annotations += [p / g for g in names if g.endswith("turn_taking.json")]
    if len(outputs) != len(annotations):
        notes.append(f"{subset}: {len(outputs)} output.json files but {len(annotations)} "
                     "turn_taking.json files; paired by position as the official zip does")
    tors, latencies, per = [], [], {}
    for ann, out in zip(annotations, outputs):
        where = f"{subset}/{out.parent.name}"
        end_time = _load(ann, where)[0]["timestamp"][0]
        chunks = _load(out, where)["chunks"]
        tor = take_turn(chunks, notes, where)
        latency = chunks[0]["timestamp"][0] - end_time if tor == 1 else None
        tors.append(tor)
        if tor == 1:
            latencies.append(0 if latency < 0 else latency)
        per[out.parent.name] = {"tor": tor, "latency": latency}
    return {"tor": _mean(tors), "latency": _mean(latencies)}, notes, per


def user_interruption(data_dir: Path, judged: bool) -> tuple[dict, list[str], dict]:
    """eval_user_interruption.py without calling the judge: rating.json holds its answer."""
    notes: list[str] = []
    subset = data_dir.name
    dirs = []
    for root, subdirs, _ in os.walk(data_dir):
        for d in subdirs:
            dirs.append(os.path.join(root, d))
    tors, latencies, ratings, per = [], [], [], {}
    unrated = 0
    for d in sorted(dirs):
        p = Path(d)
        where = f"{subset}/{p.relative_to(data_dir).as_posix()}"
        if p.parent != data_dir:
            notes.append(f"{where}: nested folder; the official os.walk takes it for a sample "
                         "(and raises without output.json); skipped")
            continue
        missing = [n for n in ("output.json", "interrupt.json") if not (p / n).is_file()]
        if missing:
            notes.append(f"{where}: {missing[0]} missing; the official script raises "
                         "FileNotFoundError; skipped")
            continue
        out = _load(p / "output.json", where)
        end_time = _load(p / "interrupt.json", where)[0]["timestamp"][1]
        chunks = out["chunks"]
        tor = take_turn(chunks, notes, where)
        tors.append(tor)
        latency = chunks[0]["timestamp"][0] - end_time if tor == 1 else None
        rating = None
        if tor == 1:
            latencies.append(0 if latency < 0 else latency)
            if judged:
                if (p / "rating.json").is_file():
                    rating = _load(p / "rating.json", where)["rating"]
                    ratings += [rating, rating]  # appended twice, as the official loop does
                else:
                    unrated += 1
        per[p.name] = {"tor": tor, "latency": latency, "rating": rating}
    if unrated:
        notes.append(f"{subset}: {unrated} take-over samples have no rating.json; "
                     "the rating averages the others")
    rating = _mean(ratings) if judged else None
    return {"tor": _mean(tors), "latency": _mean(latencies), "rating": rating}, notes, per


def backchannel_ids(data_dir: Path) -> list[str]:
    """The samples eval_backchannel.py visits, in its order (os.listdir, digit names)."""
    return [spk for spk in listdir(data_dir) if spk.isdigit()]


def _jsd(prediction: list, max_end_time: float, gt: list) -> float:
    bins = [0 for _ in range(int(max_end_time / WINDOW_SIZE) + 1)]
    for s, e in prediction:
        for i in range(int(s / WINDOW_SIZE), int(e / WINDOW_SIZE) + 1):
            if i < len(bins):
                bins[i] += 1
    hist = np.array(bins) + EPSILON
    hist = hist / np.sum(hist)
    x_gt = np.linspace(0, 1, len(gt))
    x_pred = np.linspace(0, 1, len(hist))
    y = np.asarray(gt)
    if len(gt) < 2 or y.dtype != np.float64 or y.ndim != 1:
        # what interp1d does with these (raise, cast, other shapes) is SciPy's to say
        from scipy.interpolate import interp1d
        gt_resized = interp1d(x_gt, gt, kind="linear", fill_value="extrapolate")(x_pred)
    else:
        gt_resized = _interp_linear(x_gt, y, x_pred)
    return _jensenshannon(hist, np.array(gt_resized))


def _interp_linear(x: np.ndarray, y: np.ndarray, x_new: np.ndarray) -> np.ndarray:
    """scipy.interpolate.interp1d(x, y, kind="linear", fill_value="extrapolate")(x_new) for
    strictly increasing float64 x and 1-D float64 y: the same numpy operations in the same
    order as interp1d's _call_linear (SciPy 1.x), so the same floats, without importing
    scipy.interpolate (a quarter of a second of every rescore). Equality with SciPy is tested
    in duplexeval_fdb_v1/tests/test_official_jsd.py."""
    idx = np.searchsorted(x, x_new).clip(1, len(x) - 1).astype(int)
    lo, hi = idx - 1, idx
    x_lo, y_lo = x[lo], y[lo][:, None]
    slope = (y[hi][:, None] - y_lo) / (x[hi] - x_lo)[:, None]
    return (slope * (x_new - x_lo)[:, None] + y_lo).reshape(-1)


def _rel_entr(x: float, y: float) -> float:
    """scipy.special.rel_entr(x, y) for one pair, as SciPy's xsf library computes it (the
    pinned SciPy 1.17.1): x * log1p((x - y) / y) where 0.5 < x / y < 2, x * log(x / y) otherwise, with
    the C library's log and log1p (Python's math calls the same functions). Equal to SciPy's
    ufunc bit for bit (duplexeval_fdb_v1/tests/test_official_jsd.py), without importing it."""
    if x != x or y != y:
        return math.nan
    if x > 0 and y > 0:
        r = x / y
        if 0.5 < r < 2:
            return x * math.log1p((x - y) / y)
        return x * (-math.inf if r == 0 else math.log(r))  # C's log(0) is -inf, math's raises
    if x == 0 and y >= 0:
        return 0.0
    return math.inf


def _jensenshannon(p: np.ndarray, q: np.ndarray) -> float:
    """scipy.spatial.distance.jensenshannon(p, q) with its defaults (natural log, 1-D): its
    numpy operations in its order, the relative entropy by _rel_entr."""
    p = p / np.sum(p, axis=0, keepdims=True)
    q = q / np.sum(q, axis=0, keepdims=True)
    m = (p + q) / 2.0
    left = np.array([_rel_entr(a, b) for a, b in zip(p.tolist(), m.tolist())], dtype=np.float64)
    right = np.array([_rel_entr(a, b) for a, b in zip(q.tolist(), m.tolist())], dtype=np.float64)
    js = np.sum(left, axis=0) + np.sum(right, axis=0)
    return float(np.sqrt(js / 2.0))


def _segment_words(chunks: list, start_time: float, end_time: float) -> list:
    words = []
    for c in chunks:
        t_start, t_end = c["timestamp"][0], c["timestamp"][1]
        if t_start is None or (t_end is None and t_start < end_time):
            continue
        if t_end is None:
            t_end = t_start
        if t_start >= start_time and t_end <= end_time:
            words.append(c["text"])
        elif t_start <= end_time and t_end > end_time:
            words.append(c["text"])
        elif t_start <= start_time and t_end > start_time:
            words.append(c["text"])
    return words


def backchannel(data_dir: Path, segments: dict, gt: dict | None,
                revision: Revision | None = None) -> tuple[dict, list[str], dict]:
    """eval_backchannel.py at `revision` (None: revisions.DEFAULT).

    segments[spk] = (official VAD segments in s, frames, sample rate).
    """
    resets = (revision or get_revision()).takeover_resets_backchannels
    notes: list[str] = []
    subset = data_dir.name
    jsd_list, tor_list, freq_list, per = [], [], [], {}
    tor = None
    for spk in backchannel_ids(data_dir):
        where = f"{subset}/{spk}"
        if spk not in segments:
            notes.append(f"{where}: output.wav missing; the official script raises "
                         "FileNotFoundError; skipped")
            continue
        segs, frames, sr = segments[spk]
        prediction = []
        json_path = data_dir / spk / "output.json"
        if not json_path.is_file():
            if tor is None:
                notes.append(f"{where}: output.json missing before any take-over flag was set; "
                             "the official script raises UnboundLocalError; TOR 0 used")
                tor = 0
            else:
                notes.append(f"{where}: output.json missing; TOR carried over from the previous "
                             "sample in directory order, as the official script does")
        else:
            chunks = _load(json_path, where)["chunks"]
            tor = 0
            for seg in segs:
                start_time, end_time = seg["start"], seg["end"]
                duration = end_time - start_time
                if duration > TIME_THRESHOLD:
                    tor = 1
                    break
                n_words = len(_segment_words(chunks, start_time, end_time))
                if n_words > 3:
                    tor = 1
                elif duration < 1:
                    tor = 0 if n_words <= 2 else 1
                else:
                    tor = 1
                if resets and tor == 1:
                    prediction = []  # before upstream 1d40caa: a take-over empties the list
                else:
                    prediction.append([start_time, end_time])
        tor_list.append(tor)
        max_end_time = frames / sr
        freq_list.append(len(prediction) / max_end_time)
        if not prediction:
            jsd = 1
        elif gt is None:
            jsd = None
        else:
            if spk not in gt:
                raise InputError(where, "no ground-truth distribution for this sample in the ICC "
                                        "file (the official script raises KeyError)")
            jsd = _jsd(prediction, max_end_time, gt[spk])
        jsd_list.append(jsd)
        per[spk] = {"tor": tor, "freq": freq_list[-1], "jsd": jsd, "segments": len(prediction)}
    if gt is None and any(j is None for j in jsd_list):
        notes.append(f"{subset}: no ICC ground-truth file (--icc-gt); jsd not computed")
        jsd_mean = None
    else:
        jsd_mean = float(np.mean(jsd_list)) if jsd_list else None
    return {"tor": float(np.mean(tor_list)) if tor_list else None,
            "freq": float(np.mean(freq_list)) if freq_list else None,
            "jsd": jsd_mean}, notes, per
