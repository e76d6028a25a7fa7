"""Official speech adaptation: eval_general_before_after.py's rules (Full-Duplex-Bench @ d7336bd),
with evaluate.py's settings for `--task general_before_after` (trim_mode silero, speaking rate,
pitch and intensity on, SQUIM off, trimmed-mean aggregation with trim 0.05; UTMOSv2 on upstream,
here only when the package is installed).

Per sample, on output.wav at 16 kHz and output.json's words:

1. **Split.** E = metadata.json `timestamps[1]` (the overlap's end). Words with a [start, end]
   are sorted by start (stable); the split is the start of the first word starting after E or
   spanning it (start <= E < end), else the last sorted word's end, else E when there is no
   word; then clamped to [0, T]. Audio [0, split) is `pre`, [split, T] is `post` (sample
   indices rounded from seconds); a word is `pre` when its end <= split, else `post`.
2. **Features per segment** (pre, post, and the whole clean_output.wav with all of
   clean_output.json's words as `clean`): the segment's Silero speech (threshold 0.5, min speech
   60 ms, min silence 50 ms, 30 ms padding, run on the segment alone) is cut out and
   concatenated (the whole segment when none is found), then
   - `utmosv2`: UTMOSv2 on the trimmed audio (optional);
   - `wpm` = words / ((last word end - first word start) / 60) in the words' file order, 0 when
     that span is not positive; `speech_dur_s` that span;
   - `mean_pitch`, `std_pitch`: Praat pitch (parselmouth, 10 ms step, 50-600 Hz) over voiced
     frames (f0 > 0, <= 600 Hz), float32, std with ddof 1; librosa.pyin when parselmouth is
     missing or fails;
   - `mean_intensity`, `std_intensity`: Praat intensity (10 ms) over frames above -200 dB;
     librosa RMS dB, then a 10 ms RMS dB of our own when those are missing or fail.
   An empty segment has no features ({}).
3. **Aggregation** over samples (`aggregate`): per side and feature, the finite values; with at
   least 3, those outside the 5th-95th percentile (numpy linear) are dropped; then the mean.
   Upstream aggregates pre and post only.

Audio is (channels, frames) float32 at 16 kHz (`vad.adaptation_feed`); words are output.json
chunks {"text", "timestamp": [start, end]}.
"""

from __future__ import annotations

import math
import os
import tempfile
from typing import Callable

import numpy as np

from duplexeval_common.errors import InputError, MissingDependency
from duplexeval_common.vad import SR

from . import vad

FEATURES = ("utmosv2", "wpm", "speech_dur_s", "mean_pitch", "std_pitch", "mean_intensity", "std_intensity")
PITCH_FLOOR_HZ, PITCH_CEILING_HZ, FRAME_S = 50.0, 600.0, 0.01
TRIM_PROP, MIN_N = 0.05, 3
UTMOS_HINT = ("install UTMOSv2 (pip install git+https://github.com/sarulab-speech/UTMOSv2.git) and place its "
              "pretrained weights where that package finds them; duplexeval never downloads them")

ProbsFn = Callable[[np.ndarray], np.ndarray]


# ---- words ----

def word_time(chunk, sample: str = "-", name: str = "output.json") -> tuple[float, float] | None:
    """A word's (start, end), None when it has no two-element timestamp (upstream skips it). A
    null or non-numeric time stops upstream's script, so it is an InputError here."""
    if not isinstance(chunk, dict):
        raise InputError(sample, f"{name}: a chunk is not an object", "bad-words")
    ts = chunk.get("timestamp")
    if ts is None:
        ts = chunk.get("timestamps")
    if not ts or len(ts) < 2:
        return None
    try:
        return float(ts[0]), float(ts[1])
    except (TypeError, ValueError):
        raise InputError(sample, f"{name}: word {str(chunk.get('text'))[:30]!r} has timestamp {ts!r}: "
                                 "upstream's eval_general_before_after.py needs two numbers", "bad-words") from None


