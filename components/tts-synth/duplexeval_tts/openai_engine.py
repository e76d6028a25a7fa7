"""The OpenAI speech API as a TTS engine: POST {base_url}/audio/speech.

Request: {"model", "voice", "input", "response_format": "pcm" | "wav"} plus "speed" when the rate
is not 1.0 (the API's speed is the same multiplier; some models ignore it). "pcm" is 24 kHz
16-bit little-endian mono; a "wav" answer is read from its header. The key comes only from
$OPENAI_API_KEY; it is sent in the Authorization header and appears in no setting, record or
error. The base URL is the `base_url` argument, else $OPENAI_BASE_URL, else the OpenAI API;
plain http is refused except to this machine (loopback), so the key never crosses a network
in clear. The openai package is used when it is installed (pinned 3.57.0 elsewhere in this
repository), else plain HTTP (urllib); both retry a 429, a 5xx, a timeout or a dropped
connection a bounded number of times (Retry-After honoured, capped), and fail at once on
other statuses, with one line naming the engine and the HTTP status.

Not deterministic: the service may return other audio for the same request on the next call,
and it is versioned by the provider, not by us. `deterministic` is False and the settings say
so; this engine caches no audio, so every call asks the service again.
"""

from __future__ import annotations

import json
import os
import struct
import time
import urllib.error
import urllib.request
from http.client import HTTPException
from urllib.parse import urlsplit

import numpy as np

from duplexeval_common import optional
from duplexeval_common.errors import DuplexEvalError, MissingDependency
from duplexeval_common.secrets import redact_url, scrub
from duplexeval_common.wavio import resample
from duplexeval_common.settings import Setting, Spec

from .engines import RATE, voice_setting

WHAT = "tts engine 'openai'"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "tts-1"  # takes `speed`
KEY_ENV, BASE_URL_ENV, MODEL_ENV = "OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_TTS_MODEL"
# The voices the OpenAI API documents; another server behind base_url may name its own.
API_VOICES = ("alloy", "ash", "ballad", "coral", "echo", "fable", "nova", "onyx", "sage", "shimmer", "verse")
DEFAULT_VOICE = "alloy"
FORMATS = ("pcm", "wav")
SAMPLE_RATE = 24000
RETRY_STATUSES = {408, 409, 429, 500, 502, 503, 504}
MAX_RETRY_AFTER_S = 30.0


class _Failure(Exception):
    """One failed attempt: status None for a connection failure or timeout."""

    def __init__(self, status: int | None, detail: str, retry_after: float | None = None):
        super().__init__(detail)
        self.status, self.detail, self.retry_after = status, detail, retry_after


def _retry_after(headers) -> float | None:
    try:
        value = headers.get("retry-after") if headers is not None else None
        return min(max(float(value), 0.0), MAX_RETRY_AFTER_S) if value is not None else None
    except (TypeError, ValueError):
        return None


def _body_message(body: bytes | str | None) -> str:
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    body = (body or "").strip()
    try:
        err = json.loads(body).get("error")
        if isinstance(err, dict) and err.get("message"):
            body = str(err["message"])
        elif isinstance(err, str):
            body = err
    except (ValueError, AttributeError):
        pass
    line = body.splitlines()[0] if body else ""
    return line[:200]


