"""`freeze-omni`: a realtime socket.io client of a Freeze-Omni server.

The server is VITA-MLLM/Freeze-Omni bin/server.py (commit 3e17af4): Flask-SocketIO over HTTPS with a
self-signed certificate (web/pem.py). VITA-1.5's web demo server is said to speak the same protocol;
this runner was written against Freeze-Omni's code only. One socket.io session per sample:

1. connect (websocket transport; `Authorization: Basic ...` when the URL carries `user:password@`);
2. `prompt_text` with the system prompt, then wait for `prompt_success`. The server keeps the role
   and applies it on the next `recording-started`, so the role is set first (skipped when
   `system_prompt` is null: the server's default role stays);
3. `recording-started`, then wait (up to 1 s) for the two `stop_tts` the server sends while it
   resets the user's state, so no audio frame races that reset; the clock starts then (t0);
4. one `audio` event per `frame_ms` frame, payload the JSON string
   `{"audio": [bytes of int16 little-endian PCM], "sample_rate": 16000}` that `handle_audio`
   parses. Frame k holds input samples [k*F, (k+1)*F) and is sent at t0 + (k+1)*frame, when a
   live microphone would have delivered it, on absolute deadlines (never a cumulative sleep).
   After the input, silence frames follow until input end + `grace_s`: the server emits its
   output only in reply to incoming `audio` events, so the client keeps sending;
5. `recording-stopped` only at the very end (the server interrupts TTS on it), then disconnect.

Received `audio` events (raw bytes: int16 mono 24 kHz, one TTS segment each) are placed with a
TimelineBuffer at their arrival time t = monotonic() - t0; `stop_tts` interrupts the buffer at its
arrival (unplayed audio is dropped). `too_many_users` (the server's `--max_users` reached),
`out_time` (its per-user `--timeout`) and a lost connection fail the sample, with a one-line
reason. The output is cut at the input's length (audio placed after it is dropped).

Every received message is dispatched in arrival order on one worker thread: python-socketio's
threaded client otherwise starts a thread per message, which can reorder an `audio` chunk and a
`stop_tts`, or a binary event's header and its attachment (python-socketio issue #436).

Send drift (actual send time - scheduled) is logged per frame (`send` events, `drift_ms`); its
max and p99 go to the stats, with `drift_exceeded_20ms`.
"""

from __future__ import annotations

import base64
import json
import math
import os
import queue
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

import numpy as np

from duplexeval_common.errors import DuplexEvalError

from .. import deps
from ..events import EventLog
from ..protocol import BaseRunner, resolve_args
from ..timeline import TimelineBuffer

NAME = "freeze-omni"
IN_SR = 16000   # the server's PCM FIFO and Silero VAD run at 16 kHz (web/vad.py)
OUT_SR = 24000  # TiCodec TTS segments: int16 mono 24 kHz
DRIFT_LIMIT_MS = 20.0
START_ACK_TIMEOUT_S = 1.0  # for the stop_tts pair that answers recording-started
STOP_ACK_TIMEOUT_S = 1.0   # for the stop_tts that answers recording-stopped
URL_ENV, INSECURE_ENV, CA_ENV = "MODEL_URL", "MODEL_INSECURE", "MODEL_CA"

# The role Freeze-Omni's server gives every new user before any prompt_text:
# VITA-MLLM/Freeze-Omni web/parms.py (commit 3e17af4), GlobalParams.__init__. The literal there is
# continued over lines with backslashes, so it also carries the source's indentation as runs of
# spaces; here the sentences are joined by single spaces. FDB's Freeze-Omni client
# (DanielLin94144/Full-Duplex-Bench v1_v1.5/model_inference/freeze-omni/inference.py) sends no
# prompt_text, so its runs use that server default.
DEFAULT_SYSTEM_PROMPT = ("You are a helpful voice assistant. Your answer should be coherent, natural, "
                         "simple, complete. Your name is Xiao Yun. Your inventor is Tencent.")

