"""ChatTTS (2noise/ChatTTS) with local weights; optional, untested here without its weights.

Weights: a local copy of the ChatTTS model repository (asset/ and config/ as the 2Noise/ChatTTS
model repository lays them out) in $CHATTTS_DIR (or the `model_dir` argument), loaded with
upstream's public API `ChatTTS.Chat().load(source="custom", custom_path=DIR, compile=False)`;
nothing is downloaded. ChatTTS has no named voices: a speaker is drawn from its speaker
distribution, so a voice here is `seed:<n>` (the seed of that draw; default seed:2222).
Determinism: the speaker draw and the decoding are seeded (`InferCodeParams.manual_seed`), text
refinement is skipped, and the sampling settings are fixed. rate r picks ChatTTS's speed token
`[speed_k]`, k = round(5 r) clipped to 0..9 (5 is its normal speed).

When the package or the folder is missing: one line with the install hint, no traceback.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from duplexeval_common import optional
from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.settings import Spec

from .engines import RATE, model_dir_setting, voice_setting

WHAT = "tts engine 'chattts'"
DIR_ENV = "CHATTTS_DIR"
PACKAGE_HINT = "pip install ChatTTS==0.2.5 (it needs torch)"
WEIGHTS_HINT = (f"set {DIR_ENV} to a local copy of the 2Noise/ChatTTS model repository "
                "(its asset/ and config/ folders; e.g. fetched once elsewhere with "
                "huggingface-cli download 2Noise/ChatTTS)")
DEFAULT_VOICE = "seed:2222"
SAMPLING = {"temperature": 0.3, "top_P": 0.7, "top_K": 20}
SAMPLE_RATE = 24000


def weights_dir(model_dir: str | None = None) -> Path:
    from .engines import weights_folder
    return weights_folder(WHAT, DIR_ENV, WEIGHTS_HINT, "asset/", model_dir)


def parse_voice(voice: str) -> int:
    head, _, tail = voice.partition(":")
    if head != "seed" or not (tail.isascii() and tail.isdigit()):
        raise DuplexEvalError(f"tts engine 'chattts': unknown voice {voice!r}; voices are seed:<n> "
                              f"(a speaker drawn with seed n), e.g. {DEFAULT_VOICE}")
    return int(tail)


class ChatTTSEngine:
    name = "chattts"
    SETTINGS = Spec(voice_setting(DEFAULT_VOICE, "seed:<n>, the seed of the speaker draw"), RATE,
                    model_dir_setting(DIR_ENV))
    model_sha256 = None
    deterministic = True  # seeded; not verified here without the weights

    @staticmethod
    def available_voices() -> list[str]:
        """No named voices: any seed:<n> is one; the default is listed."""
        optional.require(WHAT, ["ChatTTS", "torch"], {"ChatTTS": PACKAGE_HINT, "torch": PACKAGE_HINT})
        weights_dir()
        return [DEFAULT_VOICE]

    def __init__(self, voice: str | None = None, rate: float = 1.0, *, model_dir: str | None = None):
        from .engines import check_rate
        self.rate = check_rate(self.name, rate)
        self.voice = DEFAULT_VOICE if voice is None else voice
        self.seed = parse_voice(self.voice)
        optional.require(WHAT, ["ChatTTS", "torch"], {"ChatTTS": PACKAGE_HINT, "torch": PACKAGE_HINT})
        folder = weights_dir(model_dir)
        chattts = optional.import_optional(WHAT, "ChatTTS", PACKAGE_HINT)
        torch = optional.import_optional(WHAT, "torch", PACKAGE_HINT)
        self._chat = chattts.Chat()
        ok = self._chat.load(source="custom", custom_path=str(folder), compile=False)
        if ok is False:
            raise DuplexEvalError(f"{WHAT}: could not load the weights in {folder} ({WEIGHTS_HINT})")
        torch.manual_seed(self.seed)
        speaker = self._chat.sample_random_speaker()
        self.speed_token = f"[speed_{min(9, max(0, round(5 * self.rate)))}]"
        self._params = chattts.Chat.InferCodeParams(spk_emb=speaker, prompt=self.speed_token,
                                                    manual_seed=self.seed, **SAMPLING)
        self.sample_rate = SAMPLE_RATE
        self.settings = {**SAMPLING, "seed": self.seed, "speed_token": self.speed_token,
                         "skip_refine_text": True, "weights_dir": folder.name,
                         "chattts": optional.version("ChatTTS"), "torch": torch.__version__}

    def synthesize(self, text: str) -> np.ndarray:
        wavs = self._chat.infer([text], skip_refine_text=True, params_infer_code=self._params)
        if not wavs:
            raise DuplexEvalError(f"{WHAT} gave no audio for {text!r}")
        return np.asarray(wavs[0], dtype=np.float32).ravel()
