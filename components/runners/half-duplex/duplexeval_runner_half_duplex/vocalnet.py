"""The `vocalnet` backend: VocalNet (SJTU-OmniAgent/VocalNet @ bdf01d2) in process, with its own
inference code, `omni_speech/infer/vocalnet.py`.

That code is not on PyPI and is imported from its checkout (on PYTHONPATH, or `code_dir`); without
it the runner says in one line how to get it (vocalnet_hint.py). Per user turn, as upstream's
`__main__` does: `VocalNetModel(model_dir, vocoder_path=cosyvoice_dir, s2s=True, temperature,
max_new_tokens, top_p, num_beams=1)`, `__initilize__()` once, then `model([{"role": "user",
"content": "<speech>", "path": <the turn as a 16 kHz WAV>}])`, which returns the reply's text and
writes its speech (CosyVoice2's flow matching and HiFT, 24 kHz) to the audio folder. Upstream's
inference takes one turn and no history, so the history is not given to it; its speaker prompt is
upstream's module-level PROMPT_SPEECH (`prompt_wav`, relative to the checkout). Upstream puts the
model on CUDA unconditionally: it needs a GPU.

Not run here: the upstream code imports whisper, CosyVoice, HyperPyYAML and WeTextProcessing and
pins torch 2.1 and transformers 4.43 (its pyproject.toml), none importable in this environment, and
the weights are not available offline; README.md says so.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import tempfile
from pathlib import Path
from typing import Callable

import numpy as np
import soundfile as sf

from duplexeval_common.errors import MissingDependency
from duplexeval_common.wavio import resample

from duplexeval_runner.protocol import SessionFailed
from duplexeval_runner.settings import from_env
from duplexeval_runner_controls import vad

from .turns import Answer, Step, timed
from .vocalnet_hint import HINT, UPSTREAM

SR = 24000  # CosyVoice2's output rate (upstream's CosyvoiceVocoder)


class VocalNet:
    parts = ("llm",)
    out_sr = SR
    deterministic = False  # CosyVoice2's flow matching draws noise; not verified here

    def __init__(self, runner: str, args: dict):
        self.runner = runner
        code = args["code_dir"]
        if code and str(Path(code)) not in sys.path:
            sys.path.insert(0, str(Path(code)))
        spec = importlib.util.find_spec("omni_speech")
        if spec is None or not spec.submodule_search_locations:
            raise MissingDependency("VocalNet (its inference code, omni_speech, is not importable)", HINT)
        self.code = Path(list(spec.submodule_search_locations)[0]).parent
        self.model_dir = from_env(args["model_dir"], "MODEL_DIR")
        self.vocoder_dir = args["cosyvoice_dir"]
        for what, value in (("its weights (MODEL_DIR)", self.model_dir),
                            ("CosyVoice2-0.5B (runner_args cosyvoice_dir)", self.vocoder_dir)):
            if not value or not Path(value).is_dir():
                raise MissingDependency(f"VocalNet: {what} not found", HINT)
        self.prompt = self.code / args["prompt_wav"]
        self.opts = {"temperature": float(args["vocalnet_temperature"]), "max_new_tokens": int(args["max_new_tokens"]),
                     "top_p": float(args["top_p"]), "num_beams": 1}
        self._model = None
        self._dir = None

    def loaders(self) -> list[tuple[str, Callable[[], None]]]:
        return [("vocalnet", self.load)]

    def load(self) -> None:
        if self._model is not None:
            return
        mod = importlib.import_module("omni_speech.infer.vocalnet")
        mod.PROMPT_SPEECH = str(self.prompt)  # upstream's is relative to its checkout
        self._model = mod.VocalNetModel(str(self.model_dir), vocoder_path=str(self.vocoder_dir), s2s=True, **self.opts)
        self._model.__initilize__()
        self._dir = tempfile.TemporaryDirectory(prefix="duplexeval-vocalnet-")
        self._model.set_audio_dir(self._dir.name)

    def warmup(self) -> None:
        self._call(np.zeros(vad.SR, dtype=np.float32), 0)

    def _call(self, audio: np.ndarray, n: int) -> dict:
        self.load()
        path = Path(self._dir.name) / f"turn-{n}.wav"
        sf.write(str(path), np.clip(audio, -1, 1), vad.SR, subtype="PCM_16")
        return self._model([{"role": "user", "content": "<speech>", "path": str(path)}])

    def answer(self, audio: np.ndarray, history: list[dict], log: Callable[[Step], None]) -> Answer:
        try:
            out, seconds = timed(self._call, audio, len(history) + 1)
            x, sr = sf.read(str(out["audio"]), dtype="float32", always_2d=True)
        except (RuntimeError, OSError, KeyError, ValueError) as exc:
            raise SessionFailed(f"runner {self.runner!r}: VocalNet failed on the turn "
                                f"({type(exc).__name__}: {' '.join(str(exc).split())[:200]})") from None
        speech = x.mean(axis=1).astype(np.float32)
        if sr != SR and len(speech):
            speech = resample(speech, sr, SR).astype(np.float32)
        text = " ".join(str(out.get("text", "")).split())
        step = Step("llm", seconds, {"text": text, "audio_s": round(len(speech) / SR, 6)})
        log(step)
        if not len(speech):
            return Answer([step], user="<speech>")
        return Answer([step], user="<speech>", text=text, speech=speech)

    def settings(self) -> dict:
        return {"vocalnet": {"upstream": UPSTREAM, "model_dir": str(self.model_dir), "cosyvoice_dir": str(self.vocoder_dir),
                             "prompt_wav": str(self.prompt), **self.opts, "history": "none (upstream takes one turn)"}}

    def models(self) -> dict:
        return {"vocalnet": {"upstream": UPSTREAM, "model_dir": str(self.model_dir)}}
