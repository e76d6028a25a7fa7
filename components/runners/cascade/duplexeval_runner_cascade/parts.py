"""The cascade's configurable parts beyond its offline defaults (cascade.py).

- ASR: an ASR backend of the asr-aligner component (duplexeval_asr.backends.BACKENDS), built with
  `asr_args` as its backend_args (checked against its declaration before anything loads), or
  SenseVoice (sensevoice.py). The component is imported only when one is chosen: in an image
  without it the runner answers with one line saying how to get it.
- LLM: any OpenAI-compatible chat endpoint through duplexeval_common.llm's one client (key from
  the environment variable `api_key_env`, never written; the reply scrubbed of it), the stage's
  seed and `temperature` sent, `max_new_tokens` as `max_tokens`, the reply made one speakable line.
  A request that fails for good fails the sample with the client's one-line reason.
- TTS: an engine of the tts-synth component (duplexeval_tts.engines.ENGINES), built with `tts_args`
  as its settings; its speech is trimmed of leading and trailing silence (as Piper's is), so a reply
  starts with sound where it is placed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from duplexeval_common.errors import DuplexEvalError, MissingDependency
from duplexeval_common.secrets import scrub

from duplexeval_runner.protocol import SessionFailed
from duplexeval_runner.settings import Setting
from duplexeval_runner_controls.tts import trim

from .llm import speakable

# The asr-aligner's backends that transcribe audio (not `precomputed`, which passes imported words
# through); tests/duplex_runner/test_cascade_parts.py checks this list against its registry.
ALIGNER_ASR = ("faster-whisper", "whisper-timestamped", "stable-ts", "parakeet")
ASR_BACKENDS = ("tiny.en", *ALIGNER_ASR, "sensevoice")
LLM_BACKENDS = ("smollm2", "openai")
# tts-synth's engines; its own `piper` engine is the default's voice again, so `piper` is the
# controls package's (the offline default)
SYNTH_TTS = ("espeak-ng", "kokoro", "flite", "openai", "chattts", "cosyvoice2")
TTS_ENGINES = ("piper", *SYNTH_TTS)

ASR_HINT = ("the asr-aligner component (pip install --no-deps -e components/asr-aligner, with its "
            "components/asr-aligner/requirements.txt; every package is in .venv after make setup)")
TTS_HINT = ("the tts-synth component (pip install --no-deps -e components/tts-synth, with its "
            "components/tts-synth/requirements.txt; every package is in .venv after make setup)")

SETTINGS = (
    Setting("asr_backend", str, "tiny.en", "the ASR: tiny.en (faster-whisper tiny.en, offline), an asr-aligner "
            "backend, or sensevoice (FunASR SenseVoiceSmall from a local folder)", choices=ASR_BACKENDS),
    Setting("asr_args", dict, None, "asr_backend other than tiny.en: its settings (an asr-aligner backend's "
            "backend_args; sensevoice: model, language, use_itn, device)"),
    Setting("llm_backend", str, "smollm2", "the LLM: smollm2 (SmolLM2-135M, offline) or openai (any "
            "OpenAI-compatible chat endpoint)", choices=LLM_BACKENDS),
    Setting("llm_url", str, None, "llm_backend openai: the endpoint's base URL (null: $OPENAI_BASE_URL or OpenAI's)"),
    Setting("llm_model", str, "gpt-4o", "llm_backend openai: the model name", nonempty=True),
    Setting("api_key_env", str, "OPENAI_API_KEY", "llm_backend openai: the environment variable holding the key",
            nonempty=True),
    Setting("llm_timeout_s", float, 60.0, "llm_backend openai: seconds one request may take", gt=0, le=3600),
    Setting("llm_max_retries", int, 2, "llm_backend openai: retries of a failed request (429, 5xx, timeouts) "
            "before the sample fails", ge=0, le=10),
    Setting("temperature", float, 0.0, "llm_backend openai: the sampling temperature sent", ge=0, le=2),
    Setting("tts_engine", str, "piper", "the TTS: piper (the joe voice, offline) or a tts-synth engine",
            choices=TTS_ENGINES),
    Setting("tts_args", dict, None, "tts_engine other than piper: its settings (voice, rate, model_dir, ...)"),
)


def model_key(part: Any, default: str) -> str:
    """The part's key in runner.json `models`: the default's name, or the part's own."""
    return getattr(part, "model_name", None) or default


def make_asr(args: dict):
    if args["asr_backend"] == "sensevoice":
        from .sensevoice import SenseVoiceASR
        return SenseVoiceASR(**_checked_sensevoice(args.get("asr_args") or {}))
    return AlignerASR(args["asr_backend"], args.get("asr_args") or {})


def _checked_sensevoice(kwargs: dict) -> dict:
    from duplexeval_common.cli import check_kwargs

    from .sensevoice import SenseVoiceASR
    check_kwargs("runner 'cascade': asr_args", SenseVoiceASR, kwargs)
    return kwargs


def _component(what: str, module: str, hint: str):
    import importlib
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingDependency(what, hint) from None


