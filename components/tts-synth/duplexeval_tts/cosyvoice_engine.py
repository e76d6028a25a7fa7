"""CosyVoice 2 (FunAudioLLM/CosyVoice) with local weights; optional, untested here without them.

Weights: a local copy of the CosyVoice2-0.5B model repository (cosyvoice2.yaml, llm.pt, flow.pt,
hift.pt, ...) in $COSYVOICE_DIR (or the `model_dir` argument), loaded with upstream's public API
`cosyvoice.cli.cosyvoice.CosyVoice2(model_dir)` (no JIT, no TensorRT, fp32); nothing is
downloaded. The package is upstream's source tree (not on PyPI): clone FunAudioLLM/CosyVoice,
install its requirements and put it and its third_party/Matcha-TTS on PYTHONPATH.

A voice is a speaker id the model lists (`list_available_spks()`, for `inference_sft`) or a
path to a prompt recording `x.wav` with its transcript in `x.txt` next to it (zero-shot
cloning, `inference_zero_shot`). rate r is CosyVoice's `speed`. Determinism: the random,
numpy and torch seeds are set to a fixed value before every text.

When the package or the folder is missing: one line with the install hint, no traceback.
"""

from __future__ import annotations

import inspect
import random
from pathlib import Path

import numpy as np

from duplexeval_common import optional
from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.hashing import sha256_file
from duplexeval_common.settings import Spec

from .engines import RATE, model_dir_setting, voice_setting

WHAT = "tts engine 'cosyvoice2'"
DIR_ENV = "COSYVOICE_DIR"
PACKAGE_HINT = ("git clone FunAudioLLM/CosyVoice, pip install its requirements.txt and put the clone and "
                "its third_party/Matcha-TTS on PYTHONPATH")
WEIGHTS_HINT = (f"set {DIR_ENV} to a local copy of the FunAudioLLM/CosyVoice2-0.5B model repository "
                "(e.g. fetched once elsewhere with modelscope or huggingface-cli)")
SEED = 1986


def weights_dir(model_dir: str | None = None) -> Path:
    from .engines import weights_folder
    return weights_folder(WHAT, DIR_ENV, WEIGHTS_HINT, "cosyvoice2.yaml", model_dir)


def _require_package() -> None:
    optional.require(WHAT, ["cosyvoice", "torch"], {"cosyvoice": PACKAGE_HINT, "torch": PACKAGE_HINT})


def _load(folder: Path):
    module = optional.import_optional(WHAT, "cosyvoice.cli.cosyvoice", PACKAGE_HINT)
    return module.CosyVoice2(str(folder), load_jit=False, load_trt=False, fp16=False)


class CosyVoice2Engine:
    name = "cosyvoice2"
    SETTINGS = Spec(voice_setting("the first speaker the model lists", "a speaker id the model lists, or a "
                                  "prompt x.wav with its transcript in x.txt"), RATE, model_dir_setting(DIR_ENV))
    deterministic = True  # seeded; not verified here without the weights

    @staticmethod
    def available_voices() -> list[str]:
        """The model's own speakers (zero-shot prompt WAVs work too)."""
        _require_package()
        return sorted(_load(weights_dir()).list_available_spks())

    def __init__(self, voice: str | None = None, rate: float = 1.0, *, model_dir: str | None = None):
        from .engines import check_rate, unknown_voice
        self.rate = check_rate(self.name, rate)
        _require_package()
        folder = weights_dir(model_dir)
        torch = optional.import_optional(WHAT, "torch", PACKAGE_HINT)
        self._torch = torch
        self._model = _load(folder)
        speakers = sorted(self._model.list_available_spks())
        self._prompt = None
        if voice is None:
            if not speakers:
                raise DuplexEvalError(f"{WHAT}: the model lists no speakers; give a voice: a prompt x.wav "
                                      "with its transcript in x.txt")
            voice = speakers[0]
        self.voice = voice
        self.model_sha256 = sha256_file(folder / "llm.pt") if (folder / "llm.pt").is_file() else None
        if voice.endswith(".wav"):
            wav, txt = Path(voice), Path(voice).with_suffix(".txt")
            if not wav.is_file() or not txt.is_file():
                raise DuplexEvalError(f"{WHAT}: prompt voice {voice} needs the WAV and its transcript {txt.name}")
            self._prompt = (txt.read_text(encoding="utf-8").strip(), wav)
            self.prompt_sha256 = sha256_file(wav)
        elif voice not in speakers:
            raise unknown_voice(self.name, voice, speakers, " or a prompt x.wav with x.txt")
        self.sample_rate = int(self._model.sample_rate)
        self.settings = {"speed": self.rate, "seed": SEED, "stream": False, "jit": False, "trt": False,
                         "fp16": False, "mode": "zero_shot" if self._prompt else "sft",
                         "prompt_sha256": getattr(self, "prompt_sha256", None),
                         "weights_dir": folder.name, "torch": torch.__version__}

    def _seed(self) -> None:
        random.seed(SEED)
        np.random.seed(SEED)
        self._torch.manual_seed(SEED)

    def synthesize(self, text: str) -> np.ndarray:
        self._seed()
        if self._prompt is None:
            pieces = self._model.inference_sft(text, self.voice, stream=False, speed=self.rate)
        else:
            prompt_text, wav = self._prompt
            params = inspect.signature(self._model.inference_zero_shot).parameters
            if "prompt_wav" in params:  # newer upstream takes the file
                prompt = str(wav)
            else:  # older upstream takes 16 kHz samples
                file_utils = optional.import_optional(WHAT, "cosyvoice.utils.file_utils", PACKAGE_HINT)
                prompt = file_utils.load_wav(str(wav), 16000)
            pieces = self._model.inference_zero_shot(text, prompt_text, prompt, stream=False, speed=self.rate)
        chunks = [np.asarray(p["tts_speech"].detach().cpu().numpy(), dtype=np.float32).ravel() for p in pieces]
        if not chunks:
            raise DuplexEvalError(f"{WHAT} gave no audio for {text!r}")
        return np.concatenate(chunks)