DEFAULTS: dict[str, Any] = {
    "url": None,                 # https://[user:password@]host:port[/prefix]; None: $MODEL_URL
    "insecure": None,            # accept any certificate; None: $MODEL_INSECURE (1/true/yes)
    "ca_file": None,             # verify against this PEM; None: $MODEL_CA (or the system CAs)
    "system_prompt": DEFAULT_SYSTEM_PROMPT,  # None: send no prompt_text
    "frame_ms": 30,              # FDB's Freeze-Omni client sends 30 ms frames (480 samples)
    "grace_s": 2.0,              # silence sent after the input (output past the input is cut)
    "connect_timeout_s": 10.0,   # connect, and each wait for an answer (prompt_success)
    "deadline_s": None,          # whole session; None: input length + grace_s + 10 s
}

_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"", "0", "false", "no", "off"}


class SessionFailed(DuplexEvalError):
    """The server refused, ended or lost the session; the sample fails with this one line."""


@dataclass(frozen=True)
class Endpoint:
    url: str                    # without userinfo: safe to log and record
    authorization: str | None   # "Basic ..." from the URL's userinfo
    secret: str | None          # the password, to scrub from messages
    socketio_path: str = "socket.io"  # under the URL's path (a reverse proxy's prefix)

    @property
    def tls(self) -> bool:
        return self.url.startswith("https://")


def endpoint(url: str) -> Endpoint:
    """Split `https://user:password@host:port/` into a loggable URL and a Basic auth header."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise DuplexEvalError(f"runner {NAME!r}: url is not a valid URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise DuplexEvalError(f"runner {NAME!r}: url must look like https://host:port "
                              f"(got scheme {parts.scheme!r})")
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    netloc = host if port is None else f"{host}:{port}"
    clean = urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))
    prefix = parts.path.strip("/")
    auth = secret = None
    if parts.username is not None or parts.password is not None:
        user, secret = unquote(parts.username or ""), unquote(parts.password or "")
        auth = "Basic " + base64.b64encode(f"{user}:{secret}".encode()).decode("ascii")
        secret = secret or user or None
    return Endpoint(clean, auth, secret, f"{prefix}/socket.io" if prefix else "socket.io")


def _flag(value: Any, env: str) -> bool:
    if value is None:
        raw = os.environ.get(env, "").strip().lower()
        if raw in _TRUE or raw in _FALSE:
            return raw in _TRUE
        raise DuplexEvalError(f"runner {NAME!r}: {env}={raw!r} is neither 1 nor 0")
    if not isinstance(value, bool):
        raise DuplexEvalError(f"runner {NAME!r}: insecure must be true or false")
    return value


def to_pcm16(x: np.ndarray) -> np.ndarray:
    """float32 [-1, 1] to int16, clipped (never wrapping at +1.0)."""
    return np.clip(np.round(np.asarray(x, dtype=np.float64) * 32767), -32768, 32767).astype("<i2")


def audio_payload(frame: np.ndarray) -> str:
    """The JSON string Freeze-Omni's handle_audio parses: int16 LE bytes as a list of byte values."""
    return json.dumps({"audio": list(to_pcm16(frame).tobytes()), "sample_rate": IN_SR},
                      separators=(",", ":"))


def from_pcm16(data: bytes) -> np.ndarray:
    """The server's segments: int16 LE mono, made with x * 32768."""
    n = len(data) // 2 * 2
    return np.frombuffer(bytes(data[:n]), dtype="<i2").astype(np.float32) / 32768.0


def client_class(socketio: Any, engineio: Any) -> type:
    """A socketio.Client whose received messages are handled in order, on one worker thread.

    `eio.arrival` is the monotonic time the read loop received the message being handled (for a
    binary event: its last part), so the worker's wake-up latency does not move placements.
    """

    class OrderedEngineIOClient(engineio.Client):
        arrival: float | None = None

        def _trigger_event(self, event, *args, **kwargs):
            if event != "message" or not kwargs.get("run_async"):
                return super()._trigger_event(event, *args, **kwargs)
            if getattr(self, "_inbox", None) is None:
                self._inbox = queue.SimpleQueue()
                threading.Thread(target=self._dispatch, name="freeze-omni-dispatch", daemon=True).start()
            self._inbox.put((time.monotonic(), args))
            return None

        def _dispatch(self):
            while (item := self._inbox.get()) is not None:
                self.arrival, args = item
                engineio.Client._trigger_event(self, "message", *args, run_async=False)

        def stop_dispatch(self):
            if getattr(self, "_inbox", None) is not None:
                self._inbox.put(None)

    class OrderedClient(socketio.Client):
        def _engineio_client_class(self):
            return OrderedEngineIOClient

    return OrderedClient


