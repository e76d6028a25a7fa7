"""Judging with an LLM backend: the request, its cache, bounded re-asking, the ledger row.

One judgement is: render the prompt, look the request up in the cache, else ask the backend
(transport retries are the backend's) until the reply parses, at most `max_parse_attempts` times
(a deterministic backend is asked once; a prompt with `retry_seed_step` asks each further time
with the seed moved on by that step), and record the outcome:

    ok        the reply parsed; its score counts
    unparsed  no reply parsed after the attempts; no score, counted once as unparsed
    error     the request failed (after the transport retries); nothing is cached, a rerun asks again

The request hash is the sha256 of the canonical request: model, messages, seed, temperature and
the base URL without credentials. The outcome (ok or unparsed) is cached in the per-user cache,
`<user cache>/judge/<namespace>/<hash[:2]>/<hash>.json`, so the same request is never sent again
by any run on this machine (a cached `unparsed` made with fewer attempts than asked now is asked
again). Stage records are built from the cached entry in both cases, so a rerun writes the same
bytes; only the ledger's latency is wall time, and a cache hit carries the cached one.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from duplexeval_common.cache import private_dir, user_cache_dir
from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.hashing import sha256_json
from duplexeval_common.jsonio import atomic_write_json, read_json
from duplexeval_common.secrets import redact

from .client import CallError, Completion
from .prompts import Parsed, Prompt

CACHE_FORMAT = 1
SAME = object()  # "the engine's own setting"


class Backend(Protocol):
    kind: str
    deterministic: bool
    base_url: str
    calls: int

    def complete(self, model: str, messages: list[dict], seed: int | None, temperature: float | None,
                 prompt: Prompt | None = None) -> Completion: ...


@dataclass(frozen=True)
class Judgement:
    request_hash: str
    prompt: dict                  # {id, version, sha256}
    model: str                    # requested
    returned_model: str | None
    seed: int | None
    temperature: float | None
    base_url: str
    status: str                   # ok | unparsed | error
    attempts: int                 # replies asked for (parse attempts); HTTP requests are in `requests`
    requests: int                 # HTTP requests, transport retries included
    tokens_in: int | None
    tokens_out: int | None
    raw: str | None               # the final reply
    parsed: Parsed | None
    error: str | None
    latency_s: float | None       # wall time of the judgement when it was made (cached: the cached one)
    cached: bool                  # served from the cache in this run

    @property
    def score(self) -> float | int | None:
        return self.parsed.score if self.parsed else None

    def record(self) -> dict:
        """The deterministic part (no wall time, nothing about this run): judgement.json's fields."""
        p = self.parsed
        return {"request_hash": self.request_hash, "prompt": self.prompt, "model": self.model,
                "returned_model": self.returned_model, "seed": self.seed, "temperature": self.temperature,
                "base_url": self.base_url, "status": self.status, "attempts": self.attempts,
                "requests": self.requests, "tokens_in": self.tokens_in, "tokens_out": self.tokens_out,
                "raw": self.raw, "score": self.score,
                "score_detail": ({**p.extra, **({"value": p.value} if p.value is not None else {})}
                                 if p and (p.extra or p.value is not None) else None),
                "error": self.error}

    def ledger_row(self, sample: str | None = None) -> dict:
        return {**({"sample": sample} if sample else {}), **self.record(), "latency_s": self.latency_s}


def canonical_request(model: str, messages: list[dict], seed: int | None, temperature: float | None,
                      base_url: str) -> dict:
    return {"base_url": base_url, "messages": messages, "model": model, "seed": seed,
            "temperature": temperature}


