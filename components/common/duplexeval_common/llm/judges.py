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
from duplexeval_common.settings import Setting, Spec

from .client import ChatClient
from .engine import JudgeCache, JudgeEngine, Judgement
from .prompts import Prompt

PRICE_KEYS = ("input_per_1k", "output_per_1k")


def _price(price: dict) -> bool:
    return bool(price) and not set(price) - set(PRICE_KEYS) and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0
        for v in price.values())


# What the LLM judges' declarations share (their judge_args, checked before anything loads)
PROMPT = Setting("prompt", Prompt, None, "the versioned prompt (a benchmark's; the judge stage passes the one "
                 "judge_args prompt names, or its task's)", expect="a versioned prompt (a benchmark's)")
CACHE = Setting("cache", bool, True, "keep each judgement in the per-user judge cache (a rerun asks again "
                "only what is not there)")


def check_settings(cls, args: dict) -> Prompt:
    """One line for the first bad judge argument (no network, nothing loaded); the prompt."""
    cls.SETTINGS.check(cls.what, args, noun="judge_args", named=True)
    prompt = args.get("prompt")
    if not isinstance(prompt, Prompt):
        raise DuplexEvalError(f"{cls.what}: prompt must be a versioned prompt (a benchmark's), got {prompt!r}")
    return prompt


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
    SETTINGS = Spec(
        Setting("model", str, None, "the model; null: the prompt's official one (e.g. gpt-4-turbo)", nonempty=True),
        Setting("base_url", str, None, "an OpenAI-compatible server (OpenAI, vLLM, Ollama); null: "
                "$OPENAI_BASE_URL, else OpenAI's", nonempty=True),
        Setting("api_key", str, None, "the key (only as the secret reference the orchestrator writes); null: "
                "the variable api_key_env names", secret=True),
        Setting("api_key_env", str, "OPENAI_API_KEY", "the environment variable holding the key", nonempty=True),
        PROMPT,
        Setting("temperature", float, None, "sampling temperature; null: the prompt's official one", ge=0, le=2),
        Setting("seed", int, None, "the request seed; null: the prompt's official one", ge=0),
        Setting("max_concurrency", int, 4, "requests at once", ge=1, le=256),
        Setting("max_retries", int, 4, "retries of a failed request", ge=0, le=100),
        Setting("timeout_s", float, 60.0, "the timeout of one request, in s", gt=0, le=3600),
        Setting("max_parse_attempts", int, 3, "requests for an item whose reply does not parse", ge=1, le=100),
        Setting("price", dict, None, "USD per 1000 tokens, for the cost in judge.json", check=_price,
                expect='{"input_per_1k": x, "output_per_1k": y} with non-negative numbers'),
        Setting("backoff_s", float, 1.0, "the first wait before a retry, in s (doubled each time)", ge=0, le=600),
        CACHE)

    @classmethod
    def check(cls, model: str | None = None, base_url: str | None = None, api_key: str | None = None,
              api_key_env: str = "OPENAI_API_KEY", prompt: Prompt | None = None,
              temperature: float | None = None, seed: int | None = None, max_concurrency: int = 4,
              max_retries: int = 4, timeout_s: float = 60.0, max_parse_attempts: int = 3,
              price: dict | None = None, backoff_s: float = 1.0, cache: bool = True) -> Prompt:
        return check_settings(cls, dict(
            model=model, base_url=base_url, api_key=api_key, api_key_env=api_key_env, prompt=prompt,
            temperature=temperature, seed=seed, max_concurrency=max_concurrency, max_retries=max_retries,
            timeout_s=timeout_s, max_parse_attempts=max_parse_attempts, price=price, backoff_s=backoff_s,
            cache=cache))

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
