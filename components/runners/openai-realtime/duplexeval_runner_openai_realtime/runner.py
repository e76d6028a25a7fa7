"""`openai-realtime`: a realtime client of the OpenAI Realtime API (GA shape, WebSocket).

It uses the `openai` SDK's realtime connection as openai/openai-python documents it
(src/openai/resources/realtime/realtime.py, examples/realtime/push_to_talk_app.py @ e43b422):
`AsyncOpenAI(api_key=..., websocket_base_url=...)`, `client.realtime.connect(model=...)`,
`conn.session.update(session={"type": "realtime", ...})`, `conn.input_audio_buffer.append(audio=b64)`
and `async for event in conn`. One connection (one Realtime session, one conversation) per sample:

1. open(): connect (`GET <url>/realtime?model=...` with `Authorization: Bearer $OPENAI_API_KEY`),
   send `session.update` (pcm16 at 24 kHz both ways, voice, instructions, turn detection) and wait
   for `session.updated` (bounded by open_timeout_s). An `error` event instead (a bad setting, an
   unknown model) fails the sample with the server's message. The clock starts when open() returns.
2. send(): frame k (`frame_ms` of pcm16 LE mono at 24 kHz, clipped, never wrapping) goes out as one
   `input_audio_buffer.append` at t0 + (k+1) * frame (the core's absolute deadlines), then
   `grace_s` of silence after the input so the server VAD can end the last turn and answer.
   The server's audio times (`audio_start_ms`, `audio_end_ms`) count the audio appended to the
   session, so they are on the input timeline exactly.
3. receive(): `response.output_audio.delta` is decoded and placed at its arrival time; the audio
   comes faster than real time, so the TimelineBuffer queues it back to back. Per item the runner
   keeps where each chunk was placed and how much was delivered. The receiver yields to the event
   loop after every event, so a burst of deltas never delays a frame's send (or another sample's).
   `input_audio_buffer.speech_started` -> a `vad_start` event at audio_start_ms (which includes the
   session's prefix_padding_ms, as the API documents) and, when turn detection interrupts
   responses (interrupt_response, the default), barge-in: the audio not yet played at the
   event's arrival is dropped (`session.interrupt(reason="speech_started")`), later deltas of
   that response are dropped too, and `conversation.item.truncate(item_id, content_index,
   audio_end_ms)` tells the server how much of each cut item was actually heard: the ms that
   played by now, never more than was delivered (the server rejects more, "Audio content of X ms
   is already shorter than Y ms"). `speech_stopped` -> `vad_end` at audio_end_ms (which includes
   silence_duration_ms); transcript deltas -> `text` events; `response.done` (status, usage) and
   the other lifecycle events -> `server_event`s; `error` events are logged, and when the server
   then closes, the sample fails with the server's message.
4. finish(): after the last frame, wait (at most finish_timeout_s) for a response still in
   progress to complete, so its events are on record; then close.

The key comes from the environment variable OPENAI_API_KEY only and never reaches logs, events,
runner.json or exception text. The endpoint is runner_args `url`, else MODEL_URL, else
wss://api.openai.com/v1 (the SDK appends /realtime). Only the GA event shape is spoken: a
server speaking the beta shape (`response.audio.delta`, flat session fields) is reported, not
decoded.

Multi-round samples: `history` "replayed", as every network runner (why, and what the core does
with the output: components/duplex-runner/README.md, "Multi-round (MTR) protocol").
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import ssl
from collections import Counter
from typing import Any
from urllib.parse import urlunsplit

import numpy as np

from duplexeval_common import secrets
from duplexeval_common.errors import DuplexEvalError

from duplexeval_runner import deps, net
from duplexeval_runner.events import cap_text
from duplexeval_runner.net import from_pcm16, to_pcm16
from duplexeval_runner.protocol import Connection, Session, SessionFailed, StreamRunner
from duplexeval_runner.settings import Setting, Spec, frame_ms

NAME = "openai-realtime"
PACKAGE = "duplexeval_runner_openai_realtime"
SR = 24000  # the Realtime API's pcm16: 16-bit LE mono at 24 kHz, in and out
KEY_ENV = "OPENAI_API_KEY"
DEFAULT_URL = "wss://api.openai.com/v1"

SERVER_VAD = {"type": "server_vad", "threshold": 0.5, "prefix_padding_ms": 300, "silence_duration_ms": 500,
              "create_response": True, "interrupt_response": True}
_RESPONSES = (Setting("create_response", bool, True, "the server answers each turn"),
              Setting("interrupt_response", bool, True, "the user's speech cancels a response (barge-in)"))
_MS = {"ge": 0, "null": True}
TURN_DETECTION = {
    "server_vad": (Setting("threshold", float, 0.5, "speech probability", ge=0, le=1),
                   Setting("prefix_padding_ms", int, 300, "audio kept before speech, in ms", **_MS),
                   Setting("silence_duration_ms", int, 500, "silence that ends a turn, in ms", **_MS),
                   Setting("idle_timeout_ms", int, None, "a turn after this much silence, in ms", **_MS),
                   *_RESPONSES),
    "semantic_vad": (Setting("eagerness", str, "auto", "how soon a turn ends",
                             choices=("low", "medium", "high", "auto")),
                     *_RESPONSES),
}
SETTINGS = Spec(
    *net.endpoint_settings("ws(s)://host[:port]/v1 (http(s) taken as ws(s)), no credentials: the key is "
                           f"{KEY_ENV}; null and no $MODEL_URL: {DEFAULT_URL}"),
    Setting("model", str, "gpt-realtime", "the model query parameter and session.model", nonempty=True),
    Setting("voice", (str, dict), "alloy", "the voice", expect='a voice name such as alloy, or {"id": a custom '
            'voice id}', check=lambda v: (isinstance(v, str) and bool(v.strip()))
            or (isinstance(v, dict) and set(v) == {"id"} and isinstance(v["id"], str))),
    Setting("instructions", str, None, "the session's instructions (null: the server's own)"),
    Setting("output_modalities", list, ["audio"], "what the model answers with", choices=(["audio"], ["text"])),
    Setting("turn_detection", dict, SERVER_VAD, "the server's turn detection (manual turns, null, are not driven "
            "by this runner)", fields=TURN_DETECTION),
    Setting("noise_reduction", str, None, "input noise reduction (null: none)", choices=("near_field", "far_field")),
    Setting("max_output_tokens", int, None, "the longest response (null: the server's default, \"inf\")", ge=1,
            le=4096, also=("inf",)),
    frame_ms(20, SR, "frame length, in ms (one input_audio_buffer.append each)"),
    Setting("grace_s", float, 3.0, "silence sent after the input, in seconds (the server VAD ends the last turn)",
            ge=0),
    Setting("open_timeout_s", float, 10.0, "connect and session.update until session.updated, in seconds", gt=0),
    Setting("finish_timeout_s", float, 5.0, "after the last frame, the wait for a response still in progress, in "
            "seconds", ge=0),
    net.message_limit(16 * 2**20),
    package=PACKAGE, profile="openai-realtime",
)
# Server events the runner reads no further than counting them (stats `server_events`).
_QUIET = {"conversation.item.added", "conversation.item.done", "conversation.item.created",
          "conversation.item.retrieved", "response.output_item.added", "response.output_item.done",
          "response.content_part.added", "response.content_part.done", "response.output_audio.done",
          "response.output_text.done", "response.output_audio_transcript.done", "conversation.created",
          "conversation.item.input_audio_transcription.delta",
          "conversation.item.input_audio_transcription.completed",
          "conversation.item.input_audio_transcription.segment", "input_audio_buffer.cleared"}
_LOGGED = {"session.created", "session.updated", "input_audio_buffer.committed", "conversation.item.truncated",
           "rate_limits.updated", "response.created", "response.done", "input_audio_buffer.timeout_triggered"}
_BETA = {"response.audio.delta", "response.audio_transcript.delta", "response.text.delta"}


def _fail(msg: str) -> DuplexEvalError:
    return net.fail(NAME, msg)


def ws_url(url: str) -> str:
    """The WebSocket base URL (ws/wss; http(s) mapped), without credentials (one-line error otherwise)."""
    if not isinstance(url, str) or not url.strip():
        raise _fail("url must be a non-empty string such as wss://api.openai.com/v1")
    u = net.parse_url(NAME, url)
    scheme = {"http": "ws", "https": "wss"}.get(u.scheme, u.scheme)
    if scheme not in ("ws", "wss") or not u.hostname:
        raise _fail(f"url must look like wss://host[:port]/v1 (got scheme {u.scheme!r})")
    if u.has_userinfo:
        raise _fail(f"url must not carry credentials: the key is read from the environment variable {KEY_ENV}")
    net.refuse_clear_key(NAME, scheme, u.hostname, KEY_ENV)
    return urlunsplit((scheme, u.raw_netloc, u.path, u.query, ""))


class OpenAIRealtimeRunner(StreamRunner):
    name = NAME
    history = "replayed"  # see the module docstring (multi-round samples)
    clock = "realtime"
    in_sr = SR
    out_sr = SR
    SETTINGS = SETTINGS

    def __init__(self, seed: int | None = None, **args: Any):
        a, prof = self.SETTINGS.resolve(NAME, args)
        self.args, self.profile = a, prof.record()
        self.seed = seed  # sampling happens on the server; the GA API takes no seed
        key = os.environ.get(KEY_ENV, "").strip()
        if not key:
            raise _fail(f"no API key: set the environment variable {KEY_ENV} (keys are read from the "
                        "environment only)")
        self._key = key
        url, self.insecure, self.ca_file = net.endpoint(NAME, a, default=DEFAULT_URL)
        self.url = ws_url(url)
        self.turn_detection = dict(a["turn_detection"])
        self.frame_ms = a["frame_ms"]
        self.grace_s = float(a["grace_s"])
        self.handshake_s = float(a["open_timeout_s"])
        self.open_timeout_s = self.handshake_s + 1.0  # the core's bound; ours (with its message) fires first
        self.finish_timeout_s = float(a["finish_timeout_s"])
        self.deadline_margin_s = self.finish_timeout_s + 5.0
        self.session_config = self._session_config()
        self._client: Any = None
        self._ws_options: dict | None = None
        self._closed_exc: tuple = ()

    def _session_config(self) -> dict:
        """The `session` of session.update (GA shape)."""
        a = self.args
        fmt = {"type": "audio/pcm", "rate": SR}
        audio_in: dict[str, Any] = {"format": fmt, "turn_detection": self.turn_detection}
        if a["noise_reduction"] is not None:
            audio_in["noise_reduction"] = {"type": a["noise_reduction"]}
        s: dict[str, Any] = {"type": "realtime", "model": a["model"], "output_modalities": list(a["output_modalities"]),
                             "audio": {"input": audio_in, "output": {"format": fmt, "voice": a["voice"]}}}
        if a["instructions"] is not None:
            s["instructions"] = a["instructions"]
        if a["max_output_tokens"] is not None:
            s["max_output_tokens"] = a["max_output_tokens"]
        return s

    @property
    def interrupts(self) -> bool:
        """Whether the server cancels a response when the user starts speaking (and so the client stops it)."""
        return bool(self.turn_detection.get("interrupt_response", True))

    def setup(self) -> None:
        """Import the SDK and build the client and the TLS context once, off the event loop."""
        if self._client is not None:
            return
        what = f"runner {NAME!r}"
        openai = deps.import_module(what, "openai")
        ws_exc = deps.import_module(what, "websockets.exceptions")
        deps.import_module(what, "openai.lib._websocket")  # what connect() imports: websockets.asyncio
        self._closed_exc = (ws_exc.ConnectionClosed, openai.WebSocketConnectionClosedError)
        self._invalid_status = ws_exc.InvalidStatus
        # max_size: the SDK's own default is None (no limit) and then no compression; keep it off
        opts: dict[str, Any] = {"open_timeout": self.handshake_s, "close_timeout": 2.0,
                                "max_size": self.args["max_message_bytes"], "compression": None}
        if self.url.startswith("wss://"):
            opts["ssl"] = self.ssl_context()
        self._ws_options = opts
        self._client = openai.AsyncOpenAI(api_key=self._key, websocket_base_url=self.url, max_retries=0)

    def ssl_context(self) -> ssl.SSLContext:
        return net.ssl_context(self.insecure, self.ca_file)

    def connect(self, session: Session) -> Connection:
        self.setup()
        return RealtimeConnection(self, session)

    def scrub(self, text: str) -> str:
        """Text safe to log: the key (and every other known secret) replaced."""
        return secrets.scrub(str(text).replace(self._key, secrets.REDACTED), (self._key,))

    def settings(self) -> dict:
        s = {k: v for k, v in self.args.items() if k not in ("url", "insecure", "ca_file")}
        s.update({"url": self.url, "insecure": self.insecure, "ca_file": self.ca_file,
                  "api": "realtime GA, WebSocket", "key_env": KEY_ENV, "session": self.session_config,
                  "frame_samples": int(round(self.frame_ms * SR / 1000)), "send_at": "frame end",
                  "placement": "arrival, queued back to back",
                  "barge_in": ("drop unplayed audio on speech_started, conversation.item.truncate at the played ms"
                               if self.interrupts else "off (turn_detection.interrupt_response false)"),
                  "client": {d: deps.version(d) for d in ("openai", "websockets")}})
        return s

    def models(self) -> dict:
        return {"realtime": {"provider": "openai", "model": self.args["model"], "endpoint": self.url}}


class _Item:
    """One assistant item's audio as this client received and placed it."""

    def __init__(self, item_id: str, response_id: str | None, content_index: int):
        self.id, self.response_id, self.content_index = item_id, response_id, content_index
        self.chunks: list[tuple[float, float]] = []  # (start s on the timeline, seconds)
        self.samples = 0       # delivered (placed or dropped)
        self.cut = False       # barge-in: later deltas are dropped
        self.truncated = False

    def delivered_ms(self) -> int:
        return self.samples * 1000 // SR