class AlignerASR:
    """An asr-aligner backend as the cascade's ASR: the text of a turn is its segments' (or words')."""

    deterministic = True

    def __init__(self, name: str, kwargs: dict):
        backends = _component(f"ASR backend {name!r}", "duplexeval_asr.backends", ASR_HINT)
        from duplexeval_common.cli import check_kwargs
        self.name, self.kwargs = name, dict(kwargs)
        self.model_name = name
        self._cls = backends.BACKENDS.load(name)  # an import that fails answers with its install hint
        check_kwargs(f"runner 'cascade': asr_args (ASR backend {name!r})", self._cls, self.kwargs)
        self._words_and_segments = backends.words_and_segments
        self._rate = backends.ASR_RATE
        self._model = None

    def load(self) -> None:
        if self._model is None:
            self._model = self._cls(**self.kwargs)

    def transcribe(self, audio16k: np.ndarray) -> str:
        self.load()
        words, segments = self._words_and_segments(self._model, np.asarray(audio16k, dtype=np.float32))
        pieces = [s.text for s in segments] if segments else [w.text for w in words]
        return " ".join(" ".join(p.split()) for p in pieces if p.strip()).strip()

    def settings(self) -> dict:
        return {"backend": self.name, "args": self.kwargs, **(dict(self._model.settings) if self._model else {})}

    def record(self) -> dict:
        m = self._model
        return {"backend": self.name, "model": getattr(m, "model", None), "model_sha256": getattr(m, "model_sha256", None)}


class EndpointLLM:
    """An OpenAI-compatible chat endpoint as the cascade's LLM (`reply(history) -> (text, tokens)`)."""

    deterministic = False  # a served model may answer differently
    model_name = "llm-endpoint"

    def __init__(self, args: dict, seed: int | None):
        from duplexeval_common.llm.client import ChatClient
        self.system_prompt = args["system_prompt"]
        self.model = args["llm_model"]
        self.seed = seed
        self.temperature = float(args["temperature"])
        self.max_tokens = int(args["max_new_tokens"])
        import os
        from duplexeval_runner import net
        url = args["llm_url"] or os.environ.get("OPENAI_BASE_URL", "").strip() or None
        if url is not None and os.environ.get(args["api_key_env"]):  # the key only crosses the network encrypted
            u = net.parse_url("cascade", url)
            net.refuse_clear_key("cascade", u.scheme, u.hostname, args["api_key_env"])
        self.client = ChatClient(base_url=url, api_key_env=args["api_key_env"],
                                 what="runner 'cascade' (llm_backend openai)", seed=seed,
                                 timeout_s=args["llm_timeout_s"], max_retries=args["llm_max_retries"],
                                 backoff_s=0.5, max_backoff_s=4.0)

    def load(self) -> None:
        pass

    def reply(self, history: list[dict]) -> tuple[str, int]:
        from duplexeval_common.llm.client import CallError
        messages = [{"role": "system", "content": self.system_prompt}, *history]
        try:
            c = self.client.complete(self.model, messages, seed=self.seed, temperature=self.temperature,
                                     extra={"max_tokens": self.max_tokens})
        except CallError as exc:
            raise SessionFailed(f"runner 'cascade': the LLM endpoint: {exc}") from None
        text = speakable(scrub(c.text, self.client.secrets()))  # a served reply may echo the key
        return text, int(c.tokens_out or 0)

    def secrets(self) -> tuple[str, ...]:
        return self.client.secrets()

    def settings(self) -> dict:
        return {"backend": "openai", "model": self.model, "base_url": self.client.base_url,
                "temperature": self.temperature, "seed": self.seed, "max_tokens": self.max_tokens,
                "system_prompt": self.system_prompt}

    def record(self) -> dict:
        return {"model": self.model, "base_url": self.client.base_url}


class EngineTTS:
    """A tts-synth engine as the cascade's TTS (`synthesize(text) -> float32 at .sr`)."""

    def __init__(self, args: dict):
        engines = _component(f"tts engine {args['tts_engine']!r}", "duplexeval_tts.engines", TTS_HINT)
        from duplexeval_common.cli import check_kwargs
        self.name = args["tts_engine"]
        self.model_name = f"tts-{self.name}"
        self.kwargs = dict(args.get("tts_args") or {})
        self._cls = engines.ENGINES.load(self.name)  # an import that fails answers with its install hint
        check_kwargs(f"runner 'cascade': tts_args (tts engine {self.name!r})", self._cls, self.kwargs)
        self.local = self.name != "openai"  # warming up a hosted engine would spend a request
        self._engine = None

    def load(self) -> None:
        if self._engine is None:
            self._engine = self._cls(**self.kwargs)

    @property
    def sr(self) -> int:
        self.load()
        return int(self._engine.sample_rate)

    @property
    def deterministic(self) -> bool:
        return bool(getattr(self._cls, "deterministic", False)) if self._engine is None else \
            bool(self._engine.deterministic)

    def synthesize(self, text: str) -> np.ndarray:
        self.load()
        try:
            audio = self._engine.synthesize(text)
        except DuplexEvalError as exc:
            raise SessionFailed(f"runner 'cascade': {exc}") from None
        return trim(np.asarray(audio, dtype=np.float32).reshape(-1))

    def settings(self) -> dict:
        e = self._engine
        return {"engine": self.name, "args": self.kwargs,
                **({"voice": e.voice, **dict(e.settings)} if e is not None else {})}

    def record(self) -> dict:
        e = self._engine
        return {"engine": self.name, "voice": getattr(e, "voice", None), "model_sha256": getattr(e, "model_sha256", None)}
