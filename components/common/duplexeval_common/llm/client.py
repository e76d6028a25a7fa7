"""The one client for every LLM call of duplexeval: OpenAI-compatible chat completions.

Any server that speaks the chat-completions API works (OpenAI, vLLM, Ollama, a test double):
base URL, model and key are settings. The key comes only from the environment (the variable
named by `api_key_env`, OPENAI_API_KEY by default) or from the in-memory `api_key` argument (a
secret the orchestrator moved into the stage's environment); it is held by the openai client
and never written: every message that leaves this module is scrubbed of it.

Transport retries are ours, not the SDK's (its own are switched off, so every attempt is
counted): 429, 408, 409 and 5xx answers, timeouts, dropped connections and malformed replies
(a body that is not a chat completion) are retried up to `max_retries` times with exponential
backoff and jitter, waiting what Retry-After (seconds, or retry-after-ms) asks for when the
server sends it. 401, 403 and 404 stop the stage (a wrong key, model or URL is the same for
every request); any other client error fails the one request.

A reply is read up to MAX_REPLY_BYTES (uncompressed: the client asks for identity encoding and
refuses any other), or the client's `max_reply_bytes` (a speech reply of the half-duplex runner is
megabytes): a longer one fails that request (not retried) as soon as the limit is passed, so a
server answering 10 MB costs a megabyte's reading, not the whole body's.

`complete(..., extra=...)` sends further request fields (`modalities`, `audio`, `max_tokens`); a
reply's `message.audio` (the base64 `data` and the `transcript` of a speech reply) comes back as
`Completion.detail["audio"]`.
"""

from __future__ import annotations

import functools
import os
import random
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable
from urllib.parse import urlsplit

from duplexeval_common import optional
from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.secrets import redact_url, scrub

OPENAI_HINT = "pip install openai==3.57.0"  # pinned as in components/judge/requirements.txt
OPENAI_DEFAULT_URL = "https://api.openai.com/v1"
RETRY_STATUS = {408, 409, 429}
FATAL_STATUS = {401: "the API key was refused", 403: "access denied", 404: "model or URL not found"}
MAX_RETRY_AFTER_S = 300.0  # a server asking for longer is waited for this long
MAX_REPLY_BYTES = 1 << 20  # a chat completion's body; a judge's reply is a few kilobytes


class ReplyTooLarge(Exception):
    """A reply body past MAX_REPLY_BYTES (or compressed, which would hide its size)."""


def _bounded(stream, limit: int):
    """The response stream, stopping past `limit` bytes (a SyncByteStream of the response's own
    httpx module, as the client requires)."""
    base = sys.modules[type(stream).__module__.split(".")[0]].SyncByteStream

    class Bounded(base):
        def __init__(self):
            self.n = 0

        def __iter__(self):
            for chunk in stream:
                self.n += len(chunk)
                if self.n > limit:
                    raise ReplyTooLarge(f"a reply of more than {limit} bytes")
                yield chunk

        def close(self) -> None:
            stream.close()
    return Bounded()


def _bound_reply(response, limit: int = MAX_REPLY_BYTES) -> None:
    """httpx response hook (before the body is read): refuse a declared size or an encoding
    that passes the limit, and bound the bytes actually read."""
    enc = response.headers.get("content-encoding", "identity").strip().lower()
    if enc not in ("", "identity"):
        raise ReplyTooLarge(f"a reply compressed with {enc[:40]!r} (asked for identity)")
    declared = response.headers.get("content-length")
    if declared is not None and declared.strip().isascii() and declared.strip().isdigit() and int(declared) > limit:
        raise ReplyTooLarge(f"a reply of {int(declared)} bytes, more than {limit}")
    response.stream = _bounded(response.stream, limit)


class CallError(DuplexEvalError):
    """A request that failed for good. `fatal`: every request would fail the same way."""

    def __init__(self, message: str, fatal: bool = False, attempts: int = 0):
        super().__init__(message)
        self.fatal = fatal
        self.attempts = attempts


class _Retry(Exception):
    def __init__(self, reason: str, wait_s: float | None = None):
        super().__init__(reason)
        self.reason, self.wait_s = reason, wait_s


@dataclass(frozen=True)
class Completion:
    text: str
    model: str | None          # the model the server says answered
    tokens_in: int | None
    tokens_out: int | None
    attempts: int = 1          # HTTP requests it took (transport retries included)
    detail: Any = None         # backend-specific extras (local-llm: the choices' log-probs)


def retry_after_s(headers: Any) -> float | None:
    """Seconds a 429/503 asks us to wait: `retry-after-ms`, or `Retry-After` in seconds."""
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 1e-3), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            s = float(value) * scale
        except (TypeError, ValueError):
            continue  # an HTTP date: fall back to our own backoff
        if s >= 0:
            return min(s, MAX_RETRY_AFTER_S)
    return None


def backoff_s(retry: int, base_s: float, cap_s: float, rng: random.Random) -> float:
    """Exponential backoff with jitter: a uniform draw in [1/2, 1] of min(cap, base * 2^retry)."""
    return min(cap_s, base_s * (2 ** retry)) * (0.5 + 0.5 * rng.random())


def is_openai_host(base_url: str | None) -> bool:
    host = (urlsplit(base_url).hostname or "") if base_url else "api.openai.com"
    return host == "api.openai.com"


