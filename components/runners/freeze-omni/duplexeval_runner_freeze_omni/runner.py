"""`freeze-omni`: a realtime socket.io client of a Freeze-Omni (or VITA-1.5) server.

The server is VITA-MLLM/Freeze-Omni bin/server.py (commit 3e17af4): Flask-SocketIO over HTTPS with a
self-signed certificate (web/pem.py). VITA-1.5's web demo server (VITA-MLLM/VITA web_demo/server.py)
speaks the same protocol. A `StreamRunner`: the core (duplexeval_runner.clocks) owns the clock, the
pacing, the drift log and the per-sample deadline; this module is one socket.io session per sample
(`FreezeOmniConnection`, on python-socketio's asyncio client, websocket transport over aiohttp):

1. `open()`: connect (`Authorization: Basic ...` when the URL carries `user:password@`; the
   socket.io path under the URL's path, for a reverse proxy's prefix); then `prompt_text` with the
   system prompt and wait for `prompt_success` (skipped when `system_prompt` is null, the default:
   the server keeps its own default role, as Full-Duplex-Bench's client leaves it); then
   `recording-started` and a wait for the `stop_tts` the server sends while it resets the user's
   state (Freeze-Omni sends two, the second just before its reset; VITA-1.5 one: at most 1 s for
   the first, then 0.3 s for the second), so no audio frame races that reset. The clock starts
   when open() returns;
2. `send(frame, k)`: one `audio` event per `frame_ms` frame, payload the JSON string
   `{"audio": [bytes of int16 little-endian PCM], "sample_rate": 16000}` that the server's
   `handle_audio` parses (clipped, never wrapped). The core sends frame k at t0 + (k+1) * frame,
   and zeros after the input until input end + `grace_s`: the server emits its output only in reply
   to incoming `audio` events, so the client keeps sending;
3. `finish()`: `recording-stopped`, only at the very end (the server interrupts its TTS on it),
   then a short wait for the `stop_tts` that answers it, so the disconnect does not overtake it.

`receive()` handles what the server sends, in arrival order: `audio` (raw bytes: int16 mono 24 kHz,
one TTS segment each) is placed at its arrival (`session.place`), `stop_tts` drops what has not
played (`session.interrupt`), other events with a text payload are logged as `text`.
`too_many_users` (the server's `--max_users` reached), `out_time` (its per-user `--timeout`) and a
lost connection end the session with a one-line `SessionFailed` (the core fails the sample, or
keeps the output when the input had already ended).

Arrival order: python-socketio's asyncio client runs every received engine.io message as its own
task (engineio AsyncClient._trigger_event with run_async). The handlers here are plain functions
that only stamp the message with the session's clock and put it on one FIFO queue; a task's first
step runs them, and tasks start in the order they were created, so the queue holds messages in
the order the read loop received them and receive() handles an `audio` chunk and the `stop_tts`
after it in that order (a coroutine handler that awaited before recording the message could be
overtaken by the next one).

Multi-round samples: `history` "replayed", as every network runner (why, and what the core does
with the output: components/duplex-runner/README.md, "Multi-round (MTR) protocol").
"""

from __future__ import annotations

import asyncio
import ssl
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlunsplit

import numpy as np

from duplexeval_common import secrets

from duplexeval_runner import deps, net
from duplexeval_runner.net import CA_ENV, INSECURE_ENV, from_pcm16, to_pcm16
from duplexeval_runner.protocol import Connection, Session, SessionFailed, StreamRunner
from duplexeval_runner.settings import Setting, Spec, frame_ms

NAME = "freeze-omni"
PACKAGE = "duplexeval_runner_freeze_omni"
IN_SR = 16000   # the server's PCM FIFO and Silero VAD run at 16 kHz (web/vad.py)
OUT_SR = 24000  # TiCodec TTS segments: int16 mono 24 kHz
START_ACK_TIMEOUT_S = 1.0  # for the first stop_tts that answers recording-started
SECOND_ACK_TIMEOUT_S = 0.3  # then for the second (Freeze-Omni sends two, VITA-1.5 one)
STOP_ACK_TIMEOUT_S = 1.0   # for the stop_tts that answers recording-stopped
SEND_LOST_WAIT_S = 0.5     # after a failed emit: how long to wait for the disconnect's reason