class JudgeCache:
    """JSON entries by request hash under <user cache>/judge/<namespace>/."""

    def __init__(self, namespace: str, root: Path | None = None):
        self.dir = (root or user_cache_dir()) / "judge" / namespace

    def path(self, h: str) -> Path:
        return self.dir / h[:2] / f"{h}.json"

    def get(self, h: str) -> dict | None:
        p = self.path(h)
        try:
            entry = read_json(p)
        except (OSError, ValueError):
            return None
        try:  # an entry from another format, or damaged: a miss
            ok = (entry["request_hash"] == h and entry["status"] in ("ok", "unparsed")
                  and isinstance(entry["attempts"], int) and isinstance(entry["request"], dict)
                  and isinstance(entry["replies"], list) and isinstance(entry["replies"][-1]["text"], str))
        except (KeyError, IndexError, TypeError):
            ok = False
        return entry if ok else None

    def put(self, h: str, entry: dict) -> None:
        try:
            private_dir(self.path(h).parent)
            atomic_write_json(self.path(h), entry)
        except OSError:  # a read-only or full cache only costs a repeated request later
            pass


class JudgeEngine:
    """Judgements of one prompt with one backend and one set of settings (thread-safe)."""

    def __init__(self, backend: Backend, prompt: Prompt, model: str, seed: int | None,
                 temperature: float | None, max_parse_attempts: int = 3, max_concurrency: int = 4,
                 cache: JudgeCache | None = None, secrets: tuple[str, ...] = ()):
        if max_parse_attempts < 1 or max_concurrency < 1:
            raise DuplexEvalError("max_parse_attempts and max_concurrency must be at least 1")
        self.backend, self.prompt, self.model = backend, prompt, model
        self.seed, self.temperature = seed, temperature
        self.max_parse_attempts = 1 if backend.deterministic else int(max_parse_attempts)
        self.max_concurrency = int(max_concurrency)
        self.cache = cache
        self._secrets = secrets
        self._lock = threading.Lock()
        self._inflight: dict[str, threading.Lock] = {}
        self.cache_hits = 0
        self.tokens_in = 0       # spent in this run (cache hits cost nothing)
        self.tokens_out = 0

    def request(self, prompt: Prompt, fields: dict, seed: int | None) -> tuple[list[dict], str]:
        messages = prompt.render(**fields)
        req = canonical_request(self.model, messages, seed, self.temperature, self.backend.base_url)
        return messages, sha256_json(req)

    def judge(self, fields: dict, prompt: Prompt | None = None, seed: Any = SAME) -> Judgement:
        """One judgement (never raises for a failed request, except a fatal one: CallError).

        `seed` replaces the engine's seed for this request (e.g. independent runs of the turn
        segmentation, each its own request and cache entry)."""
        prompt = prompt or self.prompt
        seed = self.seed if seed is SAME else seed
        messages, h = self.request(prompt, fields, seed)
        with self._lock:
            same = self._inflight.setdefault(h, threading.Lock())
        with same:  # the same request twice at once (two identical samples) is sent once
            return self._judge(prompt, messages, h, seed)

    def _judge(self, prompt: Prompt, messages: list[dict], h: str, seed: int | None) -> Judgement:
        entry = self.cache.get(h) if self.cache else None
        if entry and entry.get("prompt", {}).get("sha256") == prompt.sha256 and \
                (entry["status"] == "ok" or entry["attempts"] >= self.max_parse_attempts):
            with self._lock:
                self.cache_hits += 1
            return self._from_entry(entry, prompt, cached=True)
        prepare = getattr(self.backend, "prepare", None)
        if prepare is not None:
            prepare()  # load a local model outside the judgement's latency
        t0 = time.monotonic()
        replies: list[Completion] = []
        requests = 0
        try:
            for i in range(self.max_parse_attempts):
                step = prompt.retry_seed_step if seed is not None else 0
                c = self.backend.complete(self.model, messages, seed + i * step if step else seed,
                                          self.temperature, prompt)
                replies.append(c)
                requests += c.attempts
                self._spend(c)
                if prompt.parse(c.text) is not None:
                    break
        except CallError as exc:
            if exc.fatal:
                raise
            return self._error(h, prompt, seed, replies, requests + exc.attempts, str(exc),
                               time.monotonic() - t0)
        last = replies[-1]
        entry = redact({
            "format": CACHE_FORMAT, "request_hash": h, "prompt": prompt.identity(),
            "request": canonical_request(self.model, messages, seed, self.temperature, self.backend.base_url),
            "status": "ok" if prompt.parse(last.text) is not None else "unparsed",
            "attempts": len(replies), "requests": requests,
            "replies": [{"text": r.text, "model": r.model, "tokens_in": r.tokens_in,
                         "tokens_out": r.tokens_out, **({"detail": r.detail} if r.detail is not None else {}),
                         **({"seed": seed + i * prompt.retry_seed_step}
                            if prompt.retry_seed_step and seed is not None else {})}
                        for i, r in enumerate(replies)],
            "latency_s": round(time.monotonic() - t0, 3)}, self._secrets)
        if self.cache:
            self.cache.put(h, entry)
        return self._from_entry(entry, prompt, cached=False)

    def judge_all(self, items: list[dict], prompt: Prompt | None = None,
                  seeds: list[int | None] | None = None) -> list[Judgement]:
        """Judgements of many field sets (each with its own seed when `seeds` is given), at most
        max_concurrency at once, in input order. A fatal error (a refused key, an unknown model)
        cancels the rest and is raised."""
        if not items:
            return []
        seeds = list(seeds) if seeds is not None else [SAME] * len(items)
        workers = min(self.max_concurrency, len(items))
        if workers == 1:
            return [self.judge(f, prompt, s) for f, s in zip(items, seeds)]
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="judge") as pool:
            futures = [pool.submit(self.judge, f, prompt, s) for f, s in zip(items, seeds)]
            try:
                return [f.result() for f in futures]
            except CallError:
                for f in futures:
                    f.cancel()
                raise

    def _spend(self, c: Completion) -> None:
        with self._lock:
            self.tokens_in += c.tokens_in or 0
            self.tokens_out += c.tokens_out or 0

    @staticmethod
    def _sum(values: list[int | None]) -> int | None:
        vals = [v for v in values if v is not None]
        return sum(vals) if vals else None

    def _from_entry(self, entry: dict, prompt: Prompt, cached: bool) -> Judgement:
        last = entry["replies"][-1]
        parsed = prompt.parse(last["text"])
        req = entry["request"]
        return Judgement(
            request_hash=entry["request_hash"], prompt=prompt.identity(), model=req["model"],
            returned_model=last.get("model"), seed=req["seed"], temperature=req["temperature"],
            base_url=req["base_url"], status="ok" if parsed is not None else "unparsed",
            attempts=entry["attempts"], requests=entry.get("requests", entry["attempts"]),
            tokens_in=self._sum([r.get("tokens_in") for r in entry["replies"]]),
            tokens_out=self._sum([r.get("tokens_out") for r in entry["replies"]]),
            raw=last["text"], parsed=parsed, error=None, latency_s=entry.get("latency_s"), cached=cached)

    def _error(self, h: str, prompt: Prompt, seed: int | None, replies: list[Completion], requests: int,
               error: str, latency: float) -> Judgement:
        return Judgement(
            request_hash=h, prompt=prompt.identity(), model=self.model,
            returned_model=replies[-1].model if replies else None, seed=seed,
            temperature=self.temperature, base_url=self.backend.base_url, status="error",
            attempts=len(replies) + 1, requests=requests,
            tokens_in=self._sum([r.tokens_in for r in replies]),
            tokens_out=self._sum([r.tokens_out for r in replies]),
            raw=replies[-1].text if replies else None, parsed=None,
            error=redact(error, self._secrets), latency_s=round(latency, 3), cached=False)

    def usage(self) -> dict:
        return {"calls": getattr(self.backend, "calls", 0), "cache_hits": self.cache_hits,
                "tokens_in": self.tokens_in, "tokens_out": self.tokens_out}


def cost(tokens_in: int, tokens_out: int, price: dict | None) -> float | None:
    if not price:
        return None
    return round(tokens_in / 1000 * float(price.get("input_per_1k", 0))
                 + tokens_out / 1000 * float(price.get("output_per_1k", 0)), 6)
