"""Round samples of a multi-round benchmark, made by the tests (tiny WAVs and a round.json in the
"mtr-round/1" shape of benchmarks/mtr/README.md), and what the tests read back."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from duplexeval_common.wavio import write_wav
from duplexeval_runner.rounds import Round

SUBSET = "smooth_features"
OPENER = "Hi, what can I do for you today?"


def gt_history(n: int, sr: int, start_s: float, level: float = 0.2) -> np.ndarray:
    """GT model audio: a 220 Hz tone over [0, start_s), zeros after (n samples at sr)."""
    t = np.arange(n) / sr
    x = (level * np.sin(2 * np.pi * 220 * t)).astype(np.float32)
    x[int(round(start_s * sr)):] = 0.0
    return x


def round_json(dialogue_id: str, k: int, start_s: float, end_s: float, history: list | None = None,
               **extra) -> dict:
    lines = history if history is not None else [
        {"role": "assistant", "start": 0.0, "end": 0.2, "text": OPENER}]
    return {"format": "mtr-round/1", "dialogue_id": dialogue_id, "round": k, "rounds": 10,
            "task": "features", "set": "smooth", "start_s": start_s, "end_s": end_s, "muted": [],
            "encoding": {"round": k, "scenario": "smooth-turntaking", "features": ["S"],
                         "timestamps": {"user_start": start_s, "user_end": end_s}},
            "history": lines, "user_lines": [], "source": "script", **extra}


def write_round(root: Path, sid: str, user: np.ndarray, history: np.ndarray | None, sr: int,
                meta: dict | str | None, subset: str = SUBSET) -> Path:
    """samples/<subset>/<sid>/: input.wav, history.wav (None: none), round.json (a str: written
    as it is; None: none, an ordinary sample)."""
    d = root / "samples" / subset / sid
    d.mkdir(parents=True, exist_ok=True)
    write_wav(d / "input.wav", user, sr)
    if history is not None:
        write_wav(d / "history.wav", history, sr)
    if meta is not None:
        (d / "round.json").write_text(meta if isinstance(meta, str) else json.dumps(meta))
    return d


def make_round(user: np.ndarray, sr: int, start_s: float, history: np.ndarray | None = None,
               lines: list | None = None) -> Round:
    """A Round for duplexeval_runner.harness.render (no files)."""
    end_s = len(user) / sr
    h = gt_history(len(user), sr, start_s) if history is None else history
    return Round(data=round_json("d1", 2, start_s, end_s, lines), start_s=start_s, end_s=end_s, history=h)