# The role Freeze-Omni's server gives every new connection before any prompt_text:
# VITA-MLLM/Freeze-Omni web/parms.py (commit 3e17af4), GlobalParams.__init__ (the literal there is
# continued over lines with backslashes, so the server's copy also carries runs of spaces). With
# `system_prompt` null (the default) no prompt_text is sent and the server uses its own copy; give
# this text (or any other) to set a role explicitly.
SERVER_DEFAULT_ROLE = ("You are a helpful voice assistant. Your answer should be coherent, natural, "
                       "simple, complete. Your name is Xiao Yun. Your inventor is Tencent.")

SETTINGS = Spec(
    *net.endpoint_settings("https://[user:password@]host:port[/prefix]: user:password sends HTTP Basic auth (for "
                           "a proxy in front; never logged or recorded), a path is a reverse proxy's prefix"),
    Setting("system_prompt", str, None, "null: no prompt_text, the server keeps its own default role (as FDB's "
            "client runs it); a string: sent as prompt_text before recording-started", nonempty=True),
    frame_ms(30, IN_SR, "frame length, in ms (FDB's client sends 30 ms, 480 samples)"),
    Setting("grace_s", float, 2.0, "silence sent after the input, in seconds: the server only emits audio in reply "
            "to incoming audio; output placed after the input is cut", ge=0),
    Setting("connect_timeout_s", float, 10.0, "the connection, and each wait for an answer (prompt_success), in "
            "seconds", gt=0),
    Setting("deadline_margin_s", float, 10.0, "the per-sample deadline is input + grace_s + the opening time + "
            "this, in seconds", ge=0),
    # aiohttp's own default (what the client had before it was a setting): a TTS segment of 24 kHz int16 audio
    # is about 48 kB a second
    net.message_limit(4 * 2**20),
    package=PACKAGE, profile="freeze-omni",
)


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
    u = net.parse_url(NAME, url)
    if u.scheme not in ("http", "https") or not u.hostname:
        raise net.fail(NAME, f"url must look like https://host:port (got scheme {u.scheme!r})")
    prefix = u.path.strip("/")
    return Endpoint(urlunsplit((u.scheme, u.netloc, u.path, u.query, "")), u.authorization, u.secret,
                    f"{prefix}/socket.io" if prefix else "socket.io")


_BYTE_TEXT = [str(b) for b in range(256)]  # each byte value as JSON writes it


def audio_payload(frame: np.ndarray) -> str:
    """The JSON string Freeze-Omni's handle_audio parses: int16 LE bytes as a list of byte values.

    The bytes json.dumps(..., separators=(",", ":")) gives, made from a table of the 256 values:
    this runs on the shared event loop once per frame of every session, and json.dumps of the
    960-item list took 2.5 times as long (perf/profile_realtime.py, docs/performance.md)."""
    digits = ",".join([_BYTE_TEXT[b] for b in to_pcm16(frame)])
    return f'{{"audio":[{digits}],"sample_rate":{IN_SR}}}'


