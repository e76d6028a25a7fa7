"""LLM judges: `OpenAIJudge` (any OpenAI-compatible server; the judge component registers it as
`openai` and, unchanged, as `official-gpt`) over the one client (client.ChatClient) and the judging
engine (engine.JudgeEngine), for one versioned prompt (a benchmark's, prompts.PromptSet). Model,
seed and temperature default to that prompt's official settings, so `official-gpt` is `openai`
with nothing changed. A score is labelled official only when the model, seed and temperature are
the prompt's official ones (the prompt text is always the recorded template). `LocalLLMJudge`
(local.py) is the offline one.
"""

from __future__ import annotations

import math

from duplexeval_common import optional
from duplexeval_common.cache import cache_namespace
from duplexeval_common.errors import DuplexEvalError

from .client import ChatClient
from .engine import JudgeCache, JudgeEngine, Judgement
from .prompts import Prompt

PRICE_KEYS = ("input_per_1k", "output_per_1k")


def check_common(prompt: Prompt, max_concurrency: int, max_parse_attempts: int,
                 price: dict | None = None, **numbers: float) -> Prompt:
    """One line for the first bad judge argument (no network, nothing loaded)."""
    if not isinstance(prompt, Prompt):
        raise DuplexEvalError(f"judge: prompt must be a versioned prompt (a benchmark's), got {prompt!r}")
    p = prompt
    for name, value in (("max_concurrency", max_concurrency), ("max_parse_attempts", max_parse_attempts)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise DuplexEvalError(f"judge_args: {name} must be an integer of at least 1, got {value!r}")
    for name, value in numbers.items():
        if value is not None and (not isinstance(value, (int, float)) or isinstance(value, bool)
                                  or not math.isfinite(value) or value < 0):
            raise DuplexEvalError(f"judge_args: {name} must be a number of at least 0, got {value!r}")
    if price is not None:
        if not isinstance(price, dict) or not price or set(price) - set(PRICE_KEYS) or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 for v in price.values()):
            raise DuplexEvalError('judge_args: price must be {"input_per_1k": x, "output_per_1k": y} '
                                  f"(non-negative numbers), got {price!r}")
    return p


class LLMJudge:
    """What the stage needs of an LLM judge: an engine, a prompt, settings and a price."""

    name = "llm"
    official = False
    engine: JudgeEngine
    prompt: Prompt
    price: dict | None = None
    run_settings: dict = {}

    def judge_all(self, items: list[dict]) -> list[Judgement]:
        return self.engine.judge_all(items)

    def judge(self, fields: dict) -> Judgement:
        return self.engine.judge(fields)


class OpenAIJudge(LLMJudge):
    name = "openai"
    what = "judge 'openai'"

    @classmethod
    def check(cls, model: str | None = None, base_url: str | None = None, api_key: str | None = None,
              api_key_env: str = "OPENAI_API_KEY", prompt: Prompt | None = None,
              temperature: float | None = None, seed: int | None = None, max_concurrency: int = 4,
              max_retries: int = 4, timeout_s: float = 60.0, max_parse_attempts: int = 3,
              price: dict | None = None, backoff_s: float = 1.0, cache: bool = True) -> Prompt:
        if model is not None and (not isinstance(model, str) or not model):
            raise DuplexEvalError(f"judge_args: model must be a model name, got {model!r}")
        if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
            raise DuplexEvalError(f"judge_args: seed must be an integer, got {seed!r}")
        if not isinstance(max_retries, int) or isinstance(max_retries, bool) or max_retries < 0:
            raise DuplexEvalError(f"judge_args: max_retries must be an integer of at least 0, got {max_retries!r}")
        p = check_common(prompt, max_concurrency, max_parse_attempts, price, temperature=temperature,
                         timeout_s=timeout_s, backoff_s=backoff_s)
        if not timeout_s:
            raise DuplexEvalError("judge_args: timeout_s must be above 0")
        return p

    def __init__(self, model: str | None = None, base_url: str | None = None, api_key: str | None = None,
                 api_key_env: str = "OPENAI_API_KEY", prompt: Prompt | None = None,
                 temperature: float | None = None, seed: int | None = None, max_concurrency: int = 4,
                 max_retries: int = 4, timeout_s: float = 60.0, max_parse_attempts: int = 3,
                 price: dict | None = None, backoff_s: float = 1.0, cache: bool = True):
        # api_key: only ever the in-memory value of a secret the orchestrator moved into this
        # stage's environment (the settings file holds a ${DUPLEXEVAL_SECRET_n} reference).
        p = self.check(model, base_url, None, api_key_env, prompt, temperature, seed, max_concurrency,
                       max_retries, timeout_s, max_parse_attempts, price, backoff_s, cache)
        client = ChatClient(base_url=base_url, api_key=api_key, api_key_env=api_key_env, timeout_s=timeout_s,
                            max_retries=max_retries, backoff_s=backoff_s, what=self.what)
        self.prompt = p
        self.model = model or p.defaults["model"]
        seed = p.defaults["seed"] if seed is None else seed
        temperature = p.defaults["temperature"] if temperature is None else float(temperature)
        self.official = p.is_official(self.model, seed, temperature)
        self.price = dict(price) if price else None
        self.settings = {"backend": "openai", "base_url": client.base_url, "prompt": p.identity(),
                         "seed": seed, "temperature": temperature, "max_parse_attempts": max_parse_attempts}
        self.run_settings = {"api_key_env": api_key_env, "max_concurrency": max_concurrency,
                             "max_retries": max_retries, "timeout_s": timeout_s, "backoff_s": backoff_s,
                             "price": self.price, "cache": bool(cache),
                             "client": f"openai {optional.version('openai')}"}
        store = JudgeCache(cache_namespace("judge", backend="openai", format=1)) if cache else None
        self.engine = JudgeEngine(client, p, self.model, seed, temperature, max_parse_attempts,
                                  max_concurrency, store, secrets=client.secrets())


class OfficialGPT(OpenAIJudge):
    """`openai` with nothing changed: every default is the prompt's official setting (e.g. the
    Full-Duplex-Bench interruption prompt's gpt-4-turbo, seed 0), under the name a user expects."""

    name = "official-gpt"
    what = "the official GPT judge"
