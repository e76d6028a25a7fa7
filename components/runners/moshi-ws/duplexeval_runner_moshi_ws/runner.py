"""`moshi-ws`: the WebSocket client of a Moshi-protocol server (Moshi, PersonaPlex, FLM-Audio).

The protocol is kyutai-labs/moshi @ e6a55d2, moshi/moshi/server.py (with the message kinds of
client/src/protocol/types.ts and encoder.ts). One WebSocket per sample to `<url>/api/chat`; every
message is binary, its first byte the kind:

- 0x00 handshake, server to client, first. The server sends it once it holds its one-session
  lock and has reset its state (PersonaPlex: after its voice and text prompt phase, seconds).
  Nothing is sent before it; `open()` returns on it, so the core's clock starts there.
- 0x01 audio, both ways: Ogg-Opus stream bytes at 24 kHz (sphn.OpusStreamWriter /
  OpusStreamReader); the first message of each stream also carries the OpusHead/OpusTags pages.
  Frame k (1920 samples, 80 ms) goes out as 0x01 + what `append_pcm(frame)` returns; an empty
  return sends nothing (the bytes come with a later frame), as moshi's own client does.
- 0x02 text, server to client: one UTF-8 piece of the model's inner monologue (an event "text").
- Other kinds (0x03 control, 0x04 metadata, 0x05 error, 0x06 ping, 0x07 colored text of the web
  client's protocol) are not sent by the Python servers; they are logged ("server_event").

There is no end-of-input message: the client stops sending and closes. Full-Duplex-Bench's
client (DanielLin94144/Full-Duplex-Bench @ d7336bd, v1_v1.5/model_inference/moshi/inference.py)
sleeps 80 ms per frame, waits 0.5 s after the last one and closes.

Two clocks (runner_arg `clock`):

- "lockstep" (default). The server is frame-locked: one Mimi/LMGen step per 1920 input samples,
  one output frame per step. Frames go out as fast as the server drains them (at most `window`
  frames ahead of the output received), and the decoded output is placed by count, not arrival:
  `skip_frames` frames of zeros first (Moshi's and FLM-Audio's first LMGen step yields nothing;
  FDB's SKIP_FRAMES = 1; PersonaPlex's prompt phase already passed that step: 0), then the
  decoded PCM back to back. So the output does not depend on network or GPU speed, nor on when
  the handshake came; it measures the model's latency, not the system's. `finish()` waits until
  the output of every sent frame (less the skipped ones) arrived, or `quiet_timeout_s` without
  any.
- "realtime": frames on the core's absolute deadlines (frame k at t0 + (k+1) * 80 ms), decoded
  PCM placed at its arrival (t = now); `finish()` waits `tail_s` (FDB: 0.5 s) for what is in
  flight. System latency (network, queueing, a server slower than real time) is then included.

Opus delay: sphn's encoder and decoder add the codec's look-ahead, 156 samples (6.5 ms at 24 kHz)
per leg, measured in `setup()`: the model hears the user 6.5 ms late and its voice arrives 6.5 ms
late, 13 ms in all. The runner does not compensate: every real client of these servers (moshi's
web and Python clients, FDB's) hears the same delay, FDB's official numbers include it, and it is
far below one 80 ms frame. It is recorded in settings (`opus`).

A server that closes or fails before the input ends fails the sample with the reason. In lockstep
the input's end is counted in frames, not seconds (frames go out faster or slower than real time),
and it has ended only when the output of every input frame has come back (all of it lies inside
the input's span): the receiver keeps waiting, and the next `send`, or `finish`, fails the sample.

Multi-round samples: `history` "replayed", as every network runner (why, and what the core does
with the output: components/duplex-runner/README.md, "Multi-round (MTR) protocol").
"""

from __future__ import annotations

import asyncio
import ssl
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlunsplit

import numpy as np

from duplexeval_common import secrets
from duplexeval_common.errors import DuplexEvalError

from duplexeval_runner import deps, net
from duplexeval_runner.net import CA_ENV, INSECURE_ENV
from duplexeval_runner.protocol import Connection, Session, SessionFailed, StreamRunner
from duplexeval_runner.settings import Setting, Spec