def decode_wav(data: bytes) -> tuple[np.ndarray, int]:
    """16-bit PCM or 32-bit float WAV bytes as float32 mono; a streamed answer's unknown sizes are tolerated."""
    if len(data) < 12 or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise ValueError("not a WAV file")
    pos, fmt = 12, None
    while pos + 8 <= len(data):
        tag, size = data[pos:pos + 4], struct.unpack("<I", data[pos + 4:pos + 8])[0]
        body = pos + 8
        if tag == b"fmt ":
            code, channels, rate = struct.unpack("<HHI", data[body:body + 8])
            bits = struct.unpack("<H", data[body + 14:body + 16])[0]
            fmt = (code, channels, rate, bits)
        elif tag == b"data":
            if fmt is None:
                raise ValueError("data before fmt")
            code, channels, rate, bits = fmt
            payload = data[body:body + size] if size != 0xFFFFFFFF else data[body:]
            if code in (1, 0xFFFE) and bits == 16:
                payload = payload[:len(payload) // (2 * channels) * 2 * channels]
                audio = np.frombuffer(payload, dtype="<i2").astype(np.float32) / 32768.0
            elif code == 3 and bits == 32:
                payload = payload[:len(payload) // (4 * channels) * 4 * channels]
                audio = np.frombuffer(payload, dtype="<f4").astype(np.float32)
            else:
                raise ValueError(f"unsupported WAV encoding (format {code}, {bits} bits)")
            return audio.reshape(-1, channels).mean(axis=1), int(rate)
        pos = body + size + (size & 1)
    raise ValueError("no data chunk")


class OpenAIEngine:
    name = "openai"
    SETTINGS = Spec(
        voice_setting(DEFAULT_VOICE, "a voice of the API (or of the server at base_url)"), RATE,
        Setting("model", str, None, f"the TTS model; null: ${MODEL_ENV}, else {DEFAULT_MODEL}", nonempty=True),
        Setting("base_url", str, None, f"the API's base URL (https, or http to this machine); null: "
                f"${BASE_URL_ENV}, else {DEFAULT_BASE_URL}", nonempty=True),
        Setting("response_format", str, "pcm", "what the API sends", choices=FORMATS),
        Setting("retries", int, 3, "retries of a failed request", ge=0, le=100),
        Setting("timeout_s", float, 60.0, "the timeout of one request, in s", gt=0, le=3600),
        Setting("backoff_s", float, 1.0, "the first wait before a retry, in s (doubled each time)", ge=0, le=600),
        Setting("transport", str, None, "openai (the openai package) or http (urllib); null: openai when "
                "installed", choices=("openai", "http")))
    model_sha256 = None
    deterministic = False

    @staticmethod
    def available_voices() -> list[str]:
        """The API's documented voices (online; nothing is offline for this engine)."""
        return list(API_VOICES)

    def __init__(self, voice: str | None = None, rate: float = 1.0, *, model: str | None = None,
                 base_url: str | None = None, response_format: str = "pcm", retries: int = 3,
                 timeout_s: float = 60.0, backoff_s: float = 1.0, transport: str | None = None):
        from .engines import check_rate, unknown_voice
        self.rate = check_rate(self.name, rate)
        self.voice = DEFAULT_VOICE if voice is None else voice
        self.model = model or os.environ.get(MODEL_ENV) or DEFAULT_MODEL
        base = (base_url or os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL).rstrip("/")
        parts = urlsplit(base)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise DuplexEvalError(f"{WHAT}: base URL {redact_url(base)!r} is not an http(s) URL")
        if parts.scheme == "http" and parts.hostname not in ("127.0.0.1", "localhost", "::1"):
            raise DuplexEvalError(f"{WHAT}: refusing plain http to {parts.hostname} (the key would travel in "
                                  "clear); use https")
        if parts.username or parts.password:
            raise DuplexEvalError(f"{WHAT}: the base URL must not carry credentials; the key comes from ${KEY_ENV}")
        self.base_url = base
        if base == DEFAULT_BASE_URL and self.voice not in API_VOICES:
            raise unknown_voice(self.name, self.voice, list(API_VOICES))
        if response_format not in FORMATS:
            raise DuplexEvalError(f"{WHAT}: response_format must be one of {', '.join(FORMATS)}")
        if transport not in (None, "openai", "http"):
            raise DuplexEvalError(f"{WHAT}: transport must be openai or http")
        self.response_format = response_format
        self.retries, self.timeout_s, self.backoff_s = int(retries), float(timeout_s), float(backoff_s)
        self._key = os.environ.get(KEY_ENV, "")
        if not self._key:
            raise MissingDependency(f"{WHAT} (no API key)",
                                    f"put the key in the environment variable {KEY_ENV} (never in a setting or file)")
        if transport is None:
            transport = "openai" if optional.has_module("openai") else "http"
        self.transport = transport
        self._client = None
        if transport == "openai":
            openai = optional.import_optional(WHAT, "openai", "pip install openai==3.57.0")
            self._openai = openai
            self._client = openai.OpenAI(api_key=self._key, base_url=self.base_url, max_retries=0,
                                         timeout=self.timeout_s)
        self.sample_rate = SAMPLE_RATE
        self.settings = {"base_url": redact_url(self.base_url), "model": self.model,
                         "response_format": self.response_format,
                         "speed": self.rate, "deterministic": False,
                         "note": "a hosted service: the same request may give other audio; nothing is cached",
                         "client": (f"openai-python {optional.version('openai')}" if transport == "openai"
                                    else "urllib")}

    # -- one attempt per transport -------------------------------------------------------------
    def _payload(self, text: str) -> dict:
        body = {"model": self.model, "voice": self.voice, "input": text,
                "response_format": self.response_format}
        if self.rate != 1.0:
            body["speed"] = self.rate
        return body

    def _attempt_http(self, text: str) -> bytes:
        req = urllib.request.Request(f"{self.base_url}/audio/speech", method="POST",
                                     data=json.dumps(self._payload(text)).encode("utf-8"),
                                     headers={"Authorization": f"Bearer {self._key}",
                                              "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                return resp.read()
        except urllib.error.HTTPError as exc:
            body = exc.read() if exc.fp is not None else b""
            raise _Failure(exc.code, _body_message(body), _retry_after(exc.headers)) from None
        except (urllib.error.URLError, HTTPException, OSError) as exc:
            reason = getattr(exc, "reason", None) or exc
            raise _Failure(None, f"{type(exc).__name__}: {reason}") from None

    def _attempt_openai(self, text: str) -> bytes:
        openai = self._openai
        body = self._payload(text)
        try:
            resp = self._client.audio.speech.create(**body)
            return resp.content if hasattr(resp, "content") else resp.read()
        except openai.APIStatusError as exc:
            response = getattr(exc, "response", None)
            headers = getattr(response, "headers", None)
            try:
                text_body = response.text if response is not None else ""
            except Exception:  # a body that cannot be read: keep the status only
                text_body = ""
            raise _Failure(exc.status_code, _body_message(text_body) or type(exc).__name__,
                           _retry_after(headers)) from None
        except (openai.APIConnectionError, openai.APITimeoutError) as exc:
            cause = exc.__cause__ or exc
            raise _Failure(None, f"{type(exc).__name__}: {cause}") from None

    # -- the engine ------------------------------------------------------------------------------
    def _fail(self, failure: _Failure, attempts: int) -> DuplexEvalError:
        where = f"{redact_url(self.base_url)}/audio/speech"
        what = f"HTTP {failure.status}" if failure.status is not None else "no response"
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        line = f"{WHAT}: {what} from {where}{tries}: {failure.detail}"
        line = scrub(line, [self._key]).replace("\n", " ").replace("\r", " ")
        return DuplexEvalError(line)

    def request(self, text: str) -> bytes:
        """The raw audio bytes of one request, with bounded retries."""
        attempt = self._attempt_openai if self.transport == "openai" else self._attempt_http
        for i in range(self.retries + 1):
            try:
                return attempt(text)
            except _Failure as failure:
                retryable = failure.status is None or failure.status in RETRY_STATUSES
                if not retryable or i == self.retries:
                    raise self._fail(failure, i + 1) from None
                wait = failure.retry_after if failure.retry_after is not None else self.backoff_s * 2 ** i
                time.sleep(wait)
        raise AssertionError("unreachable")

    def synthesize(self, text: str) -> np.ndarray:
        data = self.request(text)
        if self.response_format == "pcm":
            usable = len(data) // 2 * 2
            return np.frombuffer(data[:usable], dtype="<i2").astype(np.float32) / 32768.0
        try:
            audio, sr = decode_wav(data)
        except (ValueError, struct.error) as exc:
            raise DuplexEvalError(f"{WHAT}: the answer is not a readable WAV ({exc})") from None
        if sr != self.sample_rate:
            audio = resample(audio, sr, self.sample_rate).astype(np.float32)
        return audio

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAIEngine(voice={self.voice!r}, rate={self.rate}, model={self.model!r})"

