"""The model's speech on a session's output.wav: Silero VAD speech probabilities (cached by file
content, duplexeval_common.vadcache) segmented with the unified settings (silero defaults, no
padding; duplexeval_common.vad.unified_segments), as (start_s, end_s) intervals."""

from __future__ import annotations

from pathlib import Path

from duplexeval_common.vad import SR, model_info, unified_feed, unified_segments
from duplexeval_common.vadcache import Job, ProbStore, default_root, ensure, hash_files

BACKEND = "onnx"


def vad_record() -> dict:
    """What metrics.json says of the VAD (package, version, model hash, settings)."""
    info = {k: v for k, v in model_info(BACKEND).items() if k != "path"}
    return {**info, "settings": "duplexeval_common.vad.UNIFIED_SETTINGS"}


def model_speech(paths: list[Path], cache: Path | None = None, workers: int = 1) -> dict[Path, list]:
    """{output.wav path: [(start_s, end_s), ...]} of each file's speech."""
    import soundfile as sf
    if not paths:
        return {}
    infos = {p: sf.info(str(p)) for p in paths}
    feeds = {p: unified_feed(int(i.samplerate), int(i.channels)) for p, i in infos.items()}
    shas = hash_files(list(paths), workers)
    jobs = [Job(p, shas[p], feeds[p], infos[p].frames / infos[p].samplerate) for p in paths]
    got = ensure(jobs, ProbStore(cache or default_root(), BACKEND), workers, quiet=True)
    out = {}
    for p in paths:
        probs, n = got[(shas[p], feeds[p])]
        out[p] = [(round(s / SR, 6), round(e / SR, 6)) for s, e, _ in unified_segments(probs, n)]
    return out