def _ms(ev: Any, field: str) -> int | None:
    v = getattr(ev, field, None)
    return int(v) if net.is_number(v) else None


def _plain(obj: Any) -> Any:
    """An SDK model (or anything) as plain JSON values."""
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    if hasattr(obj, "to_dict"):
        try:
            return obj.to_dict()
        except Exception:
            pass
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    return str(obj)


class RealtimeConnection(Connection):
    """One Realtime session for one sample (see the module docstring)."""

    def __init__(self, runner: OpenAIRealtimeRunner, session: Session):
        self.r, self.s = runner, session
        self.conn: Any = None
        self.items: dict[str, _Item] = {}
        self.active: set[str] = set()       # responses created and not done
        self.cut_responses: set[str] = set()
        self.idle = asyncio.Event()
        self.idle.set()
        self.closed = False
        self.last_error: str | None = None
        self.seen: Counter = Counter()
        self.st = session.stats
        self.st.update({"recv_chunks": 0, "recv_audio_s": 0.0, "dropped_audio_s": 0.0, "vad_starts": 0,
                        "interrupts": 0, "discarded_s": 0.0, "truncates": 0, "responses": 0,
                        "responses_cancelled": 0, "server_errors": 0})

    def fail(self, msg: str) -> SessionFailed:
        return SessionFailed(self.r.scrub(f"runner {NAME!r}: {msg}"))

    def lost(self, exc: BaseException) -> str:
        if net.too_big(exc):
            return net.too_big_reason(self.r.args["max_message_bytes"])
        rcvd = getattr(exc, "rcvd", None)
        if rcvd is not None:
            what = f"the server closed the connection (code {rcvd.code}{': ' + rcvd.reason if rcvd.reason else ''})"
        elif getattr(exc, "__cause__", None) is not None and hasattr(exc.__cause__, "rcvd"):
            return self.lost(exc.__cause__)
        else:
            what = "the connection was lost (no close frame)"
        return what + (f" after the server's error: {self.last_error}" if self.last_error else "")

    # -- the session --
    async def open(self) -> None:
        r = self.r
        loop = asyncio.get_running_loop()
        until = loop.time() + r.handshake_s
        try:
            self.conn = await r._client.realtime.connect(model=r.args["model"],
                                                         websocket_connection_options=r._ws_options).enter()
        except Exception as exc:  # websockets' InvalidStatus, OSError, TimeoutError, ssl errors
            raise self.fail(f"cannot connect to {r.url}: {self.connect_reason(exc)}") from None
        connect_s = loop.time() - (until - r.handshake_s)
        try:
            await self.conn.session.update(session=r.session_config)
            while True:
                left = until - loop.time()
                if left <= 0:
                    raise asyncio.TimeoutError
                ev = await asyncio.wait_for(self.conn.recv(), timeout=left)
                kind = getattr(ev, "type", None)
                if kind == "error":
                    raise self.fail(f"the server refused the session: {self.error_text(ev)}")
                await self.handle(ev)
                if kind == "session.updated":
                    break
        except asyncio.TimeoutError:
            raise self.fail(f"no session.updated within {r.handshake_s:g} s of connecting "
                            "(the server is silent or stuck)") from None
        except self.r._closed_exc as exc:
            raise self.fail(f"{self.lost(exc)} before the session was set up") from None
        self.s.event("server_event", 0.0, name="connected", connect_s=round(connect_s, 6), url=r.url)

    async def send(self, frame: np.ndarray, k: int) -> None:
        audio = base64.b64encode(to_pcm16(frame)).decode("ascii")
        try:
            await self.conn.input_audio_buffer.append(audio=audio)
        except self.r._closed_exc as exc:
            t = self.s.now()
            if t >= self.s.info.duration_s:
                return  # after the input: the receiver reports the close and the output so far is kept
            raise self.fail(f"{self.lost(exc)} (at {t:.1f} s, before the input ended; sending frame {k})") from None

    async def receive(self) -> None:
        try:
            async for ev in self.conn:
                await self.handle(ev)
                # A burst of buffered deltas would otherwise run back to back without yielding to the
                # loop: the sender's frame deadlines (and other samples' sessions) come first.
                await asyncio.sleep(0)
        except self.r._closed_exc as exc:
            raise self.fail(self.lost(exc)) from None
        finally:
            self.closed = True
            self.idle.set()
        if self.last_error:
            raise self.fail(f"the server closed the session after its error: {self.last_error}")

    async def finish(self) -> None:
        if self.active and not self.closed:
            try:
                await asyncio.wait_for(self.idle.wait(), timeout=self.r.finish_timeout_s)
            except asyncio.TimeoutError:
                self.s.event("error", reason=f"response {', '.join(sorted(self.active))} still in progress "
                                             f"{self.r.finish_timeout_s:g} s after the last frame; closed without it")

    async def close(self) -> None:
        st = self.st
        for k in ("recv_audio_s", "dropped_audio_s", "discarded_s"):
            st[k] = round(st[k], 6)
        st["server_events"] = {cap_text(str(k), 200): n for k, n in sorted(self.seen.items())}
        if self.conn is not None:
            try:
                await self.conn.close()
            except Exception:
                pass

    # -- server events --
    def error_text(self, ev: Any) -> str:
        err = getattr(ev, "error", None)
        msg = getattr(err, "message", None) or str(_plain(err))
        code = getattr(err, "code", None)
        # cut before scrubbing (scrubbing a long text costs more than its length)
        return self.r.scrub(cap_text(f"{msg} ({code})" if code else str(msg), 1000))

    async def handle(self, ev: Any) -> None:
        kind = getattr(ev, "type", None) or "unknown"
        self.seen[kind] += 1
        s, t = self.s, self.s.now()
        if kind == "response.output_audio.delta":
            await self.audio(ev, t)
        elif kind in ("response.output_audio_transcript.delta", "response.output_text.delta"):
            s.event("text", t, text=str(getattr(ev, "delta", "") or ""),
                    kind="transcript_delta" if "audio" in kind else "text_delta",
                    item_id=getattr(ev, "item_id", None), response_id=getattr(ev, "response_id", None))
        elif kind == "response.output_audio_transcript.done":
            s.event("text", t, text=getattr(ev, "transcript", "") or "", kind="transcript",
                    item_id=getattr(ev, "item_id", None), response_id=getattr(ev, "response_id", None))
        elif kind == "input_audio_buffer.speech_started":
            await self.speech_started(ev, t)
        elif kind == "input_audio_buffer.speech_stopped":
            ms = _ms(ev, "audio_end_ms")
            s.event("vad_end", t if ms is None else ms / 1000.0, audio_end_ms=ms,
                    item_id=getattr(ev, "item_id", None), detected_t=t)
        elif kind == "error":
            self.last_error = self.error_text(ev)
            self.st["server_errors"] += 1
            s.event("error", t, reason=f"server error: {self.last_error}")
        elif kind in _LOGGED:
            self.lifecycle(kind, ev, t)
        elif kind in _BETA and self.seen[kind] == 1:
            s.event("error", t, reason=f"the server sent the beta event {kind}: this runner speaks the GA "
                                       "Realtime shape only (its audio is not decoded)")
        elif kind not in _QUIET and self.seen[kind] == 1:
            s.event("server_event", t, name=kind, note="not used by this runner")

    def lifecycle(self, kind: str, ev: Any, t: float) -> None:
        s = self.s
        fields: dict[str, Any] = {}
        if kind in ("session.created", "session.updated"):
            sess = getattr(ev, "session", None)
            fields = {"session_id": getattr(sess, "id", None), "model": getattr(sess, "model", None)}
            if kind == "session.updated":
                fields["session"] = _plain(sess)
        elif kind == "response.created":
            rid = getattr(getattr(ev, "response", None), "id", None) or "?"
            self.active.add(rid)
            self.idle.clear()
            self.st["responses"] += 1
            fields = {"response_id": rid}
        elif kind == "response.done":
            resp = getattr(ev, "response", None)
            rid, status = getattr(resp, "id", None) or "?", getattr(resp, "status", None)
            self.active.discard(rid)
            if not self.active:
                self.idle.set()
            if status == "cancelled":
                self.st["responses_cancelled"] += 1
            fields = {"response_id": rid, "status": status,
                      "status_details": _plain(getattr(resp, "status_details", None)),
                      "usage": _plain(getattr(resp, "usage", None))}
            if status == "failed":
                s.event("error", t, reason=self.r.scrub(f"response {rid} failed: {fields['status_details']}"))
        elif kind == "input_audio_buffer.committed":
            fields = {"item_id": getattr(ev, "item_id", None)}
        elif kind == "conversation.item.truncated":
            fields = {"item_id": getattr(ev, "item_id", None), "audio_end_ms": getattr(ev, "audio_end_ms", None)}
        elif kind == "rate_limits.updated":
            fields = {"rate_limits": _plain(getattr(ev, "rate_limits", None))}
        s.event("server_event", t, name=kind, **{k: v for k, v in fields.items() if v is not None})

    async def audio(self, ev: Any, t: float) -> None:
        s = self.s
        rid, iid = getattr(ev, "response_id", None), getattr(ev, "item_id", None) or "?"
        try:
            data = base64.b64decode(getattr(ev, "delta", "") or "")
        except (ValueError, TypeError):
            s.event("error", t, reason="an audio delta that is not base64 (ignored)")
            return
        if len(data) % 2:
            s.event("error", t, reason=f"audio delta of an odd {len(data)} bytes (last byte dropped)")
        pcm = from_pcm16(data)
        item = self.items.get(iid)
        if item is None:
            item = self.items[iid] = _Item(iid, rid, int(getattr(ev, "content_index", 0) or 0))
        item.samples += len(pcm)
        if item.cut or rid in self.cut_responses:
            # A response the user interrupted: its audio is not played. An item first heard of now was
            # heard for 0 ms; the server is told so (its in-flight audio must not enter the context).
            item.cut = True
            self.st["dropped_audio_s"] += len(pcm) / SR
            if not item.truncated:
                await self.truncate(item, 0, t)
            return
        start = s.place(pcm, t)
        item.chunks.append((start, len(pcm) / SR))
        self.st["recv_chunks"] += 1
        self.st["recv_audio_s"] += len(pcm) / SR
        s.event("recv_audio", t, n_samples=len(pcm), placed_at=start, item_id=iid)

    async def speech_started(self, ev: Any, t: float) -> None:
        s = self.s
        ms = _ms(ev, "audio_start_ms")
        s.event("vad_start", t if ms is None else ms / 1000.0, audio_start_ms=ms,
                item_id=getattr(ev, "item_id", None), detected_t=t)
        self.st["vad_starts"] += 1
        if not self.r.interrupts:
            return
        self.cut_responses |= self.active
        cuts = []
        for item in self.items.values():
            if item.cut:
                continue
            played = sum(s.played(start, dur, t) for start, dur in item.chunks)
            if played < item.samples / SR - 1e-9 or item.response_id in self.active:
                cuts.append((item, played))
        if cuts or s.buf.pending(t) > 0:
            self.st["interrupts"] += 1
            self.st["discarded_s"] += s.interrupt(t, reason="speech_started")
        for item, played in cuts:
            item.cut = True
            await self.truncate(item, min(int(played * 1000), item.delivered_ms()), t)

    async def truncate(self, item: _Item, ms: int, t: float) -> None:
        """conversation.item.truncate at `ms` played (never more than delivered: the server rejects that)."""
        item.truncated = True
        self.st["truncates"] += 1
        self.s.event("truncate", t, item_id=item.id, content_index=item.content_index, audio_end_ms=ms,
                     delivered_ms=item.delivered_ms(), sent="conversation.item.truncate")
        try:
            await self.conn.conversation.item.truncate(item_id=item.id, content_index=item.content_index,
                                                       audio_end_ms=ms)
        except self.r._closed_exc:
            pass  # the receive loop reports the close

    def connect_reason(self, exc: BaseException) -> str:
        return net.connect_reason(exc, self.r.handshake_s, status=self._status, strerror=True)

    def _status(self, e: BaseException) -> str | None:
        """websockets' InvalidStatus: the HTTP answer to the handshake, with the API's error message."""
        if not isinstance(e, self.r._invalid_status):
            return None
        status = e.response.status_code
        body = bytes(e.response.body or b"")[:2000].decode("utf-8", "replace")
        detail = ""
        try:
            detail = json.loads(body)["error"]["message"]
        except Exception:
            detail = body.strip().splitlines()[0] if body.strip() else ""
        hint = f" (check {KEY_ENV})" if status in (401, 403) else ""
        return (f"the server answered HTTP {status} to the WebSocket handshake{hint}"
                + (f": {detail[:300]}" if detail else ""))