class FreezeOmniRunner(BaseRunner):
    name = NAME
    clock = "realtime"
    in_sr = IN_SR
    out_sr = OUT_SR

    def __init__(self, seed: int | None = None, **args: Any):
        self.args = a = resolve_args(self.name, DEFAULTS, args)
        url = a["url"] if a["url"] is not None else os.environ.get(URL_ENV, "").strip() or None
        if url is None:
            raise DuplexEvalError(f"runner {NAME!r}: no server URL: set the environment variable {URL_ENV} "
                                  "(e.g. https://127.0.0.1:8081) or runner_args url")
        if not isinstance(url, str):
            raise DuplexEvalError(f"runner {NAME!r}: url must be a string")
        self.endpoint = endpoint(url)
        self.insecure = _flag(a["insecure"], INSECURE_ENV)
        ca = a["ca_file"] if a["ca_file"] is not None else os.environ.get(CA_ENV, "").strip() or None
        if ca is not None and (not isinstance(ca, str) or not os.path.isfile(ca)):
            raise DuplexEvalError(f"runner {NAME!r}: ca_file {ca!r} is not a file")
        self.ca_file = os.path.abspath(ca) if ca else None
        if a["system_prompt"] is not None and not isinstance(a["system_prompt"], str):
            raise DuplexEvalError(f"runner {NAME!r}: system_prompt must be a string or null")
        fm = a["frame_ms"]
        if not _number(fm) or fm <= 0 or abs(fm * IN_SR / 1000 - round(fm * IN_SR / 1000)) > 1e-9:
            raise DuplexEvalError(f"runner {NAME!r}: frame_ms must be a positive whole number of "
                                  f"samples at {IN_SR} Hz (e.g. 30 or 20)")
        if not _number(a["grace_s"]) or a["grace_s"] < 0:
            raise DuplexEvalError(f"runner {NAME!r}: grace_s must be a non-negative number")
        if not _number(a["connect_timeout_s"]) or a["connect_timeout_s"] <= 0:
            raise DuplexEvalError(f"runner {NAME!r}: connect_timeout_s must be a positive number")
        if a["deadline_s"] is not None and (not _number(a["deadline_s"]) or a["deadline_s"] <= 0):
            raise DuplexEvalError(f"runner {NAME!r}: deadline_s must be a positive number or null")
        self.frame = int(round(fm * IN_SR / 1000))
        self.seed = seed  # sampling happens on the server (its --temperature/--top_p/--top_k)
        self._client_cls: type | None = None

    def setup(self) -> None:
        if self._client_cls is None:
            what = f"runner {NAME!r}"
            socketio = deps.import_module(what, "socketio")
            engineio = deps.import_module(what, "engineio")
            deps.import_module(what, "websocket")  # websocket-client: the websocket transport
            self._client_cls = client_class(socketio, engineio)

    def ssl_context(self) -> ssl.SSLContext | None:
        if not self.endpoint.tls:
            return None
        if self.insecure:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            return ctx
        ctx = ssl.create_default_context(cafile=self.ca_file)
        if self.ca_file and hasattr(ssl, "VERIFY_X509_STRICT"):
            # A pinned self-signed certificate such as Freeze-Omni's web/pem.py makes (no CA or key
            # identifier extensions) fails Python 3.13's strict X.509 default; trust it as given.
            ctx.verify_flags &= ~ssl.VERIFY_X509_STRICT
        return ctx

    def deadline(self, n_in: int) -> float:
        d = self.args["deadline_s"]
        return float(d) if d is not None else n_in / IN_SR + self.args["grace_s"] + 10.0

    def run(self, user: np.ndarray, sr: int, *, log: EventLog) -> np.ndarray:
        self.setup()
        if sr != IN_SR:
            raise DuplexEvalError(f"runner {NAME!r}: expects {IN_SR} Hz input, got {sr} Hz")
        user = np.asarray(user, dtype=np.float32).reshape(-1)
        return _Session(self, user, log).run()

    def settings(self) -> dict:
        s = {k: v for k, v in self.args.items() if k != "url"}
        s.update({"url": self.endpoint.url, "auth": "basic" if self.endpoint.authorization else None,
                  "insecure": self.insecure, "ca_file": self.ca_file, "transport": "websocket",
                  "frame_samples": self.frame, "send_at": "frame end",
                  "client": {d: deps.version(d) for d in ("python-socketio", "python-engineio",
                                                          "websocket-client")}})
        return s

    def scrub(self, text: str) -> str:
        secret = self.endpoint.secret
        return text.replace(secret, "<redacted>") if secret else text


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