def split_time(overlap_end: float, chunks: list, duration_s: float, sample: str = "-") -> float:
    """The word-aligned split (rule 1), clamped to [0, duration_s]."""
    times = [t for t in (word_time(c, sample) for c in chunks) if t is not None]
    t = overlap_end
    if times:
        times.sort(key=lambda p: p[0])
        t = times[-1][1]
        for s, e in times:
            if overlap_end < s or s <= overlap_end < e:
                t = s
                break
    return max(0.0, min(duration_s, t))


def partition(chunks: list, split_t: float, sample: str = "-") -> tuple[list, list]:
    """(pre, post) words: pre when end <= split_t; words without a timestamp are dropped."""
    pre, post = [], []
    for c in chunks:
        t = word_time(c, sample)
        if t is not None:
            (pre if t[1] <= split_t else post).append(c)
    return pre, post


def speaking_rate(chunks: list, sample: str = "-", name: str = "output.json") -> tuple[float, float]:
    """(wpm, speech_dur_s) of a word list in its own order."""
    if not chunks:
        return 0.0, 0.0
    first, last = word_time(chunks[0], sample, name), word_time(chunks[-1], sample, name)
    if first is None or last is None:
        raise InputError(sample, f"{name}: its first or last word has no [start, end] (upstream's "
                                 "eval_general_before_after.py stops on it)", "bad-words")
    span = last[1] - first[0]
    span = span if span >= 0 else 0.0
    if span <= 0:
        return 0.0, float(span)
    return float(len(chunks) / (span / 60.0)), float(span)


# ---- audio ----

def slice_audio(wav: np.ndarray, start_s: float, end_s: float, sr: int = SR) -> np.ndarray:
    """wav[:, round(start_s sr):round(end_s sr)], each index clamped to [0, frames]."""
    n = wav.shape[-1]
    a = max(0, min(n, int(round(start_s * sr))))
    b = max(0, min(n, int(round(end_s * sr))))
    return wav[..., a:b] if b > a else wav[..., :0]


def mono(wav: np.ndarray) -> np.ndarray:
    """The channel mean in float32 (1-D)."""
    return wav[0] if wav.shape[0] == 1 else wav.mean(axis=0, dtype=np.float32)


def trim(wav: np.ndarray, speech_probs: ProbsFn) -> np.ndarray:
    """The segment's speech, cut out and concatenated; the whole segment when there is none."""
    x = mono(wav)
    segs = vad.segments(speech_probs(x), len(x), vad.TRIM_SETTINGS)
    if not segs:
        return wav
    parts = [slice_audio(wav, s / SR, e / SR) for s, e in segs]
    return np.concatenate(parts, axis=-1) if len(parts) > 1 else parts[0]


def _parselmouth():
    try:
        import parselmouth
        return parselmouth
    except Exception:
        return None


def _librosa():
    try:
        import librosa
        return librosa
    except Exception:
        return None


def _f0(x: np.ndarray, sr: int) -> np.ndarray | None:
    pm = _parselmouth()
    if pm is not None:
        try:
            pitch = pm.Sound(x, sampling_frequency=sr).to_pitch(
                time_step=FRAME_S, pitch_floor=PITCH_FLOOR_HZ, pitch_ceiling=PITCH_CEILING_HZ)
            return pitch.selected_array["frequency"].astype(np.float32)
        except Exception:
            pass
    lb = _librosa()
    if lb is not None:
        try:
            hop = max(1, int(round(sr * FRAME_S)))
            f0, _, _ = lb.pyin(x.astype(np.float32), fmin=PITCH_FLOOR_HZ, fmax=PITCH_CEILING_HZ, sr=sr,
                               hop_length=hop)
            return f0.astype(np.float32)
        except Exception:
            pass
    return None


