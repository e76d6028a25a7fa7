"""Counterfactual controls (`--benchmark-arg counterfactual=true`): each user-interruption and
pause-handling sample is run a second time on a twin without the event, and the report shows,
per sample and per subset with a bootstrap interval, what the event itself changed.

- user interruption: `cf_input.wav` is input.wav with the interruption [S, R) muted (zeros), the
  same length, so S and R mean the same instants in both runs. The quantity is **stopped**: the
  model was speaking at S and no speech of it crosses R (the unified rule's outcomes `response`
  and `no_response`). With nothing to stop for, a model that stops anyway at S stops for reasons
  of its own (its answer ended); the paired difference, original minus twin, is what the
  interruption caused.
- pause handling: `cf_input.wav` is input.wav with every pause cut out (the speech on both sides
  joined), so the user never pauses. The quantity is **onset in the window**: a model speech
  segment starts inside a pause [a, b) of the original, or inside the same length of time from
  the cut point in the twin (the cut point of pause i is a_i minus the pauses cut before it). The
  difference is how often the pause itself drew the model in.

Both quantities are read from Silero VAD segments of output.wav and cf_output.wav (the unified
column's settings). The twin is made by the dataset stage (this module's `variants` hook, for the
built-in datasets and imported ones alike), run by the runner core as the optional session "cf"
(prefix `cf_`), and scored by the aggregate stage when a sample has cf.json and cf_output.wav.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from duplexeval_common import stats
from duplexeval_common.errors import SampleError

PREFIX = "cf_"
RECORD = "cf.json"
FORMAT = "fdb-v1-counterfactual/1"
SESSIONS = [{"name": "main", "prefix": ""}, {"name": "cf", "prefix": PREFIX, "optional": True}]
KINDS = {"user_interruption": "interruption_muted", "pause_handling": "pauses_cut"}
QUANTITY = {"interruption_muted": "stopped", "pauses_cut": "onset_in_window"}


# -- the twin (tts-synth's `variants` hook) --------------------------------------------------------

def _windows(folder: Path, task: str, key: str) -> list[tuple[float, float]]:
    import json
    name = "interrupt.json" if task == "user_interruption" else "pause.json"
    try:
        items = json.loads((folder / name).read_text(encoding="utf-8"))
        return [(float(it["timestamp"][0]), float(it["timestamp"][1])) for it in items]
    except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
        raise SampleError(key, f"counterfactual: {name} has no readable timestamps ({exc})") from None


def twin(audio: np.ndarray, sr: int, kind: str, windows: list[tuple[float, float]]) -> tuple[np.ndarray, list]:
    """(the twin's audio, the windows in samples [start, end)) of one sample."""
    n = len(audio)
    spans = sorted((max(0, min(n, round(a * sr))), max(0, min(n, round(b * sr)))) for a, b in windows)
    if kind == "interruption_muted":
        out = audio.copy()
        for a, b in spans:
            out[a:b] = 0
        return out, spans
    keep, last = [], 0
    for a, b in spans:
        keep.append(audio[last:max(last, a)])
        last = max(last, b)
    keep.append(audio[last:])
    return np.concatenate(keep), spans


def variants(ctx, options: dict) -> None:
    """Write cf_input.wav and cf.json beside a sample's files when `counterfactual` is on and the
    sample's task has a twin (the others are left as they are)."""
    if not options.get("counterfactual"):
        return
    kind = KINDS.get(ctx.sample.task)
    if kind is None:
        return
    import io

    import soundfile as sf
    folder = Path(ctx.work)
    try:  # in the file's own sample format, so the twin equals it sample for sample outside the event
        info = sf.info(str(folder / "input.wav"))
        audio, sr = sf.read(str(folder / "input.wav"), dtype="int16" if info.subtype == "PCM_16" else "float64")
    except Exception as exc:  # soundfile raises several types for bad files
        raise SampleError(ctx.id, f"counterfactual: input.wav is not readable ({exc})") from None
    out, spans = twin(audio, sr, kind, _windows(folder, ctx.sample.task, ctx.id))
    buf = io.BytesIO()
    sf.write(buf, out, sr, subtype=info.subtype, format="WAV")
    ctx.write_bytes(f"{PREFIX}input.wav", buf.getvalue())
    ctx.write_json(RECORD, {"format": FORMAT, "kind": kind, "quantity": QUANTITY[kind], "sample_rate": sr,
                            "windows_samples": [list(s) for s in spans],
                            "input_samples": len(audio), "twin_samples": len(out)})


# -- the paired quantities (the aggregate stage) ----------------------------------------------------

def stopped(segments: list[tuple[int, int, bool]], S: int, R: int) -> bool:
    """Speech at S and none across R (times in microseconds)."""
    return any(a <= S < b for a, b, _ in segments) and not any(a < R < b for a, b, _ in segments)


def onset_in(segments: list[tuple[int, int, bool]], windows: list[tuple[int, int]]) -> bool:
    return any(lo <= a < hi for a, _, _ in segments for lo, hi in windows)


def cut_windows(spans: list[tuple[int, int]], sr: int) -> list[tuple[int, int]]:
    """Where the pauses [a, b) (in samples of the original) fall in the cut twin, in microseconds:
    [a - cut before, a - cut before + (b - a))."""
    out, cut = [], 0
    for a, b in spans:
        start = a - cut
        out.append((round(start * 1e6 / sr), round((start + b - a) * 1e6 / sr)))
        cut += b - a
    return out


def sample_row(record: dict, main: list, twin_segments: list) -> dict:
    """The paired outcome of one sample: the quantity on the original and on its twin, and their
    difference (original minus twin)."""
    sr = int(record["sample_rate"])
    spans = [tuple(s) for s in record["windows_samples"]]
    us = [(round(a * 1e6 / sr), round(b * 1e6 / sr)) for a, b in spans]
    if record["kind"] == "interruption_muted":
        S, R = us[0]
        a, b = stopped(main, S, R), stopped(twin_segments, S, R)
    else:
        a, b = onset_in(main, us), onset_in(twin_segments, cut_windows(spans, sr))
    return {"kind": record["kind"], "quantity": record["quantity"], "original": a, "twin": b,
            "difference": int(a) - int(b)}


def summary(rows: list[dict]) -> dict | None:
    """Per subset: the quantity's rate on the originals and on the twins, and the mean paired
    difference with its bootstrap interval (duplexeval_common.stats.paired_difference)."""
    pairs = [r["counterfactual"] for r in rows if r.get("counterfactual")]
    if not pairs:
        return None
    n = len(pairs)
    d = stats.paired_difference([p["difference"] for p in pairs])
    by_diff = {str(k): sorted((r["id"] for r in rows if r.get("counterfactual")
                               and r["counterfactual"]["difference"] == k), key=_id_key) for k in (1, 0, -1)}
    return {"kind": pairs[0]["kind"], "quantity": pairs[0]["quantity"], "n": n,
            "original_rate": sum(p["original"] for p in pairs) / n, "twin_rate": sum(p["twin"] for p in pairs) / n,
            "mean_difference": d["mean"], "interval": d["interval"], "samples_by_difference": by_diff}


def _id_key(sample_id: str) -> tuple:
    from duplexeval_common.samples import id_sort_key
    return id_sort_key(sample_id)


def report_lines(cf: dict) -> list[str]:
    """report.md's lines of one subset's counterfactual entry."""
    iv = cf["interval"]
    lines = [f"   counterfactual ({cf['kind']}): {cf['quantity']} {cf['original_rate']:.3f} with the event, "
             f"{cf['twin_rate']:.3f} without; paired difference {cf['mean_difference']:+.3f} "
             f"[{iv[0]:+.3f}, {iv[1]:+.3f}] over {cf['n']} samples"]
    for k, label in (("1", "+1 (the event changed it)"), ("-1", "-1 (only without the event)"), ("0", "0")):
        ids = cf["samples_by_difference"].get(k) or []
        if ids:
            lines.append(f"     difference {label}: {', '.join(ids)}")
    return lines