NAME = "moshi-ws"
PACKAGE = "duplexeval_runner_moshi_ws"
DEFAULT_PROFILE = "moshi"
SR = 24000          # Mimi's rate, both ways
FRAME = 1920        # one Mimi frame: 80 ms at 24 kHz
CHAT_PATH = "/api/chat"
KIND_HANDSHAKE, KIND_AUDIO, KIND_TEXT = 0, 1, 2
KIND_NAMES = {3: "control", 4: "metadata", 5: "error", 6: "ping", 7: "coloredtext"}
SETTINGS_RETRY_S = 0.5
LINGER_S = 0.1  # lockstep: after the last output frame, for the text piece sent right after it
LOST_WAIT_S = 1.0  # a send that failed waits at most this long for the receiver to say why
BODY_LIMIT = 65536  # the most of an HTTP answer (to /api/settings) read

SETTINGS = Spec(
    *net.endpoint_settings("http(s)://, ws(s)://[user:password@]host[:port][/path][?query], or a bare host[:port]; "
                           "the path /api/chat when it has none"),
    Setting("default_port", int, 8998, "the port of a URL given as a bare host (moshi.server's default)", ge=1,
            le=65535),
    Setting("clock", str, "lockstep", "lockstep: frames as fast as the server answers, output placed by frame "
            "count; realtime: frames on the clock, output placed at arrival", choices=("lockstep", "realtime")),
    Setting("window", int, 8, "lockstep: frames sent ahead of the output received", ge=1, le=1000),
    Setting("skip_frames", int, 1, "lockstep: frames of zeros before the first output frame", ge=0, le=16),
    Setting("voice_prompt", str, None, "query parameter voice_prompt (PersonaPlex: a file in its voices folder)"),
    Setting("text_prompt", str, None, "query parameter text_prompt (PersonaPlex: the role)"),
    Setting("server_seed", int, None, "query parameter seed, not sent when null", ge=-2**63, lt=2**64),
    Setting("query", dict, {}, "further query parameters, {name: string or number}"),
    Setting("settings", dict, None, "a JSON object POSTed to /api/settings before each session (FLM-Audio)"),
    Setting("open_timeout_s", float, 60.0, "connect, settings and the wait for the handshake (the server's lock, "
            "prompts), in seconds", gt=0),
    Setting("quiet_timeout_s", float, 10.0, "lockstep: the longest the server may send no audio while it owes "
            "some, in seconds", gt=0),
    Setting("tail_s", float, 0.5, "realtime: the wait after the last frame for what is in flight, in seconds "
            "(FDB: 0.5)", ge=0),
    Setting("grace_s", float, 0.0, "silence sent after the input, in seconds", ge=0),
    Setting("deadline_s", float, None, "the whole session, in seconds (null: from the input's length and the "
            "clock)", gt=0),
    net.message_limit(2**20),
    package=PACKAGE, profile=DEFAULT_PROFILE,
)

def _fail(msg: str) -> DuplexEvalError:
    return net.fail(NAME, msg)


@dataclass(frozen=True)
class Endpoint:
    """Where the sessions go, split into what is safe to record and what is not."""
    scheme: str                 # "ws" or "wss"
    netloc: str                 # host[:port], no userinfo
    path: str                   # the chat path
    url_query: tuple            # (name, value) pairs the URL carried, sent first
    authorization: str | None   # "Basic ..." from the URL's userinfo
    secrets: tuple              # credential values to scrub from any message

    @property
    def tls(self) -> bool:
        return self.scheme == "wss"

    def chat_url(self, params: list[tuple[str, str]]) -> str:
        """The WebSocket URL with every query parameter percent-encoded (spaces as %20)."""
        pairs = list(self.url_query) + params
        query = urlencode(pairs, quote_via=quote, safe="") if pairs else ""
        return urlunsplit((self.scheme, self.netloc, self.path, query, ""))

    def settings_url(self) -> str:
        """FLM-Audio's settings endpoint: the chat path's last segment replaced by `settings`."""
        head = self.path.rstrip("/").rsplit("/", 1)[0]
        return urlunsplit(("https" if self.tls else "http", self.netloc, f"{head}/settings", "", ""))

    def shown(self, params: list[tuple[str, str]] | None = None) -> str:
        """The URL as it may be logged and recorded: credentials redacted."""
        return secrets.scrub(self.chat_url(params or []), self.secrets)


