"""An Amazon Nova Sonic (Bedrock InvokeModelWithBidirectionalStream) protocol test double: NOT the
model and NOT the service; there is no model inside.

It speaks what aws-sdk-bedrock-runtime 0.12.0 sends and reads, so the `nova-sonic` runner can be
tested with the real SDK (and its CRT HTTP/2 transport) as its client, with no network:

- HTTP/2 over TLS on 127.0.0.1 (`--cert`/`--key`; ALPN h2: the SDK streams both ways only over
  HTTP/2, which its CRT client negotiates only with TLS), `POST /model/<model id>/invoke-with-
  bidirectional-stream` (any other path answers 404 with a ResourceNotFoundException body);
- the SigV4 headers of the request: `authorization` (`AWS4-HMAC-SHA256 Credential=<key id>/<date>/
  <region>/bedrock/aws4_request, SignedHeaders=..., Signature=...`), `x-amz-date`,
  `x-amz-security-token`, `x-amz-content-sha256: STREAMING-AWS4-HMAC-SHA256-EVENTS`. When the
  environment holds NOVA_SONIC_DOUBLE_KEY_ID, NOVA_SONIC_DOUBLE_SECRET and NOVA_SONIC_DOUBLE_TOKEN,
  the double recomputes the request's signature and every event's chained signature with them
  (so a client signing with another secret, or none, is caught) and answers a bad one with 403;
- the request body: `application/vnd.amazon.eventstream` messages, each a signed envelope
  (`:date`, `:chunk-signature`) around the event `chunk` whose JSON payload `{"bytes": <base64>}`
  holds one Nova Sonic input event; decoded with smithy-aws-event-stream's own codec;
- the input events, checked strictly and recorded: sessionStart (inferenceConfiguration), promptStart
  (audioOutputConfiguration, which must ask for 24 kHz lpcm), the SYSTEM text content
  (contentStart / textInput / contentEnd), the USER AUDIO content (contentStart with
  audioInputConfiguration 16 kHz lpcm, audioInput events of base64 pcm16, contentEnd), promptEnd,
  sessionEnd.

Its "dialogue" is a deterministic script on input-audio time (samples received / 16 kHz): the user
speaks while samples exceed `level` (exact zeros are silence); `min_silence_s` of silence ends a turn
at its last loud sample E. Once the input has reached E + `reply_delay_s` the reply goes out:
completionStart, contentStart (ASSISTANT TEXT, generationStage SPECULATIVE), textOutput, contentEnd,
contentStart (ASSISTANT AUDIO), audioOutput chunks (`chunk_ms`, base64 pcm16 24 kHz) of a `tone_s`
tone (or of `reply_wav`), `speed` times faster than real time, contentEnd (END_TURN), usageEvent.
User speech starting while a reply plays (by input-audio time, for the reply's length from its
start) gets a textOutput `{ "interrupted" : true }` and the audio content's contentEnd with
stopReason INTERRUPTED; the rest of that reply is not sent. sessionEnd (or the end of the request
stream) sends completionEnd and ends the response.

Options: `die_after` N audioInput events (`die_how` "exception": a modelStreamErrorException event,
then the response ends; "reset": the HTTP/2 stream is reset; "exit": the process dies; `die_in_session`
k: only the k-th session), `mute` (answer no response headers and read nothing: a stuck server),
`big_after` N audioInput events (one audioOutput message of `big_bytes`, once).

Run as a script it prints `PORT <n>` once it listens and appends to the `--record` JSON-lines file
one `session` line per request (what it saw).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import binascii
import hashlib
import hmac
import io
import json
import os
import ssl
import struct
import sys
import wave
from dataclasses import asdict, dataclass, field
from urllib.parse import quote, unquote

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import numpy as np
from smithy_aws_event_stream.events import Event, EventMessage

IN_SR, OUT_SR = 16000, 24000
SUFFIX = "/invoke-with-bidirectional-stream"
EVENT_TYPE = "application/vnd.amazon.eventstream"
STREAMING = "STREAMING-AWS4-HMAC-SHA256-EVENTS"
CRED_ENVS = ("NOVA_SONIC_DOUBLE_KEY_ID", "NOVA_SONIC_DOUBLE_SECRET", "NOVA_SONIC_DOUBLE_TOKEN")
INPUT_EVENTS = ("sessionStart", "promptStart", "contentStart", "textInput", "audioInput", "toolResult",
                "contentEnd", "promptEnd", "sessionEnd")


@dataclass
class Script:
    level: float = 0.02
    min_silence_s: float = 0.3
    reply_delay_s: float = 0.5
    tone_s: float = 1.0
    reply_wav: str | None = None
    chunk_ms: int = 40
    speed: float = 4.0
    reply_text: str = "Sure, here is a short answer."
    die_after: int | None = None
    die_how: str = "exception"
    die_in_session: int | None = None
    mute: bool = False
    big_after: int | None = None
    big_bytes: int = 2 ** 20


@dataclass
class Seen:
    """What one session showed the double (the record's `session` line)."""

    index: int
    path: str = ""
    model_id: str = ""
    headers: dict = field(default_factory=dict)
    credential: str = ""
    signature_ok: bool | None = None
    events_signed_ok: bool | None = None
    order: list = field(default_factory=list)
    inference: dict = field(default_factory=dict)
    prompt: dict = field(default_factory=dict)
    system_prompt: str | None = None
    audio_contents: list = field(default_factory=list)
    audio_config: dict = field(default_factory=dict)
    frames: int = 0
    frame_bytes: list = field(default_factory=list)
    samples: int = 0
    speech_ends: list = field(default_factory=list)
    replies: int = 0
    interrupted: int = 0
    errors: list = field(default_factory=list)
    ended: str = ""


def sha256(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def _hmac(key: bytes, msg: str | bytes) -> bytes:
    return hmac.new(key, msg.encode() if isinstance(msg, str) else msg, hashlib.sha256).digest()


def signing_key(secret: str, date: str, region: str, service: str) -> bytes:
    k = _hmac(("AWS4" + secret).encode(), date)
    for part in (region, service, "aws4_request"):
        k = _hmac(k, part)
    return k


def parse_auth(value: str) -> dict:
    """`AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=...` as a dict."""
    algo, _, rest = value.partition(" ")
    out = {"algorithm": algo}
    for part in rest.split(","):
        k, _, v = part.strip().partition("=")
        out[k] = v
    return out


def canonical_path(path: str) -> str:
    # SigV4 for services other than S3: each segment URI-encoded twice (the path as sent is once)
    return "/".join(quote(seg, safe="-_.~") for seg in path.split("/"))


def request_signature(method: str, path: str, query: str, headers: dict, auth: dict, secret: str) -> str:
    names = auth["SignedHeaders"].split(";")
    headers = {**headers, "host": headers.get("host") or headers.get(":authority", "")}  # HTTP/2: :authority
    canon = "\n".join([method, canonical_path(path), query,
                       "".join(f"{n}:{' '.join(headers.get(n, '').split())}\n" for n in names),
                       auth["SignedHeaders"], headers.get("x-amz-content-sha256", "")])
    key_id, date, region, service, _ = auth["Credential"].split("/")
    scope = f"{date}/{region}/{service}/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", headers.get("x-amz-date", ""), scope, sha256(canon.encode())])
    return hmac.new(signing_key(secret, date, region, service), to_sign.encode(), hashlib.sha256).hexdigest()