class ChatClient:
    """Chat completions over the openai package, with our retries and counters (thread-safe)."""

    kind = "openai"
    deterministic = False

    def __init__(self, base_url: str | None = None, api_key: str | None = None,
                 api_key_env: str = "OPENAI_API_KEY", timeout_s: float = 60.0, max_retries: int = 4,
                 backoff_s: float = 1.0, max_backoff_s: float = 60.0, what: str = "the judge",
                 sleep: Callable[[float], None] = time.sleep, seed: int | None = None,
                 max_reply_bytes: int = MAX_REPLY_BYTES, verify: Any = True):
        openai = optional.import_optional(what, "openai", OPENAI_HINT)
        self._openai = openai
        base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        key = api_key or os.environ.get(api_key_env)
        if not key:
            if is_openai_host(base_url):
                raise DuplexEvalError(f"{what} needs an API key in ${api_key_env}")
            key = "unused"  # a local server (vLLM, Ollama) without authentication takes any value
        self._key = key
        self.max_reply_bytes = int(max_reply_bytes)
        hook = _bound_reply if self.max_reply_bytes == MAX_REPLY_BYTES else \
            functools.partial(_bound_reply, limit=self.max_reply_bytes)
        # verify: True (the system CAs), or an ssl.SSLContext (a pinned certificate, or none checked)
        http = openai.DefaultHttpxClient(event_hooks={"response": [hook]},
                                         **({} if verify is True else {"verify": verify}))
        self._client = openai.OpenAI(api_key=key, base_url=base_url, timeout=float(timeout_s), max_retries=0,
                                     http_client=http, default_headers={"Accept-Encoding": "identity"})
        self.base_url = redact_url(str(self._client.base_url).rstrip("/"))  # no credentials, ever
        self.timeout_s = float(timeout_s)
        self.max_retries = int(max_retries)
        self.backoff_s, self.max_backoff_s = float(backoff_s), float(max_backoff_s)
        self._sleep = sleep
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self.calls = 0           # HTTP requests sent
        self.retries = 0         # of which retries
        self.retry_reasons: dict[str, int] = {}

    def secrets(self) -> tuple[str, ...]:
        """The values that must never be written (for scrubbing records)."""
        return (self._key,) if self._key != "unused" else ()

    def _scrub(self, text: str) -> str:
        return scrub(text, self.secrets())

    def _count(self, retry_reason: str | None = None) -> None:
        with self._lock:
            self.calls += 1
            if retry_reason:
                self.retries += 1
                self.retry_reasons[retry_reason] = self.retry_reasons.get(retry_reason, 0) + 1

    def _wait(self, retry: int, wait_s: float | None) -> None:
        with self._lock:
            delay = wait_s if wait_s is not None else backoff_s(retry, self.backoff_s, self.max_backoff_s, self._rng)
        self._sleep(delay)

    def complete(self, model: str, messages: list[dict], seed: int | None = None,
                 temperature: float | None = None, prompt: Any = None,
                 extra: dict | None = None) -> Completion:
        """One chat completion; seed and temperature are sent only when not None, `extra`'s fields
        as given."""
        kwargs: dict[str, Any] = {"model": model, "messages": messages, **(extra or {})}
        if seed is not None:
            kwargs["seed"] = seed
        if temperature is not None:
            kwargs["temperature"] = temperature
        reason = None
        for attempt in range(self.max_retries + 1):
            self._count(reason)
            try:
                return self._once(kwargs, attempt + 1)
            except _Retry as r:
                reason = r.reason
                if attempt == self.max_retries:
                    break
                self._wait(attempt, r.wait_s)
        raise CallError(f"request to {self.base_url} failed after {self.max_retries + 1} attempts "
                        f"(last: {reason})", attempts=self.max_retries + 1)

    def _once(self, kwargs: dict, attempts: int) -> Completion:
        openai = self._openai
        try:
            resp = self._client.chat.completions.create(**kwargs)
        except ReplyTooLarge as exc:  # the same server would answer the same again: not retried
            raise CallError(f"request to {self.base_url} failed: {exc} (refused)", attempts=attempts) from None
        except openai.APITimeoutError:
            raise _Retry(f"timeout after {self.timeout_s:g} s") from None
        except openai.APIConnectionError as exc:
            raise _Retry(self._scrub(f"connection error: {exc}")[:200]) from None
        except openai.APIStatusError as exc:
            status = exc.status_code
            if status in RETRY_STATUS or status >= 500:
                raise _Retry(f"HTTP {status}", retry_after_s(getattr(exc.response, "headers", None))) from None
            msg = self._scrub(f"request to {self.base_url} failed: HTTP {status}: {str(exc)[:200]}")
            if status in FATAL_STATUS:
                raise CallError(f"{msg} ({FATAL_STATUS[status]})", fatal=True, attempts=attempts) from None
            raise CallError(msg, attempts=attempts) from None
        except (ValueError, openai.APIResponseValidationError) as exc:  # a body that is not JSON
            raise _Retry(self._scrub(f"malformed reply: {type(exc).__name__}")) from None
        try:
            choice = resp.choices[0]
            text = choice.message.content
        except (AttributeError, IndexError, TypeError):
            raise _Retry("malformed reply: not a chat completion") from None
        if text is not None and not isinstance(text, str):
            raise _Retry("malformed reply: content is not text")
        usage = getattr(resp, "usage", None)
        audio = getattr(choice.message, "audio", None)  # a speech reply (modalities ["text", "audio"])
        return Completion(text=text or "", model=getattr(resp, "model", None),
                          tokens_in=getattr(usage, "prompt_tokens", None) if usage else None,
                          tokens_out=getattr(usage, "completion_tokens", None) if usage else None,
                          attempts=attempts,
                          detail={"audio": {"data": getattr(audio, "data", None),
                                            "transcript": getattr(audio, "transcript", None)}}
                          if audio is not None else None)