class _Session:
    """One connection, one sample."""

    def __init__(self, runner: FreezeOmniRunner, user: np.ndarray, log: EventLog):
        self.r, self.user, self.log = runner, user, log
        self.a = runner.args
        self.n_out = int(round(len(user) * OUT_SR / IN_SR))
        self.in_end = len(user) / IN_SR
        self.buf = TimelineBuffer(OUT_SR, capacity=self.n_out)
        self.inbox: queue.Queue = queue.Queue()
        self.t0: float | None = None
        self.stats: dict[str, Any] = {"recv_chunks": 0, "recv_audio_s": 0.0, "stop_tts": 0,
                                      "discarded_s": 0.0}
        self.ended = False  # a fatal event after the input ended: stop, keep the output

    # -- the socket.io side: handlers only queue, stamped with the receive time (dispatch thread) --
    def _handlers(self, sio: Any) -> None:
        def stamp() -> float:
            return getattr(sio.eio, "arrival", None) or time.monotonic()

        def put(kind):
            return lambda *args: self.inbox.put((stamp(), kind, args[0] if args else None))
        for ev in ("audio", "stop_tts", "prompt_success", "too_many_users", "out_time"):
            sio.on(ev, put(ev))
        sio.on("disconnect", lambda reason=None: self.inbox.put((time.monotonic(), "disconnect", reason)))
        sio.on("*", lambda event, *args: self.inbox.put((stamp(), "other", (event, args[0] if args else None))))

    def run(self) -> np.ndarray:
        start = time.monotonic()
        self.hard = start + self.r.deadline(len(self.user))
        sio = self.r._client_cls(reconnection=False, handle_sigint=False, logger=False, engineio_logger=False,
                                 request_timeout=self.a["connect_timeout_s"], ssl_verify=not self.r.insecure,
                                 websocket_extra_options=self._ws_options())
        self._handlers(sio)
        try:
            self._connect(sio)
            connect_s = time.monotonic() - start
            prompt_s = self._prompt(sio)
            acks = self._start(sio)
            self.log.emit("session_start", 0.0, server=NAME, url=self.r.endpoint.url, transport="websocket",
                          connect_s=connect_s, prompt_s=prompt_s, start_acks=acks,
                          frame_ms=self.a["frame_ms"], grace_s=self.a["grace_s"])
            self._stream(sio)
        finally:
            self._close(sio)
        self.stats["recv_audio_s"] = round(self.stats["recv_audio_s"], 6)
        self.stats["discarded_s"] = round(self.stats["discarded_s"], 6)
        self.stats["placed_after_input_s"] = round(max(self.buf.write_pos - self.n_out, 0) / OUT_SR, 6)
        self.log.stats.update(self.stats)
        return self.buf.audio(self.n_out)

    def _ws_options(self) -> dict:
        ctx = self.r.ssl_context()
        return {"sslopt": {"context": ctx}} if ctx is not None else {}

    def _fail(self, msg: str) -> SessionFailed:
        return SessionFailed(self.r.scrub(f"runner {NAME!r}: {msg}"))

    # -- phases --
    def _connect(self, sio: Any) -> None:
        headers = {"Authorization": self.r.endpoint.authorization} if self.r.endpoint.authorization else {}
        timeout = min(self.a["connect_timeout_s"], max(self.hard - time.monotonic(), 0.1))
        try:
            sio.connect(self.r.endpoint.url, headers=headers, transports=["websocket"], wait_timeout=timeout,
                        socketio_path=self.r.endpoint.socketio_path)
        except Exception as exc:  # socketio.exceptions.ConnectionError and friends
            raise self._fail(f"cannot connect to {self.r.endpoint.url}: {self._reason(exc)}") from None

    def _reason(self, exc: BaseException) -> str:
        chain, e = [], exc
        while e is not None and e not in chain:
            chain.append(e)
            e = e.__cause__ or e.__context__
        for e in chain:
            if isinstance(e, ssl.SSLCertVerificationError):
                how = (f"pass runner_args ca_file (or {CA_ENV}) with the server's cert.pem, or set insecure "
                       f"(or {INSECURE_ENV}=1) to accept it unverified")
                return f"TLS certificate verification failed ({e.verify_message or e.reason}); {how}"
        for e in chain:
            if isinstance(e, ssl.SSLError):
                return f"TLS handshake failed ({e.reason or e})"
            status = getattr(e, "status_code", None)
            if isinstance(status, int):
                hint = " (check the user:password in the URL)" if status in (401, 403) else ""
                return f"the server answered HTTP {status} to the websocket handshake{hint}"
            if isinstance(e, ConnectionRefusedError):
                return "connection refused (is the server running on that port?)"
            if isinstance(e, TimeoutError) or type(e).__name__ == "WebSocketTimeoutException":
                return f"no answer within {self.a['connect_timeout_s']} s"
            if isinstance(e, socket.gaierror):
                return f"unknown host ({e})"
        return str(chain[-1]) or type(chain[-1]).__name__

    def _wait(self, want: str, until: float, count: int = 1) -> int:
        """Handle queued events until `count` of kind `want` came or `until` passed; return how many came."""
        got = 0
        while got < count:
            left = min(until, self.hard) - time.monotonic()
            if left <= 0:
                break
            try:
                wall, kind, data = self.inbox.get(timeout=left)
            except queue.Empty:
                break
            if kind == want:
                got += 1
            else:
                self._handle(wall, kind, data)
        return got

    def _prompt(self, sio: Any) -> float | None:
        prompt = self.a["system_prompt"]
        if prompt is None:
            return None
        t = time.monotonic()
        self._emit(sio, "prompt_text", prompt)
        if not self._wait("prompt_success", t + self.a["connect_timeout_s"]):
            raise self._fail(f"no prompt_success within {self.a['connect_timeout_s']} s of prompt_text")
        return time.monotonic() - t

    def _start(self, sio: Any) -> int:
        self._emit(sio, "recording-started")
        acks = self._wait("stop_tts", time.monotonic() + START_ACK_TIMEOUT_S, count=2)
        self.t0 = time.monotonic()
        return acks

    def _stream(self, sio: Any) -> None:
        F, frame_s = self.r.frame, self.a["frame_ms"] / 1000.0
        n_in = len(self.user)
        n_speech = -(-n_in // F)
        total = -(-int(round((n_in / IN_SR + self.a["grace_s"]) * IN_SR)) // F)
        silence = audio_payload(np.zeros(F, dtype=np.float32))
        drifts = np.zeros(total)
        sent = 0
        for k in range(total):
            if k < n_speech:
                frame = self.user[k * F:(k + 1) * F]
                payload = audio_payload(np.pad(frame, (0, F - len(frame))) if len(frame) < F else frame)
            else:
                payload = silence
            due = self.t0 + (k + 1) * frame_s
            self._pump(due)
            if self.ended:
                break
            now = time.monotonic()
            if now > self.hard:
                raise self._fail(f"deadline_s ({self.hard - self.t0:.1f} s after the clock started) passed "
                                 f"at {now - self.t0:.1f} s, frame {k} of {total}")
            if not self._emit(sio, "audio", payload):
                break
            drifts[k] = now - due
            sent += 1
            self.log.emit("send", (k + 1) * frame_s, frame=k, drift_ms=drifts[k] * 1000.0,
                          **({"grace": True} if k >= n_speech else {}))
        self._pump(time.monotonic())
        if not self.ended and self._emit(sio, "recording-stopped"):  # last: it interrupts the TTS
            # The server answers with stop_tts once it handled it; wait (briefly) so that the
            # disconnect cannot overtake it.
            self._wait("stop_tts", time.monotonic() + STOP_ACK_TIMEOUT_S)
        d = drifts[:sent] * 1000.0
        self.stats.update({"frames_sent": sent, "frame_ms": self.a["frame_ms"],
                           "drift_max_ms": round(float(d.max()), 3) if sent else 0.0,
                           "drift_p99_ms": round(float(np.percentile(d, 99)), 3) if sent else 0.0,
                           "drift_exceeded_20ms": bool(sent and d.max() > DRIFT_LIMIT_MS)})
        if self.stats["drift_exceeded_20ms"]:
            k = int(np.argmax(d > DRIFT_LIMIT_MS))
            self.log.emit("error", (k + 1) * frame_s,
                          reason=f"send drift {d[k]:.1f} ms > {DRIFT_LIMIT_MS:.0f} ms at frame {k} "
                                 f"(max {d.max():.1f} ms): the pacing fell behind real time")

    def _pump(self, until: float) -> None:
        """Handle received events until the wall time `until`."""
        while True:
            left = until - time.monotonic()
            try:
                item = self.inbox.get(timeout=left) if left > 0 else self.inbox.get_nowait()
            except queue.Empty:
                return
            self._handle(*item)
            if self.ended:
                return

    def _emit(self, sio: Any, event: str, data: Any = None) -> bool:
        """Send one event; False when the session ended after the input (stop sending)."""
        try:
            sio.emit(event) if data is None else sio.emit(event, data)
            return True
        except Exception as exc:  # BadNamespaceError once the connection is gone
            self._pump(time.monotonic() + 0.2)  # a queued disconnect gives the better reason
            if self.ended:
                return False
            t = time.monotonic() - self.t0 if self.t0 is not None else None
            what = f"the connection was lost ({type(exc).__name__} emitting {event}: {exc})"
            if t is not None and t >= self.in_end:
                self.log.emit("error", t, reason=f"{what} at {t:.1f} s, after the input ended")
                self.ended = True
                return False
            raise self._fail(what + (f" at {t:.1f} s" if t is not None else "")) from None

    # -- received events --
    def _handle(self, wall: float, kind: str, data: Any) -> None:
        t = wall - self.t0 if self.t0 is not None else 0.0
        log = self.log
        if kind == "audio":
            if not isinstance(data, (bytes, bytearray, memoryview)):
                log.emit("error", t, reason=f"audio event with a {type(data).__name__} payload (ignored)")
                return
            if len(data) % 2:
                log.emit("error", t, reason=f"audio event of an odd {len(data)} bytes (last one dropped)")
            pcm = from_pcm16(data)
            if self.t0 is None:
                log.emit("error", 0.0, reason=f"{len(pcm)} audio samples before the stream started (dropped)")
                return
            start = self.buf.write(t, pcm)
            self.stats["recv_chunks"] += 1
            self.stats["recv_audio_s"] += len(pcm) / OUT_SR
            log.emit("recv_audio", t, n_samples=len(pcm), placed_at=start / OUT_SR)
        elif kind == "stop_tts":
            if self.t0 is None:
                return  # the reset acknowledgements of recording-started
            n = self.buf.interrupt(t)
            self.stats["stop_tts"] += 1
            self.stats["discarded_s"] += n / OUT_SR
            log.emit("interrupt", t, reason="stop_tts", discarded_s=n / OUT_SR)
            if n:
                log.emit("truncate", t, discarded_s=n / OUT_SR)
        elif kind in ("too_many_users", "out_time", "disconnect"):
            what = {"too_many_users": "refused the session: too_many_users (its --max_users are connected)",
                    "out_time": "ended the session: out_time (its per-user --timeout passed)",
                    "disconnect": "closed the connection"}[kind]
            extra = f" ({data})" if kind == "disconnect" and data else ""
            if self.t0 is None:
                raise self._fail(f"the server {what} before the audio stream started{extra}")
            if t >= self.in_end:
                log.emit("error", t, reason=f"the server {what} at {t:.1f} s, after the input ended{extra}")
                self.ended = True
                return
            raise self._fail(f"the server {what} at {t:.1f} s{extra}")
        elif kind == "prompt_success":
            return
        elif kind == "other":
            event, payload = data
            if isinstance(payload, str):
                log.emit("text", t, event=str(event), text=payload)
            else:
                log.emit("error", t, reason=f"unexpected server event {event!r} (ignored)")

    def _close(self, sio: Any) -> None:
        def close():
            try:
                sio.disconnect()
            except Exception:
                pass
        th = threading.Thread(target=close, name="freeze-omni-close", daemon=True)
        th.start()
        th.join(timeout=max(1.0, min(5.0, self.hard - time.monotonic())))
        stop = getattr(sio.eio, "stop_dispatch", None)
        if stop:
            stop()