class Session:
    """One bidirectional stream: its input events in, the scripted output events out."""

    def __init__(self, double: "Double", conn: "H2Conn", stream_id: int, seen: Seen, script: Script):
        self.d, self.conn, self.sid, self.seen, self.script = double, conn, stream_id, seen, script
        self.buf = bytearray()
        self.loud_run_end: int | None = None   # the last loud sample of the current turn
        self.in_speech = False
        self.pending: list[int] = []           # turn ends waiting for their reply time
        self.reply: asyncio.Task | None = None
        self.reply_span: tuple[int, int] | None = None  # input samples [start, end) a reply plays over
        self.closed = False
        self.prev_sig: str | None = None
        self.sign_key: bytes | None = None
        self.scope = ""
        self.prompt_name = "p"
        self.ids = 0
        self.big_sent = False
        self.reply_common: dict = {}

    # -- output --------------------------------------------------------------------------------

    def emit(self, body: dict) -> None:
        if self.closed:
            return
        payload = json.dumps({"bytes": base64.b64encode(json.dumps({"event": body}).encode()).decode()}).encode()
        msg = EventMessage(headers={":message-type": "event", ":event-type": "chunk",
                                    ":content-type": "application/json"}, payload=payload)
        self.conn.data(self.sid, msg.encode())

    def exception(self, kind: str, message: str) -> None:
        msg = EventMessage(headers={":message-type": "exception", ":exception-type": kind,
                                    ":content-type": "application/json"},
                           payload=json.dumps({"message": message}).encode())
        self.conn.data(self.sid, msg.encode())

    def end(self, how: str) -> None:
        if self.closed:
            return
        self.seen.ended = how
        self.closed = True
        if self.reply is not None:
            self.reply.cancel()
        self.conn.end(self.sid)
        self.d.record(self.seen)

    def _id(self) -> str:
        self.ids += 1
        return f"id-{self.seen.index}-{self.ids}"

    def _common(self, completion: str) -> dict:
        return {"sessionId": f"s{self.seen.index}", "promptName": self.prompt_name, "completionId": completion}

    async def _reply(self, start_sample: int) -> None:
        sc = self.script
        completion = self._id()
        common = self._common(completion)
        self.emit({"completionStart": common})
        text_id = self._id()
        self.emit({"contentStart": {**common, "contentId": text_id, "type": "TEXT", "role": "ASSISTANT",
                                    "additionalModelFields": json.dumps({"generationStage": "SPECULATIVE"}),
                                    "textOutputConfiguration": {"mediaType": "text/plain"}}})
        self.emit({"textOutput": {**common, "contentId": text_id, "role": "ASSISTANT", "content": sc.reply_text}})
        self.emit({"contentEnd": {**common, "contentId": text_id, "type": "TEXT", "stopReason": "PARTIAL_TURN"}})
        audio = reply_audio(sc)
        self.reply_span = (start_sample, start_sample + int(len(audio) * IN_SR / OUT_SR))
        audio_id = self._id()
        self.emit({"contentStart": {**common, "contentId": audio_id, "type": "AUDIO", "role": "ASSISTANT",
                                    "additionalModelFields": json.dumps({"generationStage": "FINAL"}),
                                    "audioOutputConfiguration": {"mediaType": "audio/lpcm", "sampleRateHertz": OUT_SR,
                                                                 "sampleSizeBits": 16, "channelCount": 1,
                                                                 "encoding": "base64", "audioType": "SPEECH"}}})
        step = int(OUT_SR * sc.chunk_ms / 1000)
        pcm = (np.clip(audio, -1, 1) * 32767).astype("<i2")
        try:
            for i in range(0, len(pcm), step):
                self.emit({"audioOutput": {**common, "contentId": audio_id, "role": "ASSISTANT",
                                           "content": base64.b64encode(pcm[i:i + step].tobytes()).decode()}})
                if sc.speed > 0:
                    await asyncio.sleep(sc.chunk_ms / 1000 / sc.speed)
            self.emit({"contentEnd": {**common, "contentId": audio_id, "type": "AUDIO", "stopReason": "END_TURN"}})
        except asyncio.CancelledError:
            self.interrupted(common, audio_id)  # the user cut in while it was still being sent
            raise
        finally:
            self.emit({"usageEvent": {**common, "totalInputTokens": 10, "totalOutputTokens": 25, "totalTokens": 35}})
        self.reply_common = common     # all sent, but it plays on (by input-audio time) until reply_span ends
        self.seen.replies += 1

    def interrupted(self, common: dict, audio_id: str | None) -> None:
        """What Nova Sonic sends when the user cuts in: a textOutput `{ "interrupted" : true }`, and the
        audio content's contentEnd INTERRUPTED when it was still open."""
        self.reply_span = None
        text2 = self._id()
        self.emit({"contentStart": {**common, "contentId": text2, "type": "TEXT", "role": "ASSISTANT",
                                    "additionalModelFields": json.dumps({"generationStage": "FINAL"})}})
        self.emit({"textOutput": {**common, "contentId": text2, "role": "ASSISTANT",
                                  "content": '{ "interrupted" : true }'}})
        self.emit({"contentEnd": {**common, "contentId": text2, "type": "TEXT", "stopReason": "INTERRUPTED"}})
        if audio_id is not None:
            self.emit({"contentEnd": {**common, "contentId": audio_id, "type": "AUDIO", "stopReason": "INTERRUPTED"}})
        self.seen.interrupted += 1

    # -- input ---------------------------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        self.buf += data
        while len(self.buf) >= 12 and not self.closed:
            total = struct.unpack("!I", self.buf[:4])[0]
            if len(self.buf) < total:
                return
            raw, self.buf = bytes(self.buf[:total]), self.buf[total:]
            try:
                outer = Event.decode(io.BytesIO(raw))
                self.envelope(outer.message)
            except Exception as exc:  # a protocol error: recorded, the session ends
                self.seen.errors.append(f"{type(exc).__name__}: {exc}")
                self.exception("validationException", f"bad input: {exc}")
                self.end("error")
                return

    def envelope(self, outer: EventMessage) -> None:
        h = outer.headers
        if ":chunk-signature" not in h or ":date" not in h:
            raise ValueError(f"an unsigned event (headers {sorted(h)})")
        if self.sign_key is not None:
            date = h[":date"]
            stamp = date.strftime("%Y%m%dT%H%M%SZ")
            date_header = EventMessage(headers={":date": date})._get_headers_bytes()
            to_sign = "\n".join(["AWS4-HMAC-SHA256-PAYLOAD", stamp, self.scope, self.prev_sig,
                                 sha256(date_header), sha256(outer.payload)])
            want = hmac.new(self.sign_key, to_sign.encode(), hashlib.sha256).hexdigest()
            if h[":chunk-signature"].hex() != want:
                self.seen.events_signed_ok = False
                raise ValueError("an event's chunk signature does not verify")
            self.seen.events_signed_ok = self.seen.events_signed_ok is not False
            self.prev_sig = want
        if not outer.payload:  # the signed empty frame that ends the input stream
            self.seen.order.append("(end of input)")
            return
        inner = Event.decode(io.BytesIO(outer.payload)).message
        ih = inner.headers
        if ih.get(":event-type") != "chunk" or ih.get(":message-type") != "event":
            raise ValueError(f"an event of type {ih.get(':event-type')!r} (expected chunk)")
        part = json.loads(inner.payload)
        event = json.loads(base64.b64decode(part["bytes"], validate=True))["event"]
        (name, body), = event.items()
        if name not in INPUT_EVENTS:
            raise ValueError(f"unknown input event {name!r}")
        self.handle(name, body)

    def handle(self, name: str, body: dict) -> None:
        seen = self.seen
        if not (name == "audioInput" and seen.order and seen.order[-1] == name):
            seen.order.append(name)   # a run of audioInput events is one entry
        if name == "sessionStart":
            seen.inference = body.get("inferenceConfiguration", {})
        elif name == "promptStart":
            seen.prompt = body
            self.prompt_name = body["promptName"]
            aoc = body["audioOutputConfiguration"]
            if (aoc.get("mediaType"), aoc.get("sampleRateHertz"), aoc.get("sampleSizeBits"),
                    aoc.get("channelCount"), aoc.get("encoding")) != ("audio/lpcm", OUT_SR, 16, 1, "base64"):
                raise ValueError(f"audioOutputConfiguration {aoc}")
        elif name == "contentStart":
            if body.get("type") == "AUDIO":
                cfg = body["audioInputConfiguration"]
                if (cfg.get("mediaType"), cfg.get("sampleRateHertz"), cfg.get("sampleSizeBits"),
                        cfg.get("channelCount"), cfg.get("encoding")) != ("audio/lpcm", IN_SR, 16, 1, "base64"):
                    raise ValueError(f"audioInputConfiguration {cfg}")
                seen.audio_config = cfg
                seen.audio_contents.append(body["contentName"])
        elif name == "textInput":
            if body.get("contentName") and seen.system_prompt is None:
                seen.system_prompt = body["content"]
        elif name == "audioInput":
            self.audio(body)
        elif name == "sessionEnd":
            self.flush_pending()
            self.emit({"completionEnd": {**self._common("end"), "stopReason": "END_TURN"}})
            self.end("session_end")

    def audio(self, body: dict) -> None:
        sc, seen = self.script, self.seen
        if body.get("contentName") not in seen.audio_contents:
            raise ValueError(f"audioInput for content {body.get('contentName')!r}, which was not started")
        try:
            raw = base64.b64decode(body["content"], validate=True)
        except binascii.Error as exc:
            raise ValueError(f"audioInput content is not base64: {exc}") from None
        if len(raw) % 2:
            raise ValueError(f"audioInput of an odd {len(raw)} bytes")
        x = np.frombuffer(raw, "<i2").astype(np.float32) / 32768.0
        seen.frames += 1
        if len(raw) not in seen.frame_bytes:
            seen.frame_bytes.append(len(raw))
        base = seen.samples
        seen.samples += len(x)
        loud = np.flatnonzero(np.abs(x) > sc.level)
        if len(loud):
            first = base + int(loud[0])
            if not self.in_speech and self.reply_span is not None and self.reply_span[0] <= first < self.reply_span[1]:
                if not self.reply.done():
                    self.reply.cancel()   # the user cut in while the reply is being sent
                else:
                    self.interrupted(self.reply_common, None)   # or while what was sent plays
            self.in_speech = True
            self.loud_run_end = base + int(loud[-1])
        if self.in_speech and seen.samples - 1 - self.loud_run_end >= sc.min_silence_s * IN_SR:
            self.in_speech = False
            seen.speech_ends.append(self.loud_run_end + 1)
            self.pending.append(self.loud_run_end + 1)
        while self.pending and seen.samples >= self.pending[0] + sc.reply_delay_s * IN_SR:
            self.start_reply(self.pending.pop(0))
        if sc.big_after is not None and seen.frames >= sc.big_after and not self.big_sent:
            self.big_sent = True
            self.emit({"audioOutput": {**self._common("big"), "contentId": "big", "role": "ASSISTANT",
                                       "content": base64.b64encode(b"\0" * sc.big_bytes).decode()}})
        if sc.die_after is not None and seen.frames >= sc.die_after and (
                sc.die_in_session is None or sc.die_in_session == seen.index + 1):
            self.die()

    def start_reply(self, end_sample: int) -> None:
        if self.reply is not None and not self.reply.done():
            return
        self.reply = asyncio.ensure_future(self._reply(self.seen.samples))

    def flush_pending(self) -> None:
        while self.pending:
            self.start_reply(self.pending.pop(0))

    def die(self) -> None:
        how = self.script.die_how
        self.seen.ended = f"died ({how})"
        if how == "exit":
            self.d.record(self.seen)
            os._exit(3)
        if how == "reset":
            self.closed = True
            self.conn.reset(self.sid)
            self.d.record(self.seen)
            return
        self.exception("modelStreamErrorException", "The model stream failed (test double).")
        self.end(self.seen.ended)