def endpoint(url: str, default_port: int) -> Endpoint:
    """Parse `url` (http(s)://, ws(s)://, or a bare host[:port]); the chat path when it has none."""
    raw = url.strip()
    bare = "://" not in raw
    if bare:
        raw = "ws://" + raw
    u = net.parse_url(NAME, raw)
    schemes = {"http": "ws", "ws": "ws", "https": "wss", "wss": "wss"}
    if u.scheme not in schemes or not u.hostname:
        raise _fail(f"url must look like http(s)://host:port or ws(s)://host:port (got scheme "
                    f"{u.scheme!r}{'' if u.hostname else ' and no host'})")
    if bare and u.port is None:
        u = replace(u, port=default_port)
    path = u.path if u.path not in ("", "/") else CHAT_PATH
    found = [u.secret] if u.secret else []
    pairs = tuple(parse_qsl(u.query, keep_blank_values=True))
    found += [v for k, v in pairs if v and _secret_param(k, v)]
    return Endpoint(schemes[u.scheme], u.netloc, path, pairs, u.authorization, tuple(found))


def _secret_param(name: str, value: str) -> bool:
    """Whether the secrets policy redacts this query parameter (a token for a proxy, say)."""
    probe = "ws://host/?" + urlencode([(name, value)])
    return secrets.redact_url(probe) != probe


def _query_value(name: str, v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str) or net.is_number(v):
        return str(v)
    raise _fail(f"query parameter {name!r} must be a string or a number (got {type(v).__name__})")


def query_params(a: dict) -> list[tuple[str, str]]:
    """The session's query parameters from the runner args (checked by SETTINGS; the URL's own come first)."""
    out = [(name, a[name]) for name in ("voice_prompt", "text_prompt") if a[name] is not None]
    if a["server_seed"] is not None:
        out.append(("seed", str(a["server_seed"])))
    for k, v in a["query"].items():
        if not isinstance(k, str) or not k:
            raise _fail("query parameter names must be non-empty strings")
        if k in ("voice_prompt", "text_prompt", "seed"):
            raise _fail(f"set query parameter {k!r} with its own runner_arg "
                        f"({'server_seed' if k == 'seed' else k}), not in query")
        out.append((k, _query_value(k, v)))
    return out


def measure_opus_delay(sphn: Any) -> int:
    """Samples one sphn Ogg-Opus encode + decode at 24 kHz delays a signal by (deterministic)."""
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(FRAME * 4) * 0.1).astype(np.float32)
    writer, reader = sphn.OpusStreamWriter(SR), sphn.OpusStreamReader(SR)
    y = np.concatenate([np.asarray(reader.append_bytes(writer.append_pcm(x[i:i + FRAME])), np.float32)
                        for i in range(0, len(x), FRAME)])
    if len(y) < FRAME * 3:
        return -1
    c = np.correlate(y[:FRAME * 3], x[:FRAME * 2], "valid")
    return int(np.argmax(c))