def pitch_stats(x: np.ndarray, sr: int = SR) -> tuple[float, float]:
    """(mean, std) of voiced f0 in Hz. Upstream's last resort without parselmouth and librosa
    is torchaudio's detect_pitch_frequency, which is not reproduced: MissingDependency then."""
    f0 = _f0(np.asarray(x, dtype=np.float32), sr)
    if f0 is None:
        raise MissingDependency("the official pitch (praat-parselmouth, or librosa)",
                                "pip install praat-parselmouth==0.4.7")
    keep = ~np.isnan(f0) & (f0 > 0) & (f0 <= PITCH_CEILING_HZ)
    v = f0[keep]
    if v.size == 0:
        return 0.0, 0.0
    if v.size == 1:
        return float(v[0]), 0.0
    return float(np.mean(v)), float(np.std(v, ddof=1))


def _db_frames(x: np.ndarray, sr: int) -> np.ndarray | None:
    pm = _parselmouth()
    if pm is not None:
        try:
            vals = pm.Sound(x, sampling_frequency=sr).to_intensity(time_step=FRAME_S).values.T.flatten()
            vals = vals[vals > -200]
            if vals.size:
                return vals.astype(np.float32)
        except Exception:
            pass
    lb = _librosa()
    if lb is not None:
        try:
            hop = max(1, int(round(sr * FRAME_S)))
            rms = lb.feature.rms(y=x.astype(np.float32), frame_length=hop, hop_length=hop, center=False).squeeze(0)
            return (20.0 * np.log10(np.maximum(rms, 1e-10))).astype(np.float32)
        except Exception:
            pass
    hop = max(1, int(round(sr * FRAME_S)))
    out = []
    for a in range(0, x.shape[0], hop):
        frame = x[a:a + hop]
        if frame.size:
            out.append(20.0 * np.log10(np.sqrt(np.mean(frame ** 2) + 1e-10)))
    return np.array(out, dtype=np.float32) if out else None


def intensity_stats(x: np.ndarray, sr: int = SR) -> tuple[float, float]:
    """(mean, std) of the frame intensities in dB."""
    vals = _db_frames(np.asarray(x, dtype=np.float32), sr)
    if vals is None or vals.size == 0:
        return 0.0, 0.0
    if vals.size == 1:
        return float(vals[0]), 0.0
    return float(np.mean(vals)), float(np.std(vals, ddof=1))


def utmosv2_available() -> bool:
    from duplexeval_common.optional import has_module
    return has_module("utmosv2")


_UTMOS = None


def utmosv2_score(x: np.ndarray, sr: int = SR) -> float:
    """UTMOSv2 of a mono signal, as upstream asks it (a temporary WAV file, `predict`). Only when
    the package is installed; its weights must already be where it looks (hub access is turned
    off here)."""
    global _UTMOS
    from duplexeval_common.optional import import_optional
    if _UTMOS is None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            import huggingface_hub.constants as hc
            hc.HF_HUB_OFFLINE = True
        except Exception:
            pass
        utmosv2 = import_optional("UTMOSv2", "utmosv2", UTMOS_HINT)
        try:
            _UTMOS = utmosv2.create_model(pretrained=True)
        except Exception as exc:
            raise MissingDependency(f"UTMOSv2's pretrained weights ({type(exc).__name__})", UTMOS_HINT) from None
    import soundfile as sf
    with tempfile.NamedTemporaryFile(suffix=".wav", delete=False) as f:
        path = f.name
    try:
        sf.write(path, np.asarray(x, dtype=np.float32), sr, subtype="FLOAT")
        return float(_UTMOS.predict(input_path=path))
    finally:
        os.unlink(path)


def segment_features(wav: np.ndarray, chunks: list, speech_probs: ProbsFn = vad.speech_probs, *,
                     utmosv2: bool = False, sample: str = "-", name: str = "output.json") -> dict:
    """Rule 2 on one segment: wav (channels, frames) float32 at 16 kHz and its words."""
    if wav.size == 0:
        return {}
    t = trim(wav, speech_probs)
    if t.size == 0:
        return {}
    out: dict = {}
    x = mono(t)
    if utmosv2:
        try:
            out["utmosv2"] = utmosv2_score(x)
        except MissingDependency:
            raise
        except Exception:
            out["utmosv2"] = float("nan")
    out["wpm"], out["speech_dur_s"] = speaking_rate(chunks, sample, name)
    out["mean_pitch"], out["std_pitch"] = pitch_stats(x)
    out["mean_intensity"], out["std_intensity"] = intensity_stats(x)
    return out