def reply_audio(sc: Script) -> np.ndarray:
    if sc.reply_wav:
        with wave.open(sc.reply_wav) as w:
            assert w.getframerate() == OUT_SR and w.getsampwidth() == 2 and w.getnchannels() == 1
            return np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float32) / 32768.0
    t = np.arange(int(round(sc.tone_s * OUT_SR))) / OUT_SR
    return (0.3 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)


class H2Conn:
    """One HTTP/2 connection (h2, server side) on an asyncio stream pair."""

    def __init__(self, double: "Double", reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.d, self.reader, self.writer = double, reader, writer
        self.h2 = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
        self.sessions: dict[int, Session] = {}
        self.queued: dict[int, bytearray] = {}  # data waiting for flow-control window
        self.ending: set[int] = set()

    def flush(self) -> None:
        out = self.h2.data_to_send()
        if out:
            self.writer.write(out)

    def data(self, sid: int, payload: bytes) -> None:
        self.queued.setdefault(sid, bytearray()).extend(payload)
        self.pump(sid)

    def pump(self, sid: int) -> None:
        q = self.queued.get(sid)
        try:
            while q:
                n = min(len(q), self.h2.local_flow_control_window(sid), self.h2.max_outbound_frame_size)
                if n <= 0:
                    break
                self.h2.send_data(sid, bytes(q[:n]))
                del q[:n]
            if not q and sid in self.ending:
                self.ending.discard(sid)
                self.h2.end_stream(sid)
        except (h2.exceptions.StreamClosedError, h2.exceptions.ProtocolError, KeyError):
            self.queued.pop(sid, None)
        self.flush()

    def end(self, sid: int) -> None:
        self.ending.add(sid)
        self.pump(sid)

    def reset(self, sid: int) -> None:
        try:
            self.h2.reset_stream(sid, error_code=2)  # INTERNAL_ERROR
        except h2.exceptions.StreamClosedError:
            pass
        self.flush()

    async def run(self) -> None:
        self.h2.initiate_connection()
        self.flush()
        try:
            while True:
                data = await self.reader.read(65536)
                if not data:
                    break
                try:
                    events = self.h2.receive_data(data)
                except h2.exceptions.ProtocolError:
                    break
                for ev in events:
                    self.on(ev)
                self.flush()
        except (ConnectionError, ssl.SSLError):
            pass
        finally:
            for s in self.sessions.values():
                if not s.closed:
                    s.seen.ended = s.seen.ended or "connection lost"
                    s.closed = True
                    if s.reply is not None:
                        s.reply.cancel()
                    self.d.record(s.seen)
            self.writer.close()

    def on(self, ev) -> None:
        if isinstance(ev, h2.events.RequestReceived):
            self.request(ev.stream_id, dict(ev.headers))
        elif isinstance(ev, h2.events.DataReceived):
            s = self.sessions.get(ev.stream_id)
            if s is not None and not s.d.script.mute:
                self.h2.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                s.feed(ev.data)
        elif isinstance(ev, h2.events.StreamEnded):
            s = self.sessions.get(ev.stream_id)
            if s is not None and not s.closed and not s.d.script.mute:
                s.flush_pending()
                s.end("input ended")
        elif isinstance(ev, h2.events.StreamReset):
            s = self.sessions.get(ev.stream_id)
            if s is not None and not s.closed:
                s.closed = True
                s.seen.ended = "reset by the client"
                if s.reply is not None:
                    s.reply.cancel()
                self.d.record(s.seen)
        elif isinstance(ev, h2.events.WindowUpdated):
            for sid in list(self.queued) if ev.stream_id == 0 else [ev.stream_id]:
                self.pump(sid)

    def answer(self, sid: int, status: int, kind: str | None = None, message: str = "") -> None:
        headers = [(":status", str(status)), ("content-type", EVENT_TYPE if status == 200 else "application/json"),
                   ("x-amzn-requestid", f"double-{sid}")]
        if kind:
            headers.append(("x-amzn-errortype", kind))
        self.h2.send_headers(sid, headers, end_stream=False)
        if status != 200:
            self.h2.send_data(sid, json.dumps({"message": message}).encode(), end_stream=True)
        self.flush()

    def request(self, sid: int, headers: dict) -> None:
        d = self.d
        seen = Seen(index=d.count)
        d.count += 1
        path, _, query = headers.get(":path", "").partition("?")  # the SDK sends an empty query: `...stream?`
        seen.path = path
        seen.headers = {k: v for k, v in headers.items()
                        if k in (":method", "content-type", "x-amz-content-sha256", "host", "user-agent")}
        s = Session(d, self, sid, seen, d.script)
        self.sessions[sid] = s
        if d.script.mute:
            return  # never answer, never read
        if headers.get(":method") != "POST" or not (path.startswith("/model/") and path.endswith(SUFFIX)):
            seen.errors.append(f"path {path}")
            self.answer(sid, 404, "ResourceNotFoundException", f"no such operation: {path}")
            s.closed = True
            d.record(seen)
            return
        seen.model_id = unquote(path[len("/model/"):-len(SUFFIX)])
        auth = parse_auth(headers.get("authorization", ""))
        seen.credential = auth.get("Credential", "")
        problem = None
        if auth["algorithm"] != "AWS4-HMAC-SHA256" or "Signature" not in auth:
            problem = "no SigV4 authorization"
        elif headers.get("x-amz-content-sha256") != STREAMING or headers.get("content-type") != EVENT_TYPE:
            problem = f"x-amz-content-sha256 {headers.get('x-amz-content-sha256')!r}, content-type {headers.get('content-type')!r}"
        creds = [os.environ.get(v) for v in CRED_ENVS]
        if problem is None and all(creds):
            key_id, secret, token = creds
            _, date, region, service, _ = seen.credential.split("/")
            if seen.credential.split("/")[0] != key_id or headers.get("x-amz-security-token") != token:
                problem = "the access key id or the session token is not the expected one"
            elif request_signature("POST", path, query, headers, auth, secret) != auth["Signature"]:
                seen.signature_ok = False
                problem = "the request signature does not match"
            else:
                seen.signature_ok = True
                s.sign_key = signing_key(secret, date, region, service)
                s.scope = f"{date}/{region}/{service}/aws4_request"
                s.prev_sig = auth["Signature"]
        if problem is not None:
            seen.errors.append(problem)
            self.answer(sid, 403, "AccessDeniedException", "The request signature we calculated does not match "
                        "the signature you provided (test double).")
            s.closed = True
            d.record(seen)
            return
        self.answer(sid, 200)


class Double:
    def __init__(self, script: Script, record: str | None):
        self.script, self.record_path = script, record
        self.count = 0

    def record(self, seen: Seen) -> None:
        if self.record_path:
            with open(self.record_path, "a") as f:
                f.write(json.dumps({"event": "session", **asdict(seen)}) + "\n")

    async def client(self, reader, writer) -> None:
        await H2Conn(self, reader, writer).run()


async def main_async(args) -> None:
    script = Script(**json.loads(args.script))
    double = Double(script, args.record)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(args.cert, args.key)
    ctx.set_alpn_protocols(["h2"])
    server = await asyncio.start_server(double.client, "127.0.0.1", args.port, ssl=ctx)
    print(f"PORT {server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await server.serve_forever()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--record")
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--script", default="{}")
    try:
        asyncio.run(main_async(ap.parse_args()))
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
