"""What the network runners share: the endpoint settings, TLS, connection-failure reasons, pcm16.

A client runner (freeze-omni, moshi-ws, openai-realtime, gemini-live) reaches a model server over
HTTP(S) or WebSocket. The parts every one of them needs are here, once:

- settings, declared once (settings.py `Setting`s) and read the same way by every network runner:
  `url` (runner_args, else $MODEL_URL), `insecure` (runner_args, else $MODEL_INSECURE read as 1/0),
  `ca_file` (runner_args, else $MODEL_CA; it must be a file) (`endpoint_settings`, `endpoint`), and
  `max_message_bytes`, the largest message a server may send (`message_limit`; a larger one fails
  the sample with `too_big_reason`, which `too_big` recognises in the client library's exception).
  A bad value is a one-line DuplexEvalError naming the runner;
- `parse_url`: a URL split into what may be logged (scheme, host, port, path) and its userinfo,
  turned into a Basic `Authorization` header and the secret to scrub from every message;
- `ssl_context`: accept any certificate (insecure), trust one pinned PEM, or the system CAs;
- `connect_reason`: one line for a failed connection (TLS verification or handshake, an HTTP
  status, refused, unknown host, timeout), from anywhere in the exception's chain;
- pcm16: float32 in [-1, 1] to int16 little-endian bytes (clipped: +1.0 is 32767, never wrapping
  to -32768) and back (x / 32768, a trailing odd byte dropped).

Each runner keeps its own protocol, its own URL rules (schemes, default paths) and its own
wording where a message names its server; nothing here imports a client library.
"""

from __future__ import annotations

import base64
import math
import os
import socket
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

import numpy as np

from duplexeval_common import secrets
from duplexeval_common.errors import DuplexEvalError

from .settings import FALSE, TRUE, Setting, from_env, path_problem

URL_ENV, INSECURE_ENV, CA_ENV = "MODEL_URL", "MODEL_INSECURE", "MODEL_CA"
# What a certificate failure tells the user to do (the runner_args and the environment variables).
CERT_HOW = (f"pass runner_args ca_file (or {CA_ENV}) with the server's certificate, or insecure "
            f"(or {INSECURE_ENV}=1)")
DETAIL_CHARS = 200  # the longest description of an exception no rule knows


def fail(runner: str, msg: str) -> DuplexEvalError:
    """A bad setting of `runner`: one line that names it."""
    return DuplexEvalError(f"runner {runner!r}: {msg}")


# -- settings ---------------------------------------------------------------------------------------