class MoshiWSRunner(StreamRunner):
    name = NAME
    history = "replayed"  # see the module docstring (multi-round samples)
    in_sr = SR
    out_sr = SR
    frame_ms = 80.0
    SETTINGS = SETTINGS

    def __init__(self, seed: int | None = None, **args: Any):
        self.args, prof = self.SETTINGS.resolve(NAME, args)
        self.given = {k: v for k, v in args.items() if k != "profile"}
        self.prof = prof
        self.profile = prof.record()
        a = self.args
        url, self.insecure, self.ca_file = net.endpoint(NAME, a, example="http://127.0.0.1:8998")
        self.endpoint = endpoint(url, a["default_port"])
        self.clock = a["clock"]
        # Every task's query is checked now, so a bad profile or argument stops the stage at once.
        for task in ["", *self.prof.by_task]:
            query_params(self.prof.for_sample(a, self.given, task))
        self.grace_s = float(a["grace_s"])
        self.open_timeout_s = float(a["open_timeout_s"])
        self.seed = seed  # sampling happens on the server (server_seed, where it takes one)
        self._aiohttp: Any = None
        self._sphn: Any = None
        self.opus_delay: int | None = None
        self.settings_posted = False  # this process has set the server's settings once

    # -- the contract --
    def setup(self) -> None:
        if self._aiohttp is None:
            what = f"runner {NAME!r}"
            self._sphn = deps.import_module(what, "sphn")
            self._aiohttp = deps.import_module(what, "aiohttp")
            self.opus_delay = measure_opus_delay(self._sphn)

    def connect(self, session: Session) -> Connection:
        self.setup()
        args = self.prof.for_sample(self.args, self.given, session.info.task)
        return _Connection(self, session, query_params(args), args)

    def deadline(self, duration_s: float) -> float:
        a = self.args
        if a["deadline_s"] is not None:
            return float(a["deadline_s"])
        span = duration_s + self.grace_s
        # lockstep runs at the server's speed: allow a server up to 4x slower than real time
        run = 4.0 * span + a["quiet_timeout_s"] if self.clock == "lockstep" else span + a["tail_s"]
        return self.open_timeout_s + run + self.deadline_margin_s

    def settings(self) -> dict[str, Any]:
        a = self.args
        s = {k: v for k, v in a.items() if k not in ("url", "query", "insecure", "ca_file")}
        s.update({
            "url": self.endpoint.shown(),
            "query": secrets.redact(a["query"]),
            "auth_scheme": "basic" if self.endpoint.authorization else None,
            "insecure": self.insecure,
            "ca_file": self.ca_file,
            "settings_url": secrets.scrub(self.endpoint.settings_url(), self.endpoint.secrets)
            if a["settings"] is not None else None,
            "frame_samples": FRAME,
            "placement": ("by frame count: skip_frames frames of zeros, then the decoded output back to back"
                          if self.clock == "lockstep" else "at arrival"),
            "per_task": "the profile's by_task values apply to the sample's task (events: server_event connect)",
            "opus": {"codec": "Ogg-Opus, sphn OpusStreamWriter/OpusStreamReader at 24 kHz",
                     "delay_samples_per_leg": self.opus_delay,
                     "round_trip_delay_s": None if self.opus_delay is None else round(2 * self.opus_delay / SR, 6),
                     "compensated": False,
                     "why": "every real client of these servers hears the same codec delay (FDB's "
                            "official numbers include it); it is far below one 80 ms frame"},
            "client": {d: deps.version(d) for d in ("aiohttp", "sphn")},
        })
        return s

    def models(self) -> dict[str, Any]:
        return {"server": {"url": self.endpoint.shown(), "profile": self.prof.name,
                           "protocol": "Moshi WebSocket byte protocol (kyutai-labs/moshi @ e6a55d2, "
                                       "moshi/moshi/server.py); the weights are the server's"}}

    # -- helpers --
    def scrub(self, text: str) -> str:
        return secrets.scrub(text, self.endpoint.secrets)

    def ssl_context(self) -> ssl.SSLContext | bool:
        # A pinned self-signed certificate (moshi.server --ssl, PersonaPlex's temporary one) is
        # trusted as given (net.ssl_context).
        return net.ssl_context(self.insecure, self.ca_file) if self.endpoint.tls else False


def _tls_hint(exc: BaseException) -> str:
    if net.cert_failure(exc) is not None or "CERTIFICATE_VERIFY_FAILED" in str(exc):
        return (f"; a self-signed certificate (moshi.server --ssl) needs ca_file (${CA_ENV}) or "
                f"insecure (${INSECURE_ENV}=1)")
    return ""