def sample_features(output: np.ndarray, words: list, overlap_end: float, clean: np.ndarray | None = None,
                    clean_words: list | None = None, speech_probs: ProbsFn = vad.speech_probs, *,
                    utmosv2: bool = False, sample: str = "-") -> dict:
    """One sample's general_split.json (without upstream's cache of earlier values):
    {"pre", "post", "clean" (when the clean run is given), "split_t", "distractor_end",
    "pre_dur_s", "post_dur_s"}."""
    total = output.shape[-1] / SR
    split = split_time(overlap_end, words, total, sample)
    pre_w, post_w = partition(words, split, sample)
    res = {
        "pre": segment_features(slice_audio(output, 0.0, split), pre_w, speech_probs, utmosv2=utmosv2, sample=sample),
        "post": segment_features(slice_audio(output, split, total), post_w, speech_probs, utmosv2=utmosv2,
                                 sample=sample),
        "split_t": float(split),
        "distractor_end": float(overlap_end),
        "pre_dur_s": float(split),
        "post_dur_s": float(max(0.0, total - split)),
    }
    if clean is not None and clean_words is not None:
        c = segment_features(clean, clean_words, speech_probs, utmosv2=utmosv2, sample=sample,
                             name="clean_output.json")
        if c:
            res["clean"] = c
    return res


def window_features(output: np.ndarray, words: list, clean: np.ndarray, clean_words: list, split_t: float,
                    speech_probs: ProbsFn = vad.speech_probs, *, utmosv2: bool = False, sample: str = "-") -> dict:
    """Unified: the features of the same window [split_t, T] in both runs, {"post": overlap run,
    "clean_post": clean run} (words: those ending after split_t, as `partition` puts them)."""
    total = output.shape[-1] / SR
    _, post_w = partition(words, split_t, sample)
    _, clean_w = partition(clean_words, split_t, sample)
    return {"post": segment_features(slice_audio(output, split_t, total), post_w, speech_probs, utmosv2=utmosv2,
                                     sample=sample),
            "clean_post": segment_features(slice_audio(clean, split_t, total), clean_w, speech_probs,
                                           utmosv2=utmosv2, sample=sample, name="clean_output.json")}


def trimmed(vals: list[float], prop: float = TRIM_PROP, min_n: int = MIN_N) -> list[float]:
    """The values inside [P(prop), P(1 - prop)] (numpy percentiles), all of them below min_n."""
    vals = [float(v) for v in vals if v is not None and not math.isnan(v)]
    if len(vals) < min_n:
        return vals
    lo = np.percentile(vals, prop * 100.0)
    hi = np.percentile(vals, 100.0 - prop * 100.0)
    return [v for v in vals if lo <= v <= hi]


def aggregate(results: list[dict], sides: tuple[str, ...] = ("pre", "post")) -> dict:
    """Rule 3: {side: {feature: trimmed mean}} over the samples' results, in the given order
    (upstream: pre and post only; a "clean" side is our addition, labelled so by the caller)."""
    out = {}
    for side in sides:
        keys = sorted({k for r in results for k in (r.get(side) or {})})
        agg = {}
        for k in keys:
            vals = []
            for r in results:
                v = (r.get(side) or {}).get(k)
                if v is None:
                    continue
                try:
                    fv = float(v)
                except (TypeError, ValueError):
                    continue
                if not math.isnan(fv):
                    vals.append(fv)
            kept = trimmed(vals)
            if kept:
                agg[k] = float(sum(kept) / len(kept))
        out[side] = agg
    return out