def is_number(v: Any) -> bool:
    """A finite int or float (a bool is not a number here): for values read from a server."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def is_int(v: Any) -> bool:
    """An int (a bool is not)."""
    return isinstance(v, int) and not isinstance(v, bool)


def endpoint_settings(url_about: str) -> tuple[Setting, ...]:
    """`url`, `insecure`, `ca_file`: the endpoint settings of a network runner (`url_about` says what
    its URL looks like). Each is read from its environment variable when null (`endpoint`)."""
    return (Setting("url", str, None, url_about, env=URL_ENV),
            Setting("insecure", bool, None, "accept any TLS certificate (unverified)", env=INSECURE_ENV),
            Setting("ca_file", str, None, "verify TLS against this PEM certificate instead of the system CAs",
                    env=CA_ENV, path="file"))


def message_limit(default: int) -> Setting:
    """`max_message_bytes`: the largest message the server may send; a larger one fails the sample."""
    return Setting("max_message_bytes", int, default, "the largest message the server may send, in bytes; a "
                   "larger one fails the sample (one line naming this limit)", ge=1, le=2**30)


def too_big_reason(limit: int) -> str:
    return f"a server message was larger than max_message_bytes ({limit} bytes)"


def too_big(exc: BaseException | None) -> bool:
    """Whether exc, or anything behind it, says a received message passed this client's size limit:
    websockets' PayloadTooBig or the 1009 close it sent for one, aiohttp's WebSocketError 1009."""
    for e in causes(exc) if exc is not None else []:
        if type(e).__name__ == "PayloadTooBig":
            return True
        if getattr(getattr(e, "sent", None), "code", None) == 1009:  # websockets ConnectionClosed
            return True
        if type(e).__name__ == "WebSocketError" and getattr(e, "code", None) == 1009:  # aiohttp
            return True
    return False


def endpoint(runner: str, args: dict, example: str | None = None,
             default: str | None = None) -> tuple[str | None, bool, str | None]:
    """(url, insecure, ca_file) from the endpoint settings or their environment variables: the URL
    is required when `example` is given (the error shows it), else `default` (None: none)."""
    url = url_setting(runner, args["url"], example)
    return (default if url is None else url), flag(runner, args["insecure"]), ca_file(runner, args["ca_file"])


def url_setting(runner: str, value: Any, example: str | None = None) -> str | None:
    """runner_args `url`, else $MODEL_URL. With an `example` one of them is required."""
    url = from_env(value, URL_ENV)
    if url is None:
        if example is None:
            return None
        raise fail(runner, f"no server URL: set the environment variable {URL_ENV} (e.g. {example}) "
                           "or runner_args url")
    if not isinstance(url, str):
        raise fail(runner, "url must be a string")
    return url


def flag(runner: str, value: Any, env: str = INSECURE_ENV, name: str = "insecure") -> bool:
    """A true/false runner_arg; None: the environment variable, read as 1/true/yes/on or 0/false/no/off/unset."""
    if value is None:
        raw = os.environ.get(env, "").strip().lower()
        if raw in TRUE or raw in FALSE:
            return raw in TRUE
        raise fail(runner, f"{env}={raw!r} is neither 1 nor 0")
    if not isinstance(value, bool):
        raise fail(runner, f"{name} must be true or false")
    return value


def ca_file(runner: str, value: Any, env: str = CA_ENV) -> str | None:
    """runner_args `ca_file`, else $MODEL_CA: the absolute path of an existing file, or None."""
    ca = from_env(value, env)
    problem = path_problem("ca_file", ca, "file") if ca is not None else None
    if problem:
        raise fail(runner, problem)
    return os.path.abspath(ca) if ca else None


# -- URLs and credentials ---------------------------------------------------------------------------

@dataclass(frozen=True)
class URL:
    """A URL split into its loggable parts and its userinfo (unquoted; None when absent)."""
    scheme: str
    hostname: str              # lower case, "" when the URL has none
    port: int | None
    path: str
    query: str
    fragment: str
    raw_netloc: str            # as written, userinfo included: not for logs
    username: str | None
    password: str | None

    @property
    def host(self) -> str:
        """The host as it goes into a URL (an IPv6 address in brackets)."""
        return f"[{self.hostname}]" if ":" in self.hostname else self.hostname

    @property
    def netloc(self) -> str:
        """host[:port], without userinfo."""
        return self.host if self.port is None else f"{self.host}:{self.port}"

    @property
    def has_userinfo(self) -> bool:
        return self.username is not None or self.password is not None

    @property
    def authorization(self) -> str | None:
        """The `Authorization: Basic ...` value of the userinfo (None without one)."""
        if not self.has_userinfo:
            return None
        pair = f"{self.username or ''}:{self.password or ''}"
        return "Basic " + base64.b64encode(pair.encode()).decode("ascii")

    @property
    def secret(self) -> str | None:
        """The credential to scrub from messages: the password, else a lone user name (a token)."""
        return (self.password or self.username or None) if self.has_userinfo else None


def parse_url(runner: str, url: str, detail: bool = True) -> URL:
    """Split `url`; a malformed one (a bad port, a broken IPv6 literal) is a one-line error, with the
    parser's reason when `detail`. Schemes and required parts are the caller's to check."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        why = f" ({secrets.scrub(str(exc))})" if detail else ""
        raise fail(runner, f"url is not a valid URL{why}") from None
    user = unquote(parts.username) if parts.username is not None else None
    password = unquote(parts.password) if parts.password is not None else None
    return URL(parts.scheme, parts.hostname or "", port, parts.path, parts.query, parts.fragment,
               parts.netloc, user, password)


# -- TLS --------------------------------------------------------------------------------------------

def ssl_context(insecure: bool, ca_file: str | None, system: bool = True) -> ssl.SSLContext | None:
    """The client context: any certificate accepted (insecure), else verified against `ca_file`,
    else against the system CAs (None instead when not `system`: the client library's own).
    Build it off the event loop: loading CAs blocks."""
    if insecure:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        return ctx
    if ca_file is None and not system:
        return None
    ctx = ssl.create_default_context(cafile=ca_file)
    if ca_file and hasattr(ssl, "VERIFY_X509_STRICT"):
        # A pinned self-signed certificate (Freeze-Omni's web/pem.py, moshi.server --ssl, a test's)
        # may lack the CA and key identifier extensions Python 3.13's strict X.509 default wants:
        # it is trusted as given.
        ctx.verify_flags &= ~ssl.VERIFY_X509_STRICT
    return ctx