class FreezeOmniRunner(StreamRunner):
    name = NAME
    history = "replayed"  # see the module docstring (multi-round samples)
    clock = "realtime"
    in_sr = IN_SR
    out_sr = OUT_SR
    SETTINGS = SETTINGS

    def __init__(self, seed: int | None = None, **args: Any):
        a, prof = self.SETTINGS.resolve(NAME, args)
        self.args = a
        self.profile = prof.record()
        url, self.insecure, self.ca_file = net.endpoint(NAME, a, example="https://127.0.0.1:8081")
        self.endpoint = endpoint(url)
        self.frame_ms = a["frame_ms"]
        self.grace_s = float(a["grace_s"])
        self.connect_timeout_s = float(a["connect_timeout_s"])
        # open(): the connection, the prompt's answer (each within connect_timeout_s) and the
        # recording-started acknowledgements; a second of slack so the phases' own timeouts,
        # which say what was missing, fire before the core's.
        self.open_timeout_s = (self.connect_timeout_s * (2 if a["system_prompt"] is not None else 1)
                               + START_ACK_TIMEOUT_S + SECOND_ACK_TIMEOUT_S + 1.0)
        self.deadline_margin_s = float(a["deadline_margin_s"])
        self.seed = seed  # sampling happens on the server (its --temperature/--top_p/--top_k)
        self._modules: tuple[Any, Any] | None = None
        self._ssl: ssl.SSLContext | None = None

    # -- setup (once, off the event loop: loading CAs blocks) --
    def setup(self) -> None:
        if self._modules is None:
            what = f"runner {NAME!r}"
            socketio = deps.import_module(what, "socketio")
            aiohttp = deps.import_module(what, "aiohttp")
            deps.import_module(what, "engineio")
            self._ssl = self.ssl_context()
            self._modules = (socketio, aiohttp)

    def ssl_context(self) -> ssl.SSLContext | None:
        return net.ssl_context(self.insecure, self.ca_file) if self.endpoint.tls else None

    def connect(self, session: Session) -> Connection:
        self.setup()
        return FreezeOmniConnection(self, session)

    def settings(self) -> dict:
        s = {k: v for k, v in self.args.items() if k != "url"}
        s.update({"url": self.endpoint.url, "auth_scheme": "basic" if self.endpoint.authorization else None,
                  "insecure": self.insecure, "ca_file": self.ca_file, "transport": "websocket",
                  "frame_samples": int(round(self.frame_ms * IN_SR / 1000)), "send_at": "frame end",
                  "open_timeout_s": self.open_timeout_s,
                  "client": {d: deps.version(d) for d in ("python-socketio", "python-engineio", "aiohttp")}})
        return s

    def scrub(self, text: str) -> str:
        secret = self.endpoint.secret
        return secrets.scrub(text, extra=[secret] if secret else [])

    def fail(self, msg: str) -> SessionFailed:
        return SessionFailed(self.scrub(f"runner {NAME!r}: {msg}"))


def _status(e: BaseException) -> str | None:
    """An HTTP status answering the handshake (aiohttp's WSServerHandshakeError, ClientResponseError)."""
    status = getattr(e, "status", None)
    if isinstance(status, int) and not isinstance(status, bool) and status >= 100:
        hint = " (check the user:password in the URL)" if status in (401, 403) else ""
        return f"the server answered HTTP {status} to the websocket handshake{hint}"
    return None


# The certificate is Freeze-Omni's own self-signed one (web/pem.py): say which file to pin.
CERT_HOW = (f"pass runner_args ca_file (or {CA_ENV}) with the server's cert.pem, or set insecure "
            f"(or {INSECURE_ENV}=1) to accept it unverified")


def _reason(exc: BaseException, timeout_s: float) -> str:
    """One line for a failed connection: TLS, HTTP status, refused, timeout, unknown host."""
    return net.connect_reason(exc, timeout_s, how=CERT_HOW, status=_status)


