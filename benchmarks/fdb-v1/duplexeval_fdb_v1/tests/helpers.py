"""Small hand-built Full-Duplex-Bench trees for the aggregator tests."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import soundfile as sf

from duplexeval_fdb_v1.score.tree import Sample


def wav(path: Path, seconds: float = 10.0, sr: int = 16000, audio: np.ndarray | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if audio is None:
        audio = np.zeros(int(round(seconds * sr)), np.float32)
    sf.write(path, audio, sr, subtype="PCM_16")


def words_json(words: list) -> dict:
    """words: [(start, end_or_None)] or [(text, start, end)]."""
    chunks = []
    for w in words:
        text, s, e = w if len(w) == 3 else ("w", *w)
        chunks.append({"text": text, "timestamp": [s, e]})
    return {"text": " ".join(c["text"] for c in chunks), "chunks": chunks}


def sample_dir(tree: Path, subset: str, sid: str, *, T: float = 10.0, words=(), annotation=None,
               output_audio: np.ndarray | None = None, output_sr: int = 16000,
               skip: tuple = ()) -> Path:
    d = tree / subset / sid
    d.mkdir(parents=True, exist_ok=True)
    if "input.wav" not in skip:
        wav(d / "input.wav", T)
    if "output.wav" not in skip:
        if output_audio is not None:
            wav(d / "output.wav", sr=output_sr, audio=output_audio)
        else:
            wav(d / "output.wav", T, sr=output_sr)
    if "output.json" not in skip:
        (d / "output.json").write_text(json.dumps(words_json(list(words))))
    if annotation is not None:
        name = {"pause_handling": "pause.json", "turn_taking": "turn_taking.json",
                "user_interruption": "interrupt.json"}[next(k for k in ("pause_handling", "turn_taking",
                                                                        "user_interruption")
                                                             if subset.endswith(k))]
        (d / name).write_text(json.dumps(annotation))
    return d


def pause_ann(*pauses) -> list:
    return [{"text": "[PAUSE]", "timestamp": list(p)} for p in pauses]


def turn_ann(E: float) -> list:
    return [{"text": "[TURN-TAKING]", "timestamp": [E, E + 0.4]}]


def interrupt_ann(S: float, R: float) -> list:
    return [{"context": "context", "interrupt": "interrupt", "timestamp": [S, R]}]


def us(x: float) -> int:
    from duplexeval_common.timebase import to_us
    return to_us(x)


def mk(task: str, T: float = 10.0, words=(), reasons=(), **kw) -> Sample:
    """An in-memory eligible (or not) sample with times in seconds."""
    s = Sample("x_" + task, "0", task, Path("."), reasons=list(reasons), T_us=us(T))
    s.words = sorted((us(a), us(a if b is None else b)) for a, b in words)
    if "pauses" in kw:
        s.pauses = [(us(a), us(b)) for a, b in kw["pauses"]]
    if "E" in kw:
        s.E_us = us(kw["E"])
    if "S" in kw:
        s.S_us, s.R_us = us(kw["S"]), us(kw["R"])
    return s
