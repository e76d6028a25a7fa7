"""`replay`: the outputs of a Full-Duplex-Bench tree made elsewhere, as this pipeline's runner output.

An OfflineRunner (clock "simulated"): nothing listens live; for each sample it reads
`<tree>/<subset>/<id>/output.wav` of an official-layout output tree (the layout the official
clients write and the aggregator loads: subset folders named like the dataset's subsets, ending
with pause_handling, turn_taking, backchannel or user_interruption; one folder per sample id),
checks it against the sample's input and hands it to the core, which writes it as output.wav.

Checks, each failing only its sample with a one-line reason that names the sample and the problem:
the file exists, is a file, is no link leading out of the tree, is readable audio, mono, finite;
its rate is the input's (or `resample` is true); its length is the input's to within
`max_length_diff_s` (default 0.1 s), after which it is padded with silence or trimmed to exactly
the input's length, as the official clients pad or trim their outputs.

Rates: `resample` defaults to true. The official clients write their outputs at the model's
rate (24 kHz for Moshi, Freeze-Omni, Gemini and Sonic, 48 kHz for GPT-Realtime, whatever the
input's rate) and the official evaluator reads them as they are; this pipeline's output.wav is at
the input's rate, so a replayed 24 kHz output is resampled once to it (the same polyphase
resampler the core uses for every runner whose `out_sr` differs from the input's), which changes
no timing. With `resample: false` a rate other than the input's fails the sample instead.

Deterministic: the output depends only on the file, whose sha256 (of the bytes actually decoded)
is recorded per sample in runner.json (`models.replay`).

Multi-round samples (duplexeval_runner/rounds.py): `history` "external". The tree's
`<subset>/<dialogue_id>-r<kk>/output.wav` was made elsewhere, however that system met the history;
it is taken as it is (checked like any other), and the core still puts the GT history (history.wav)
before the round's start_s, so every runner's round output has the same GT past.
"""

from __future__ import annotations

import hashlib
import io
import os
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf

from duplexeval_common.samples import inside
from duplexeval_common.wavio import fit_length, resample

from duplexeval_runner.events import EventLog
from duplexeval_runner.protocol import OfflineRunner, SampleInfo, SessionFailed
from duplexeval_runner.settings import Setting, Spec

NAME = "replay"
FILE = "output.wav"
SETTINGS = Spec(
    Setting("tree", str, None, "the output tree's folder: `<tree>/<subset>/<id>/output.wav` per sample "
            "(`REPLAY_TREE` through the catalog)", path="dir",
            required=f"the folder of a Full-Duplex-Bench output tree, <tree>/<subset>/<id>/{FILE}"),
    Setting("resample", bool, True, "convert an output at another rate to the input's (false: such a sample fails)"),
    Setting("max_length_diff_s", float, 0.1, "|output - input| duration allowed before padding or trimming, in "
            "seconds (more fails the sample)", ge=0),
)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


class ReplayRunner(OfflineRunner):
    name = NAME
    history = "external"  # see the module docstring (multi-round samples)
    clock = "simulated"
    deterministic = True
    in_sr = None
    out_sr = None
    SETTINGS = SETTINGS

    def __init__(self, seed: int | None = None, **args: Any):
        self.args, _ = self.SETTINGS.resolve(NAME, args)
        self.tree = Path(os.path.abspath(self.args["tree"]))
        self.seed = seed
        self._source: dict[str, Any] | None = None  # the file of the sample last replayed

    def run(self, user: np.ndarray, sr: int, *, log: EventLog, info: SampleInfo) -> np.ndarray:
        self._source = None
        n_in = len(user)
        path = self.tree / info.subset / info.id / FILE
        data = self._read(path, info.key)
        sha = hashlib.sha256(data).hexdigest()
        audio, file_sr = self._decode(data, info.key)
        d_in, d_file = n_in / sr, len(audio) / file_sr
        if file_sr != sr and not self.args["resample"]:
            self._fail(info.key, f"{FILE} is {file_sr} Hz, the input {sr} Hz (resample is false)")
        if abs(d_file - d_in) > self.args["max_length_diff_s"] + 1e-9:
            self._fail(info.key, f"{FILE} lasts {d_file:.3f} s, the input {d_in:.3f} s: "
                                 f"{abs(d_file - d_in):.3f} s apart, more than max_length_diff_s "
                                 f"{self.args['max_length_diff_s']} s")
        y = fit_length(resample(audio, file_sr, sr), n_in)
        rel = f"{info.subset}/{info.id}/{FILE}"
        self._source = {"file": rel, "sha256": sha, "sr": file_sr, "samples": len(audio)}
        log.emit("recv_audio", 0.0, file=rel, sha256=sha, sr=file_sr, n_samples=len(audio),
                 resampled=file_sr != sr)
        log.stats.update({"source_sr": file_sr, "source_s": round(d_file, 6),
                          "length_diff_s": round(d_file - d_in, 6), "resampled": file_sr != sr})
        return y

    def _fail(self, key: str, problem: str) -> None:
        raise SessionFailed(f"runner {NAME!r}: {key}: {problem}")

    def _read(self, path: Path, key: str) -> bytes:
        if not os.path.lexists(path):
            self._fail(key, f"{FILE} is missing from the tree ({path})")
        if not inside(self.tree, path):
            self._fail(key, f"{FILE} is a link leaving the tree ({path} -> {os.path.realpath(path)})")
        if not path.is_file():
            self._fail(key, f"{FILE} is not a file ({path})")
        try:
            return path.read_bytes()
        except OSError as exc:
            self._fail(key, f"{FILE} cannot be read ({_one_line(exc)})")

    def _decode(self, data: bytes, key: str) -> tuple[np.ndarray, int]:
        try:
            audio, sr = sf.read(io.BytesIO(data), dtype="float32", always_2d=True)
        except Exception as exc:  # soundfile raises several types for bad files
            why = getattr(exc, "error_string", None) or f"{type(exc).__name__}: {exc}"  # libsndfile's own words
            self._fail(key, f"{FILE} is not readable audio ({_one_line(why)})")
        if audio.shape[1] != 1:
            self._fail(key, f"{FILE} has {audio.shape[1]} channels, expected mono")
        if not np.isfinite(audio).all():
            self._fail(key, f"{FILE} holds non-finite samples")
        return np.ascontiguousarray(audio[:, 0]), int(sr)

    def settings(self) -> dict:
        return {"tree": str(self.tree), "resample": self.args["resample"],
                "max_length_diff_s": self.args["max_length_diff_s"]}

    def models(self) -> dict:
        """The replayed file of the sample just run (runner.json is written right after it)."""
        return {"replay": {"tree": str(self.tree), **self._source} if self._source else None}