# -- why a connection failed ------------------------------------------------------------------------

def causes(exc: BaseException) -> list[BaseException]:
    """exc and everything behind it, nearest first: __cause__, __context__ and the wrapped errors of
    aiohttp's connector errors (certificate_error, os_error); each once."""
    chain: list[BaseException] = []
    todo: list[BaseException | None] = [exc]
    while todo:
        e = todo.pop(0)
        if e is None or any(e is c for c in chain):
            continue
        chain.append(e)
        todo += [e.__cause__, e.__context__, getattr(e, "certificate_error", None), getattr(e, "os_error", None)]
    return chain


def cert_failure(exc: BaseException) -> ssl.SSLCertVerificationError | None:
    """The certificate verification error anywhere in exc's chain (the detailed one when wrapped)."""
    for e in causes(exc):
        if isinstance(e, ssl.SSLCertVerificationError):
            inner = getattr(e, "certificate_error", None)  # aiohttp's ClientConnectorCertificateError
            return inner if isinstance(inner, ssl.SSLCertVerificationError) else e
    return None


def describe(exc: BaseException) -> str:
    """`Type: message` on one line, at most DETAIL_CHARS of message."""
    text = " ".join(str(exc).split())
    if len(text) > DETAIL_CHARS:
        text = text[:DETAIL_CHARS - 3] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def connect_reason(exc: BaseException, timeout_s: float | None = None, how: str = CERT_HOW,
                   status: Callable[[BaseException], str | None] | None = None,
                   strerror: bool = False, outer: bool = False) -> str:
    """One line for a failed connection, from the first cause a rule knows:

    a certificate that failed verification (anywhere in the chain; `how` says what to do), then per
    cause, nearest first: `status(e)` (the runner's reading of an HTTP status or close frame), a TLS
    handshake error, refused, unknown host, a timeout ("no answer within <timeout_s> s", or "timed
    out" without one), and with `strerror` any OSError's own text. Else the farthest cause (the
    exception itself with `outer`), described on one line."""
    chain = causes(exc)
    cert = cert_failure(exc)
    if cert is not None:
        what = getattr(cert, "verify_message", None) or getattr(cert, "reason", None) or str(cert)
        return f"TLS certificate verification failed ({what}); {how}"
    for e in chain:
        found = status(e) if status is not None else None
        if found:
            return found
        if isinstance(e, ssl.SSLError):
            return f"TLS handshake failed ({getattr(e, 'reason', None) or e})"
        if isinstance(e, ConnectionRefusedError):
            return "connection refused (is the server running on that port?)"
        if isinstance(e, socket.gaierror):
            return f"unknown host ({e})"
        if isinstance(e, TimeoutError):
            return f"no answer within {timeout_s:g} s" if timeout_s is not None else "timed out"
        if strerror and isinstance(e, OSError) and e.strerror:
            return e.strerror
    return describe(exc if outer else chain[-1])


# -- pcm16 ------------------------------------------------------------------------------------------

def to_pcm16(x: np.ndarray) -> bytes:
    """float32 [-1, 1] to int16 little-endian bytes, clipped (+1.0 is 32767, never wrapping to -32768)."""
    return np.clip(np.round(np.asarray(x, dtype=np.float64) * 32767), -32768, 32767).astype("<i2").tobytes()


def from_pcm16(data: bytes | bytearray | memoryview) -> np.ndarray:
    """int16 little-endian bytes to float32 (x / 32768); a trailing odd byte is dropped."""
    n = len(data) // 2 * 2
    return np.frombuffer(bytes(data[:n]), dtype="<i2").astype(np.float32) / 32768.0


def is_loopback(host: str) -> bool:
    import ipaddress
    if host.lower() in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def refuse_clear_key(runner: str, scheme: str, host: str, key_env: str) -> None:
    """An API key only crosses the network encrypted: a plain ws:// or http:// endpoint is refused
    unless it is on this machine (a local gateway or test server)."""
    if scheme in ("ws", "http") and not is_loopback(host):
        raise fail(runner, f"url {scheme}://{host} is not encrypted and not on this machine: the key "
                           f"({key_env}) would cross the network in clear; use wss:// or https://")