class FreezeOmniConnection(Connection):
    """One socket.io session, one sample."""

    def __init__(self, runner: FreezeOmniRunner, session: Session):
        self.r, self.session = runner, session
        self.sio: Any = None
        self.http: Any = None
        self.inbox: asyncio.Queue | None = None
        self.opened = False   # open() returned: the clock runs
        self.gone: str | None = None  # the disconnect's reason, once the connection is lost
        self.stops = 0        # stop_tts handled since the clock started
        self.changed: asyncio.Event | None = None
        self.stats = session.stats
        self.stats.update({"recv_chunks": 0, "recv_audio_s": 0.0, "stop_tts": 0, "discarded_s": 0.0})

    # -- the socket.io side: plain functions, so they run in arrival order (module docstring) --
    def _put(self, kind: str, data: Any = None) -> None:
        self.inbox.put_nowait((self.session.now(), self.opened, kind, data))

    def _on_disconnect(self, reason: Any = None) -> None:
        ws = getattr(getattr(self.sio, "eio", None), "ws", None)
        if getattr(ws, "close_code", None) == 1009:  # aiohttp closed it: a message passed max_msg_size
            reason = net.too_big_reason(self.r.args["max_message_bytes"])
            self.gone = reason
            self._put("too_big", reason)
        else:
            self.gone = str(reason) if reason else "disconnected"
            self._put("disconnect", reason)
        self.changed.set()

    def _client(self) -> Any:
        socketio, aiohttp = self.r._modules
        ctx = self.r._ssl
        self.http = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx if ctx is not None else True))
        ws_options = {"max_msg_size": self.r.args["max_message_bytes"], **({"ssl": ctx} if ctx is not None else {})}
        sio = socketio.AsyncClient(reconnection=False, handle_sigint=False, logger=False, engineio_logger=False,
                                   request_timeout=self.r.connect_timeout_s, ssl_verify=not self.r.insecure,
                                   http_session=self.http, websocket_extra_options=ws_options)
        for ev in ("audio", "stop_tts", "prompt_success", "too_many_users", "out_time"):
            sio.on(ev, (lambda kind: lambda *args: self._put(kind, args[0] if args else None))(ev))
        sio.on("disconnect", self._on_disconnect)
        sio.on("*", lambda event, *args: self._put("other", (event, args)))
        return sio

    # -- the contract --
    async def open(self) -> None:
        loop = asyncio.get_running_loop()
        self.inbox, self.changed = asyncio.Queue(), asyncio.Event()
        r, ep = self.r, self.r.endpoint
        self.sio = self._client()
        headers = {"Authorization": ep.authorization} if ep.authorization else {}
        t = loop.time()
        try:
            await asyncio.wait_for(self.sio.connect(ep.url, headers=headers, transports=["websocket"],
                                                    socketio_path=ep.socketio_path,
                                                    wait_timeout=r.connect_timeout_s),
                                   timeout=r.connect_timeout_s)
        except Exception as exc:  # socketio.exceptions.ConnectionError and friends; TimeoutError
            raise r.fail(f"cannot connect to {ep.url}: {_reason(exc, r.connect_timeout_s)}") from None
        connect_s = loop.time() - t
        prompt_s = None
        if r.args["system_prompt"] is not None:
            t = loop.time()
            await self._emit("prompt_text", r.args["system_prompt"])
            if not await self._wait("prompt_success", r.connect_timeout_s):
                raise r.fail(f"no prompt_success within {r.connect_timeout_s:g} s of prompt_text "
                             "(the server is silent or stuck)")
            prompt_s = loop.time() - t
        await self._emit("recording-started")
        acks = await self._wait("stop_tts", START_ACK_TIMEOUT_S)
        if acks:
            acks += await self._wait("stop_tts", SECOND_ACK_TIMEOUT_S)
        self.stats.update({"connect_s": round(connect_s, 6), "start_acks": acks})
        self.session.event("server_event", 0.0, event="connected", url=ep.url, transport="websocket",
                           connect_s=connect_s, prompt_s=prompt_s, start_acks=acks)
        if not acks:
            self.session.event("error", 0.0, reason=f"no stop_tts answered recording-started within "
                                                    f"{START_ACK_TIMEOUT_S:g} s (streaming anyway)")
        self.opened = True

    async def send(self, frame: np.ndarray, k: int) -> None:
        await self._emit("audio", audio_payload(frame))

    async def receive(self) -> None:
        while True:
            self._handle(*await self.inbox.get())

    async def finish(self) -> None:
        if self.gone is not None:
            return
        before = self.stops
        await self._emit("recording-stopped")  # last: the server interrupts its TTS on it
        loop = asyncio.get_running_loop()
        until = loop.time() + STOP_ACK_TIMEOUT_S
        while self.stops <= before and self.gone is None and loop.time() < until:
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), timeout=until - loop.time())
            except TimeoutError:
                break

    async def close(self) -> None:
        try:
            if self.sio is not None:
                try:
                    await asyncio.wait_for(self.sio.disconnect(), timeout=2.0)
                except Exception:
                    await asyncio.wait_for(self.sio.eio.disconnect(abort=True), timeout=1.0)
        except Exception:
            pass
        finally:
            if self.http is not None and not self.http.closed:
                try:
                    await self.http.close()
                except Exception:
                    pass

    # -- helpers --
    async def _emit(self, event: str, data: Any = None) -> None:
        """Send one event. When the connection is gone, wait briefly for the disconnect to reach
        receive() (which ends the session with its reason); fail only when it does not come."""
        try:
            if data is None:
                await self.sio.emit(event)
            else:
                await self.sio.emit(event, data)
            return
        except Exception as exc:  # socketio.exceptions.BadNamespaceError once the connection is gone
            what = f"{type(exc).__name__} sending {event}"
        loop = asyncio.get_running_loop()
        until = loop.time() + SEND_LOST_WAIT_S
        while self.gone is None and loop.time() < until:
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), timeout=until - loop.time())
            except TimeoutError:
                break
        if not self.opened:  # open() reads the queue itself: the disconnect (if any) gives the reason
            while not self.inbox.empty():
                self._handle(*self.inbox.get_nowait())
        if self.gone is None:
            raise self.r.fail(f"the connection was lost ({what})")
        # else: receive() ends with the disconnect's reason; the core stops at the next frame

    async def _wait(self, want: str, timeout: float, count: int = 1) -> int:
        """During open(): handle queued events until `count` of kind `want` came or `timeout`
        passed; return how many came."""
        loop = asyncio.get_running_loop()
        until, got = loop.time() + timeout, 0
        while got < count:
            left = until - loop.time()
            if left <= 0:
                break
            try:
                item = await asyncio.wait_for(self.inbox.get(), timeout=left)
            except TimeoutError:
                break
            if item[2] == want:
                got += 1
            else:
                self._handle(*item)
        return got

    def _handle(self, t: float, opened: bool, kind: str, data: Any) -> None:
        s, r = self.session, self.r
        if kind == "audio":
            if not isinstance(data, (bytes, bytearray, memoryview)):
                s.event("error", t, reason=f"audio event with a {type(data).__name__} payload (ignored)")
                return
            if len(data) % 2:
                s.event("error", t, reason=f"audio event of an odd {len(data)} bytes (last one dropped)")
            pcm = from_pcm16(data)
            if not opened:
                s.event("error", t, reason=f"{len(pcm)} audio samples before the stream started (dropped)")
                return
            start = s.place(pcm, t)
            self.stats["recv_chunks"] += 1
            self.stats["recv_audio_s"] = round(self.stats["recv_audio_s"] + len(pcm) / OUT_SR, 6)
            s.event("recv_audio", t, n_samples=len(pcm), placed_at=start)
        elif kind == "stop_tts":
            if not opened:
                return  # an acknowledgement of recording-started
            dropped = s.interrupt(t, reason="stop_tts")
            self.stats["stop_tts"] += 1
            self.stats["discarded_s"] = round(self.stats["discarded_s"] + dropped, 6)
            self.stops += 1
            self.changed.set()
        elif kind == "too_big":
            raise r.fail(f"{data}{'' if opened else ' (before the audio stream started)'}")
        elif kind in ("too_many_users", "out_time", "disconnect"):
            what = {"too_many_users": "refused the session: too_many_users (its --max_users are connected)",
                    "out_time": "ended the session: out_time (its per-user --timeout passed)",
                    "disconnect": "closed the connection"}[kind]
            extra = f" ({data})" if kind == "disconnect" and data else ""
            when = "" if opened else " before the audio stream started"
            raise r.fail(f"the server {what}{when}{extra}")
        elif kind == "other":
            event, args = data
            payload = args[0] if args else None
            if isinstance(payload, dict) and isinstance(payload.get("text"), str):
                payload = payload["text"]   # VITA-1.5's response_text: {"text": ...}
            if isinstance(payload, str):
                s.event("text", t, event=str(event), text=payload)
            else:
                s.event("server_event", t, event=str(event), payload=type(payload).__name__)
        # prompt_success outside open(): nothing to do