class _Connection(Connection):
    """One WebSocket, one sample."""

    def __init__(self, runner: MoshiWSRunner, session: Session, params: list[tuple[str, str]],
                 args: dict[str, Any]):
        self.r = runner
        self.s = session
        self.a = args  # the runner's settings with the profile's values for this sample's task
        self.params = params
        self.lockstep = runner.clock == "lockstep"
        self.skip = int(self.a["skip_frames"]) if self.lockstep else 0
        self.http: Any = None
        self.ws: Any = None
        self.writer = runner._sphn.OpusStreamWriter(SR)
        self.reader = runner._sphn.OpusStreamReader(SR)
        self.sent = 0            # frames encoded (and their bytes sent)
        self.decoded = 0         # output samples decoded
        self.progress = asyncio.Event()  # set on new output and when the connection ends
        self.ended: str | None = None    # why the connection ended (the server closed or failed)
        self.last_chunk_t = self.skip * FRAME / SR
        self.stats = {"out_samples": 0, "text_pieces": 0, "audio_messages": 0, "bytes_sent": 0,
                      "bytes_received": 0, "ignored_messages": 0}
        self._seen_kinds: set = set()

    # -- opening --
    async def open(self) -> None:
        aiohttp = self.r._aiohttp
        r = self.r
        headers = {"Authorization": r.endpoint.authorization} if r.endpoint.authorization else {}
        self.http = aiohttp.ClientSession(headers=headers)
        tls = r.ssl_context()
        self.s.event("server_event", t=0.0, kind="connect", url=r.endpoint.shown(self.params),
                     **{k: v for k, v in self.params if k in ("voice_prompt", "text_prompt")})
        if self.a["settings"] is not None:
            await self._post_settings(tls)
        url = r.endpoint.chat_url(self.params)
        loop = asyncio.get_running_loop()
        began = loop.time()
        try:
            self.ws = await self.http.ws_connect(self._url(url), ssl=tls, max_msg_size=self.a["max_message_bytes"],
                                                 autoping=True, heartbeat=None, compress=0)
        except aiohttp.WSServerHandshakeError as exc:
            raise SessionFailed(r.scrub(f"runner {NAME!r}: {r.endpoint.shown()} refused the WebSocket "
                                        f"(HTTP {exc.status}: {exc.message})")) from None
        except (aiohttp.ClientError, OSError) as exc:
            raise SessionFailed(r.scrub(f"runner {NAME!r}: cannot connect to {r.endpoint.shown()} "
                                        f"({type(exc).__name__}: {exc}){_tls_hint(exc)}")) from None
        while True:  # nothing is sent before the handshake
            msg = await self.ws.receive()
            if msg.type == aiohttp.WSMsgType.BINARY and msg.data[:1] == b"\x00":
                break
            if msg.type == aiohttp.WSMsgType.ERROR and net.too_big(msg.data):
                raise SessionFailed(f"{self._too_big()} before the handshake")
            if msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSING, aiohttp.WSMsgType.CLOSED,
                            aiohttp.WSMsgType.ERROR):
                raise SessionFailed(f"runner {NAME!r}: the server closed the connection before the handshake"
                                    f"{self._close_detail(msg)} (PersonaPlex does so when voice_prompt or "
                                    "text_prompt is missing or the voice file is unknown)")
            self._log_ignored(msg, before_handshake=True)
        waited = loop.time() - began
        self.stats["handshake_wait_s"] = round(waited, 6)
        self.s.event("server_event", t=0.0, kind="handshake", waited_s=waited)

    def _too_big(self) -> str:
        return f"runner {NAME!r}: {net.too_big_reason(self.a['max_message_bytes'])}"

    def _url(self, url: str) -> Any:
        import yarl  # aiohttp's URL type: taken as encoded, so the query is sent exactly as built
        return yarl.URL(url, encoded=True)

    async def _post_settings(self, tls: Any) -> None:
        """POST the settings; while the server is busy (503: its lock is held) try again, unless this
        process already set the same settings (they are the server's, kept between sessions)."""
        aiohttp = self.r._aiohttp
        r = self.r
        url = r.endpoint.settings_url()
        shown = r.scrub(url)
        while True:
            try:
                async with self.http.post(self._url(url), json=self.a["settings"], ssl=tls) as resp:
                    # an answer is read only so far (BODY_LIMIT bytes), its first 200 characters shown
                    body = (await resp.content.read(BODY_LIMIT)).decode("utf-8", "replace")[:200]
                    status = resp.status
            except (aiohttp.ClientError, OSError) as exc:
                raise SessionFailed(r.scrub(f"runner {NAME!r}: cannot POST the settings to {shown} "
                                            f"({type(exc).__name__}: {exc}){_tls_hint(exc)}")) from None
            if status == 200:
                r.settings_posted = True
                self.s.event("server_event", t=0.0, kind="settings", status=status)
                return
            if status == 503:
                if r.settings_posted:
                    self.s.event("server_event", t=0.0, kind="settings", status=status,
                                 note="server busy; this run's settings were already set")
                    return
                await asyncio.sleep(SETTINGS_RETRY_S)
                continue
            raise SessionFailed(r.scrub(f"runner {NAME!r}: {shown} answered HTTP {status} to the settings "
                                        f"({' '.join(body.split())})"))

    # -- sending --
    async def send(self, frame: np.ndarray, k: int) -> None:
        if self.lockstep:
            await self._wait_for_output(k - self.a["window"], f"before frame {k}")
        if self.ended is not None:
            if self.lockstep or self.s.now() < self.s.info.duration_s:
                raise SessionFailed(f"{self.ended} (at input frame {k} of {self._frames()}, before the "
                                    f"input ended; {self.decoded // FRAME} output frames received)")
            return
        data = self.writer.append_pcm(np.ascontiguousarray(frame, dtype=np.float32))
        self.sent += 1
        if len(data) == 0:
            return
        try:
            await self.ws.send_bytes(b"\x01" + bytes(data))
        except Exception as exc:  # the transport is closing: the receiver says why
            # (it reads the close frame, or its absence, when the loop next runs it: on a loaded
            # machine not always at the next yield, so wait for it a little, else say it here)
            deadline = asyncio.get_running_loop().time() + LOST_WAIT_S
            while self.ended is None and asyncio.get_running_loop().time() < deadline:
                await asyncio.sleep(0.01)
            why = self.ended or self.r.scrub(f"runner {NAME!r}: the connection was lost ({type(exc).__name__}: "
                                             f"{exc})")
            self.ended = self.ended or why
            if self.lockstep:
                raise SessionFailed(f"{why} (at input frame {k} of {self._frames()}, before the input "
                                    f"ended; {self.decoded // FRAME} output frames received)") from None
            return
        self.stats["bytes_sent"] += len(data) + 1

    def _frames(self) -> int:
        return -(-self.s.info.n_samples // FRAME)

    async def _wait_for_output(self, frames: int, what: str) -> bool:
        """Lockstep: wait until `frames` output frames were decoded; False when the connection
        ended first; SessionFailed after quiet_timeout_s without new output."""
        while self.decoded // FRAME < frames:
            if self.ended is not None:
                return False
            self.progress.clear()
            try:
                await asyncio.wait_for(self.progress.wait(), timeout=self.a["quiet_timeout_s"])
            except asyncio.TimeoutError:
                raise SessionFailed(
                    f"runner {NAME!r}: the server sent no audio for {self.a['quiet_timeout_s']:.1f} s "
                    f"{what} ({self.sent} frames sent, {self.decoded // FRAME} received; it is stuck, or not "
                    "frame-locked)") from None
        return True

    # -- receiving --
    async def receive(self) -> None:
        aiohttp = self.r._aiohttp
        msg = None
        try:
            while True:
                msg = await self.ws.receive()
                if msg.type == aiohttp.WSMsgType.BINARY:
                    self._handle(msg.data)
                elif msg.type == aiohttp.WSMsgType.ERROR and net.too_big(msg.data):
                    self.ended = self._too_big()
                    break
                elif msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSING,
                                  aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR):
                    break
                else:
                    self._log_ignored(msg)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.ended = self.r.scrub(f"runner {NAME!r}: the connection failed ({type(exc).__name__}: {exc})")
        if self.ended is None:
            code = getattr(self.ws, "close_code", None)
            if code in (None, 1006):
                self.ended = f"runner {NAME!r}: the connection to the server was lost (no WebSocket close frame)"
            else:
                self.ended = f"runner {NAME!r}: the server closed the connection{self._close_detail(msg)}"
        self.progress.set()
        if self.lockstep:
            # The input's end is counted in frames here: send() and finish() report this, not the
            # core's wall clock; wait to be cancelled.
            await asyncio.Event().wait()
        raise SessionFailed(self.ended)

    def _handle(self, data: bytes) -> None:
        if not data:
            return
        self.stats["bytes_received"] += len(data)
        kind, payload = data[0], data[1:]
        if kind == KIND_AUDIO:
            self.stats["audio_messages"] += 1
            pcm = np.asarray(self._decode(payload), dtype=np.float32).reshape(-1)
            if len(pcm):
                self._place(pcm)
        elif kind == KIND_TEXT:
            self.stats["text_pieces"] += 1
            text = payload.decode("utf-8", errors="replace")
            self.s.event("text", t=self.last_chunk_t if self.lockstep else None, text=text)
        elif kind == 7 and payload:  # colored text (the web client's protocol): a color byte, then UTF-8
            self.stats["text_pieces"] += 1
            self.s.event("text", t=self.last_chunk_t if self.lockstep else None,
                         text=payload[1:].decode("utf-8", errors="replace"), color=payload[0])
        else:
            self.stats["ignored_messages"] += 1
            name = "handshake" if kind == KIND_HANDSHAKE else KIND_NAMES.get(kind, f"kind {kind}")
            if kind == 5:  # cut before scrubbing: scrubbing a long text costs more than its length
                self.s.event("server_event", kind="error",
                             message=self.r.scrub(payload[:2000].decode("utf-8", errors="replace")[:500]))
            elif name not in self._seen_kinds:
                self._seen_kinds.add(name)
                self.s.event("server_event", kind="ignored", message_kind=name, n_bytes=len(data))

    def _decode(self, payload: bytes) -> np.ndarray:
        return self.reader.append_bytes(bytes(payload))

    def _place(self, pcm: np.ndarray) -> None:
        n = len(pcm)
        if self.lockstep:
            start = (self.skip * FRAME + self.decoded) / SR
            placed = self.s.place(pcm, t=start)
            t = start
        else:
            t = self.s.now()
            placed = self.s.place(pcm)
        self.last_chunk_t = placed
        self.decoded += n
        self.stats["out_samples"] = self.decoded
        self.s.event("recv_audio", t=t, n_samples=n, placed_at=placed)
        self.progress.set()

    def _log_ignored(self, msg: Any, before_handshake: bool = False) -> None:
        self.stats["ignored_messages"] += 1
        data = msg.data if isinstance(msg.data, (bytes, str)) else b""
        what = (f"kind {data[0]}" if isinstance(data, bytes) and data else str(getattr(msg.type, "name", msg.type)))
        self.s.event("server_event", t=0.0 if before_handshake else None, kind="ignored", message_kind=what,
                     before_handshake=before_handshake)

    def _close_detail(self, msg: Any) -> str:
        code = getattr(self.ws, "close_code", None) if self.ws is not None else None
        extra = ""
        if msg is not None and getattr(msg, "extra", None):
            extra = f": {msg.extra}"
        if msg is not None and msg.type == self.r._aiohttp.WSMsgType.ERROR and msg.data is not None:
            extra = f": {type(msg.data).__name__}: {msg.data}"
        return self.r.scrub(f" (close code {code}{extra})") if code is not None or extra else ""

    # -- the end --
    async def finish(self) -> None:
        if not self.lockstep:
            await asyncio.sleep(self.a["tail_s"])
            return
        want = max(min(self.sent, self._frames()) - self.skip, 0)  # grace frames owe no output
        try:
            complete = await self._wait_for_output(want, "after the last frame")
        except SessionFailed as exc:
            raise SessionFailed(f"{exc}; expected {want} output frames for {self.sent} input frames (if its first "
                                f"{self.skip} steps do not all yield nothing, set skip_frames)") from None
        if not complete:  # every output frame lies inside the input's span: the sample is incomplete
            raise SessionFailed(f"{self.ended} (after all {self.sent} input frames were sent, output for "
                                f"{self.decoded // FRAME} of {want} arrived: the model did not answer the whole input)")
        await asyncio.sleep(LINGER_S)  # the text that follows the last audio message (moshi's order)

    def _stats(self) -> None:
        st = self.s.stats
        st.update(self.stats)
        st["out_frames"] = self.decoded // FRAME
        st["frames_encoded"] = self.sent
        if self.lockstep:
            st["skip_frames"] = self.skip
            st["missing_frames"] = max(self.sent - self.skip - self.decoded // FRAME, 0)

    async def close(self) -> None:
        self._stats()
        try:
            if self.ws is not None and not self.ws.closed:
                await asyncio.wait_for(self.ws.close(), timeout=2.0)
        except BaseException:
            pass
        try:
            if self.http is not None:
                await self.http.close()
        except BaseException:
            pass
