"""`nova-sonic`: Amazon Nova Sonic through Bedrock's bidirectional stream, on the realtime clock.

One `InvokeModelWithBidirectionalStream` per sample, through the AWS SDK for Python's Bedrock runtime
client (aws-sdk-bedrock-runtime 0.12.0, smithy-python: `AsyncBedrockRuntimeClient
.invoke_model_with_bidirectional_stream`) over its CRT HTTP/2 transport (smithy-http's
`AWSCRTHTTPClient`: a stream both ways needs HTTP/2, which the SDK's default aiohttp transport does
not speak, and CRT negotiates HTTP/2 only over TLS, so the endpoint must be https). On the wire:

1. `POST <endpoint>/model/<model_id>/invoke-with-bidirectional-stream`, SigV4-signed (service
   `bedrock`), the body an `application/vnd.amazon.eventstream` of signed events, each a `chunk`
   whose bytes are one Nova Sonic input event (JSON);
2. sessionStart (inferenceConfiguration maxTokens, topP, temperature), promptStart (text output
   text/plain, audio output 24 kHz 16-bit mono lpcm base64 with `voice_id`), the system prompt as a
   SYSTEM TEXT content (contentStart, textInput, contentEnd), then the USER AUDIO content
   (contentStart with audioInputConfiguration 16 kHz lpcm); the clock starts once the service has
   answered the request (HTTP 200: the SDK's `await_output`) (t0);
3. one audioInput event (base64 pcm16 LE, 16 kHz) per `frame_ms` frame (32 ms = 512 samples, the
   chunk Full-Duplex-Bench's client sends), frame k at t0 + (k+1) * frame on absolute deadlines
   (the core's pacing), then `grace_s` of silence frames, then contentEnd, promptEnd, sessionEnd
   and the end of the input stream;
4. output events: audioOutput (base64 pcm16 24 kHz) is placed on the input timeline at its arrival
   (after what is still queued); a textOutput whose content is `{ "interrupted" : true }` (barge-in:
   the service heard the user start talking) drops what has not played by then, and so does a
   contentEnd with stopReason INTERRUPTED; other textOutput is logged as text (with its role and
   generationStage), and contentStart/contentEnd, completionStart/completionEnd and usageEvent are
   logged. A modelled exception event (modelStreamErrorException, internalServerException,
   validationException, throttlingException, modelTimeoutException, serviceUnavailableException)
   fails the sample with its name and message.

Full-Duplex-Bench's client (DanielLin94144/Full-Duplex-Bench @ d7336bd,
v1_v1.5/model_inference/sonic/inference.py) sleeps 32 ms after each chunk (drifting late by the
loop's overhead), schedules each send as a task of its own (so chunks can overtake each other), and
writes replies through a wall-clock writer that pads silence. This runner sends each frame when it
is complete, on absolute deadlines, in order, and places replies at their arrival. On a barge-in the
client ends the user's audio content and opens a new one (`new_content_on_interrupt`, set by the
profile as it does), and it skips promptEnd and sessionEnd once a barge-in happened; this runner
always ends the prompt and the session.

Credentials come only from the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and, for
temporary credentials, AWS_SESSION_TOKEN); they go to the SDK and nowhere else (every error text is
scrubbed of them). The region is AWS_REGION, else AWS_DEFAULT_REGION, else us-east-1 (the client's
own). The endpoint is `url` (or MODEL_URL), default `https://bedrock-runtime.<region>.amazonaws.com`,
with `ca_file`/MODEL_CA or `insecure`/MODEL_INSECURE for a private certificate (a test double).

Multi-round samples: `history` "replayed", as every network runner (components/duplex-runner/README.md,
"Multi-round (MTR) protocol").
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import logging
import os
import re
import time
from typing import Any
from urllib.parse import urlunsplit

import numpy as np

from duplexeval_common import secrets
from duplexeval_common.errors import DuplexEvalError

from duplexeval_runner import deps, net
from duplexeval_runner.net import from_pcm16, to_pcm16
from duplexeval_runner.protocol import Connection, Session, SessionFailed, StreamRunner
from duplexeval_runner.settings import Setting, Spec, frame_ms, whole_samples

NAME = "nova-sonic"
PACKAGE = "duplexeval_runner_nova_sonic"
PROFILE = "nova-sonic"
IN_SR = 16000   # Nova Sonic takes 16-bit lpcm at 16 kHz
OUT_SR = 24000  # and answers 16-bit lpcm at 24 kHz (audioOutputConfiguration asks for it)
KEY_ID_ENV, SECRET_ENV, TOKEN_ENV = "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"
REGION_ENVS = ("AWS_REGION", "AWS_DEFAULT_REGION")
DEFAULT_REGION = "us-east-1"  # Full-Duplex-Bench's client's
SDK_DISTS = ("aws-sdk-bedrock-runtime", "smithy-aws-core", "smithy-aws-event-stream", "smithy-core",
             "smithy-http", "aws-sdk-signers", "awscrt")
EVENT_PAYLOAD_MAX = 16 * 2**20  # the event-stream codec's own payload limit (smithy-aws-event-stream)
PROMPT = "prompt"
_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d+$")

SETTINGS = Spec(
    *net.endpoint_settings("the Bedrock runtime endpoint, https://host[:port] (HTTP/2 needs TLS: no http://), "
                           "no credentials, path, query or fragment; null and no $MODEL_URL: "
                           "https://bedrock-runtime.<region>.amazonaws.com"),
    Setting("model_id", str, "amazon.nova-sonic-v1:0", "the Bedrock model id", nonempty=True),
    Setting("system_prompt", str, None, "the SYSTEM text content sent before the audio (null: none)"),
    Setting("voice_id", str, "matthew", "audioOutputConfiguration.voiceId (a Nova Sonic voice)", nonempty=True),
    Setting("max_tokens", int, 1024, "inferenceConfiguration.maxTokens", ge=1, le=100000),
    Setting("top_p", float, 0.9, "inferenceConfiguration.topP", ge=0, le=1),
    Setting("temperature", float, 0.7, "inferenceConfiguration.temperature", ge=0, le=1),
    Setting("new_content_on_interrupt", bool, False,
            "after a barge-in, end the user's audio content and start a new one (FDB's client does)"),
    frame_ms(32, IN_SR, "frame length, in ms (32 ms: 512 samples at 16 kHz, FDB's CHUNK_SIZE)"),
    Setting("grace_s", float, 2.0, "silence sent after the input while the last reply streams in, in seconds",
            ge=0, le=60),
    Setting("finish_wait_s", float, 2.0, "after sessionEnd, the longest wait for the service to end its "
            "stream, in seconds", ge=0, le=60),
    Setting("open_timeout_s", float, 10.0, "connect, TLS, the request and its answer, in seconds", gt=0, le=300),
    Setting("max_message_bytes", int, EVENT_PAYLOAD_MAX, "the largest event the service may send, in bytes "
            "(the event-stream codec caps it at 16 MiB); a larger one fails the sample (one line naming "
            "this limit)", ge=1, le=EVENT_PAYLOAD_MAX),
    package=PACKAGE, profile=PROFILE,
)


def _fail(msg: str) -> DuplexEvalError:
    return net.fail(NAME, msg)


def credentials(environ: dict | None = None) -> tuple[str, str, str | None]:
    """(access key id, secret access key, session token or None), from the environment only."""
    env = os.environ if environ is None else environ
    key_id, secret, token = (env.get(v, "").strip() for v in (KEY_ID_ENV, SECRET_ENV, TOKEN_ENV))
    missing = [v for v, x in ((KEY_ID_ENV, key_id), (SECRET_ENV, secret)) if not x]
    if missing:
        # (no "credentials:" before the hint: the secret scrubber reads `name: value` as a credential)
        raise _fail(f"no AWS credentials in the environment; set {' and '.join(missing)} "
                    f"(and {TOKEN_ENV} for temporary credentials)")
    return key_id, secret, token or None


def region(environ: dict | None = None) -> tuple[str, str]:
    """(region, where it came from): AWS_REGION, else AWS_DEFAULT_REGION, else us-east-1."""
    env = os.environ if environ is None else environ
    for var in REGION_ENVS:
        value = env.get(var, "").strip()
        if value:
            if not _REGION.match(value):
                raise _fail(f"{var} must be an AWS region name such as us-east-1 (got {value!r})")
            return value, var
    return DEFAULT_REGION, "default (us-east-1, as Full-Duplex-Bench's client)"


def endpoint_url(url: str) -> str:
    """The endpoint as the SDK takes it: https://host[:port], nothing else."""
    u = net.parse_url(NAME, url, detail=False)
    if u.scheme != "https" or not u.hostname:
        why = (" (the SDK streams both ways only over HTTP/2, which its CRT client negotiates only over TLS)"
               if u.scheme == "http" else "")
        raise _fail(f"url must be https://host[:port] (got scheme {u.scheme!r}){why}")
    if u.has_userinfo or u.query or u.fragment or u.path.strip("/"):
        raise _fail(f"url must carry no credentials, path, query or fragment: the credentials come from "
                    f"{KEY_ID_ENV} / {SECRET_ENV} / {TOKEN_ENV}")
    return urlunsplit(("https", u.netloc, "", "", ""))


def event(name: str, body: dict) -> bytes:
    """One Nova Sonic input event as the bytes of a chunk."""
    return json.dumps({"event": {name: body}}, separators=(",", ":")).encode()


def is_interrupted(text: Any) -> bool:
    """Whether a textOutput's content is Nova Sonic's barge-in signal `{ "interrupted" : true }`."""
    if not isinstance(text, str) or '"interrupted"' not in text:
        return False
    try:
        return json.loads(text).get("interrupted") is True
    except (ValueError, AttributeError):
        return False


class NovaSonicRunner(StreamRunner):
    name = NAME
    history = "replayed"  # see the module docstring (multi-round samples)
    clock = "realtime"
    in_sr = IN_SR
    out_sr = OUT_SR
    deterministic = False
    SETTINGS = SETTINGS

    def __init__(self, seed: int | None = None, **given: Any):
        self.args, prof = self.SETTINGS.resolve(NAME, given)
        self.profile = prof.record()
        a = self.args
        self.seed = seed
        self._key_id, self._secret, self._token = credentials()
        self.region, self.region_from = region()
        url, self.insecure, self.ca_file = net.endpoint(NAME, a)
        self.custom_url = url is not None
        self.url = endpoint_url(url) if url else f"https://bedrock-runtime.{self.region}.amazonaws.com"
        self.frame_ms = a["frame_ms"]
        self.frame = whole_samples(self.frame_ms, IN_SR)
        self.grace_s = float(a["grace_s"])
        self.open_timeout_s = float(a["open_timeout_s"])
        self._sdk: dict[str, Any] | None = None

    # -- the SDK ---------------------------------------------------------------------------------

    def setup(self) -> None:
        if self._sdk is not None:
            return
        what = f"runner {NAME!r}"
        client = deps.import_module(what, "aws_sdk_bedrock_runtime.client")
        config = deps.import_module(what, "aws_sdk_bedrock_runtime.config")
        models = deps.import_module(what, "aws_sdk_bedrock_runtime.models")
        crt = deps.import_module(what, "smithy_http.aio.crt")
        crt_io = deps.import_module(what, "awscrt.io")
        logging.getLogger("asyncio").addFilter(_quiet_body_writer)
        self._sdk = {"client": client, "config": config, "models": models, "crt": crt, "crt_io": crt_io,
                     "transport": transport_class(crt.AWSCRTHTTPClient, crt_io)}

    def transport(self) -> Any:
        """A CRT HTTP/2 client trusting `ca_file` (or nothing, when `insecure`), else the system CAs."""
        return self._sdk["transport"](ca_file=self.ca_file, insecure=self.insecure)

    async def client(self) -> Any:
        sdk = self._sdk
        cfg = await sdk["config"].AsyncBedrockRuntimeConfig.resolve(
            endpoint_uri=self.url, region=self.region, aws_access_key_id=self._key_id,
            aws_secret_access_key=self._secret, aws_session_token=self._token,
            transport=self.transport(), max_attempts=1, retry_mode="standard")
        return sdk["client"].AsyncBedrockRuntimeClient(config=cfg)

    def connect(self, session: Session) -> Connection:
        self.setup()
        return _Sonic(self, session)

    # -- what is sent ----------------------------------------------------------------------------

    def session_start(self) -> bytes:
        a = self.args
        return event("sessionStart", {"inferenceConfiguration": {
            "maxTokens": a["max_tokens"], "topP": float(a["top_p"]), "temperature": float(a["temperature"])}})

    def prompt_start(self) -> bytes:
        return event("promptStart", {
            "promptName": PROMPT, "textOutputConfiguration": {"mediaType": "text/plain"},
            "audioOutputConfiguration": {"mediaType": "audio/lpcm", "sampleRateHertz": OUT_SR, "sampleSizeBits": 16,
                                         "channelCount": 1, "voiceId": self.args["voice_id"], "encoding": "base64",
                                         "audioType": "SPEECH"},
            "toolUseOutputConfiguration": {"mediaType": "application/json"}, "toolConfiguration": {"tools": []}})

    def system_events(self) -> list[bytes]:
        text = self.args["system_prompt"]
        if text is None:
            return []
        return [event("contentStart", {"promptName": PROMPT, "contentName": "system", "type": "TEXT",
                                       "interactive": True, "role": "SYSTEM",
                                       "textInputConfiguration": {"mediaType": "text/plain"}}),
                event("textInput", {"promptName": PROMPT, "contentName": "system", "content": text}),
                event("contentEnd", {"promptName": PROMPT, "contentName": "system"})]

    @staticmethod
    def audio_start(content: str) -> bytes:
        return event("contentStart", {
            "promptName": PROMPT, "contentName": content, "type": "AUDIO", "interactive": True, "role": "USER",
            "audioInputConfiguration": {"mediaType": "audio/lpcm", "sampleRateHertz": IN_SR, "sampleSizeBits": 16,
                                        "channelCount": 1, "audioType": "SPEECH", "encoding": "base64"}})

    # -- records ----------------------------------------------------------------------------------

    def settings(self) -> dict:
        s = {k: v for k, v in self.args.items() if k not in ("url", "insecure", "ca_file")}
        s.update({"url": self.url, "url_from": "runner_args/MODEL_URL" if self.custom_url else "region default",
                  "operation": f"POST /model/{self.args['model_id']}/invoke-with-bidirectional-stream",
                  "region": self.region, "region_from": self.region_from,
                  "insecure": self.insecure, "ca_file": self.ca_file,
                  "credentials_env": [KEY_ID_ENV, SECRET_ENV] + ([TOKEN_ENV] if self._token else []),
                  "frame_samples": self.frame, "send_at": "frame end", "transport": "awscrt HTTP/2 (TLS, ALPN h2)",
                  "sessions": "one per sample", "client": {d: deps.version(d) for d in SDK_DISTS}})
        return s

    def models(self) -> dict:
        return {"nova-sonic": {"model_id": self.args["model_id"], "region": self.region, "endpoint": self.url}}

    def scrub(self, text: str) -> str:
        return secrets.scrub(text, extra=[self._secret, *([self._token] if self._token else [])])


def _quiet_body_writer(record: logging.LogRecord) -> bool:
    """Drop asyncio's "Task exception was never retrieved" for awscrt's request-body writer when the
    service ended the stream first (AWS_ERROR_HTTP_STREAM_HAS_COMPLETED): the sample's own reason is
    recorded; the writer task's is noise on stderr."""
    exc = record.exc_info[1] if record.exc_info else None
    ctx = getattr(record, "msg", "")
    return not (exc is not None and "HTTP_STREAM_HAS_COMPLETED" in str(exc)
                and "_set_request_body_generator" in "".join(str(a) for a in (record.args or ())) + str(ctx))


def transport_class(base: type, crt_io: Any) -> type:
    """smithy-http's AWSCRTHTTPClient with a TLS context of our own. The SDK's always uses the system
    trust store (its `_tls_ctx`, made from default TlsContextOptions); a private endpoint needs its CA
    (or no verification). Its deepcopy (the SDK copies the config per client) keeps the TLS choice."""

    class Transport(base):  # type: ignore[misc, valid-type]
        def __init__(self, ca_file: str | None = None, insecure: bool = False, **kw: Any):
            super().__init__(**kw)
            self._duplexeval_tls = (ca_file, insecure)
            if ca_file is not None or insecure:
                opts = crt_io.TlsContextOptions()
                if ca_file is not None:
                    opts.override_default_trust_store_from_path(None, ca_file)
                if insecure:
                    opts.verify_peer = False
                self._tls_ctx = crt_io.ClientTlsContext(opts)

        def __deepcopy__(self, memo: Any) -> Any:
            ca_file, insecure = self._duplexeval_tls
            return Transport(ca_file=ca_file, insecure=insecure, eventloop=self._eventloop)

    return Transport


class _Sonic(Connection):
    """One bidirectional stream: one sample."""

    def __init__(self, runner: NovaSonicRunner, session: Session):
        self.r, self.s = runner, session
        self.models = runner._sdk["models"]
        self.client: Any = None
        self.stream: Any = None
        self.out: Any = None
        self.content = 0
        self.content_name = "audio-0"
        self.restart = False           # a barge-in came: start a new audio content before the next frame
        self.finishing = False
        self.ended = asyncio.Event()   # receive() stopped
        self.idle = asyncio.Event()
        self.idle.set()
        self.stage: str | None = None  # generationStage of the current ASSISTANT content
        self.stats: dict[str, Any] = {"recv_events": 0, "recv_chunks": 0, "recv_audio_s": 0.0, "interrupted": 0,
                                      "discarded_s": 0.0, "completions": 0, "audio_contents": 1}

    def _failed(self, what: str, exc: BaseException | None = None) -> SessionFailed:
        why = f": {self._reason(exc)}" if exc is not None else ""
        return SessionFailed(self.r.scrub(f"runner {NAME!r}: {what}{why}"))

    def _reason(self, exc: BaseException) -> str:
        """One line for an SDK or CRT error: the service's error name and message, or the transport's."""
        name = type(exc).__name__
        msg = getattr(exc, "message", None) or str(exc) or "no message"
        for inner in net.causes(exc):
            crt = type(inner).__name__ == "AwsCrtError"
            if crt:
                name, msg = getattr(inner, "name", "AwsCrtError"), getattr(inner, "message", str(inner))
                break
        text = f"{name}: {' '.join(str(msg).split())}"
        if name in ("AccessDeniedException", "UnrecognizedClientException", "ExpiredTokenException"):
            text += f"; check {KEY_ID_ENV} / {SECRET_ENV} / {TOKEN_ENV} and the region ({self.r.region})"
        elif name == "ResourceNotFoundException":
            text += f"; check model_id ({self.r.args['model_id']}) and the region ({self.r.region})"
        elif "TLS" in name or "CERT" in name.upper():
            text += "; for a private certificate set MODEL_CA (ca_file) or MODEL_INSECURE=1 (insecure)"
        return text

    async def _send(self, data: bytes) -> None:
        m = self.models
        await self.stream.input_stream.send(m.InvokeModelWithBidirectionalStreamInputChunk(
            value=m.BidirectionalInputPayloadPart(bytes_=data)))

    # -- the session ------------------------------------------------------------------------------

    async def open(self) -> None:
        r, t = self.r, time.monotonic()
        tasks: list[asyncio.Future] = []
        try:
            self.client = await r.client()
            self.stream = await self.client.invoke_model_with_bidirectional_stream(
                self.models.InvokeModelWithBidirectionalStreamOperationInput(model_id=r.args["model_id"]))

            async def prompt() -> None:
                for data in (r.session_start(), r.prompt_start(), *r.system_events(),
                             r.audio_start(self.content_name)):
                    await self._send(data)

            # The answer is awaited beside the first events: a request that fails (TLS, refused, 403)
            # fails the output future while the input stream may wait for a reader that never comes.
            answer = asyncio.ensure_future(self.stream.await_output())
            sending = asyncio.ensure_future(prompt())
            tasks = [answer, sending]
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            if answer in done and answer.exception() is not None:
                raise answer.exception()
            await sending
            _, self.out = await answer
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            raise self._failed(f"cannot open a session at {r.url}", exc) from None
        finally:
            for task in tasks:
                if not task.done():
                    task.cancel()
        self.stats["open_s"] = round(time.monotonic() - t, 6)
        self.s.event("server_event", 0.0, event="stream_open", model_id=r.args["model_id"], open_s=self.stats["open_s"])

    async def send(self, frame: np.ndarray, k: int) -> None:
        try:
            if self.restart:
                self.restart = False
                await self._send(event("contentEnd", {"promptName": PROMPT, "contentName": self.content_name}))
                self.content += 1
                self.content_name = f"audio-{self.content}"
                self.stats["audio_contents"] += 1
                await self._send(self.r.audio_start(self.content_name))
                self.s.event("server_event", event="audio_content_restarted", content=self.content_name)
            await self._send(event("audioInput", {"promptName": PROMPT, "contentName": self.content_name,
                                                  "content": base64.b64encode(to_pcm16(frame)).decode("ascii")}))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            # A broken stream: the receiver has (or soon will have) the service's reason, and the core
            # decides from it whether the sample fails (before the input ended) or keeps its output.
            try:
                await asyncio.wait_for(self.ended.wait(), timeout=0.5)
            except asyncio.TimeoutError:
                raise self._failed(f"sending frame {k} failed", exc) from None

    async def receive(self) -> None:
        try:
            while True:
                try:
                    ev = await self.out.receive()
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    raise self._failed("the stream failed", exc) from None
                if ev is None:
                    if self.finishing:
                        self.s.event("server_event", event="stream_end")
                        self.ended.set()
                        self.idle.set()
                        await asyncio.Event().wait()  # until the core cancels this task
                    raise self._failed("the service ended the stream")
                self._handle(ev)
        finally:
            self.ended.set()
            self.idle.set()
            self._flush_stats()

    async def finish(self) -> None:
        self.finishing = True
        if self.ended.is_set():
            return
        try:
            await self._send(event("contentEnd", {"promptName": PROMPT, "contentName": self.content_name}))
            await self._send(event("promptEnd", {"promptName": PROMPT}))
            await self._send(event("sessionEnd", {}))
            await self.stream.input_stream.close()
            self.s.event("server_event", event="session_end_sent")
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.s.event("error", reason=self.r.scrub(f"sessionEnd not sent: {self._reason(exc)}"))
            return
        wait = float(self.r.args["finish_wait_s"])
        if wait > 0:
            try:
                await asyncio.wait_for(self.ended.wait(), timeout=wait)
            except asyncio.TimeoutError:
                self.s.event("server_event", event="finish_wait_over", wait_s=wait)

    async def close(self) -> None:
        self._flush_stats()
        stream, client, self.stream, self.client = self.stream, self.client, None, None
        for step in ((lambda: stream.input_stream.close()) if stream is not None else None,
                     (lambda: self.out.close()) if self.out is not None else None,
                     (lambda: client.close()) if client is not None and hasattr(client, "close") else None):
            if step is None:
                continue
            try:
                await asyncio.wait_for(step(), timeout=2.0)
            except BaseException:
                pass

    def _flush_stats(self) -> None:
        st = dict(self.stats)
        st["recv_audio_s"] = round(st["recv_audio_s"], 6)
        st["discarded_s"] = round(st["discarded_s"], 6)
        self.s.stats.update(st)

    # -- output events ----------------------------------------------------------------------------

    def _handle(self, ev: Any) -> None:
        s, st, m = self.s, self.stats, self.models
        t = s.now()
        st["recv_events"] += 1
        if isinstance(ev, m.InvokeModelWithBidirectionalStreamOutputUnknown):
            s.event("error", t, reason=f"an output event of an unknown type {getattr(ev, 'tag', '?')!r} (ignored)")
            return
        if not isinstance(ev, m.InvokeModelWithBidirectionalStreamOutputChunk):
            value = getattr(ev, "value", None)
            kind = type(value).__name__ if value is not None else type(ev).__name__
            msg = getattr(value, "message", None) or "no message"
            raise SessionFailed(self.r.scrub(f"runner {NAME!r}: the service sent {kind}: {' '.join(str(msg).split())}"))
        data = ev.value.bytes_ or b""
        limit = self.r.args["max_message_bytes"]
        if len(data) > limit:
            raise SessionFailed(f"runner {NAME!r}: {net.too_big_reason(limit)}")
        try:
            body = json.loads(data)["event"]
            (name, payload), = body.items()
            if not isinstance(payload, dict):
                raise ValueError("not an object")
        except (ValueError, KeyError, TypeError, AttributeError):
            s.event("error", t, reason=f"an output chunk that is not one Nova Sonic event ({len(data)} bytes; ignored)")
            return
        if name == "audioOutput":
            self._audio(payload.get("content"), t)
        elif name == "textOutput":
            text = payload.get("content")
            if is_interrupted(text):
                self._interrupt(t, "interrupted")
            elif isinstance(text, str):
                s.event("text", t, source="text_output", role=payload.get("role"), text=text,
                        **({"generation_stage": self.stage} if self.stage else {}))
        elif name == "contentStart":
            self.stage = None
            fields = payload.get("additionalModelFields")
            if isinstance(fields, str):
                try:
                    self.stage = json.loads(fields).get("generationStage")
                except (ValueError, AttributeError):
                    pass
            s.event("server_event", t, event="content_start", content_type=payload.get("type"), role=payload.get("role"),
                    **({"generation_stage": self.stage} if self.stage else {}))
        elif name == "contentEnd":
            reason = payload.get("stopReason")
            s.event("server_event", t, event="content_end", content_type=payload.get("type"), stop_reason=reason)
            if reason == "INTERRUPTED":
                self._interrupt(t, "content_end_interrupted")
            elif payload.get("type") == "AUDIO":
                self.idle.set()
        elif name == "usageEvent":
            for k_in, k_out in (("totalInputTokens", "input_tokens"), ("totalOutputTokens", "output_tokens"),
                                ("totalTokens", "total_tokens")):
                if isinstance(payload.get(k_in), int):
                    st[k_out] = payload[k_in]
        elif name in ("completionStart", "completionEnd"):
            if name == "completionEnd":
                st["completions"] += 1
                self.idle.set()
            s.event("server_event", t, event=name, **({"stop_reason": payload["stopReason"]}
                                                      if "stopReason" in payload else {}))
        elif name == "toolUse":
            s.event("error", t, reason="the service asked for a tool; this runner declares none (ignored)")
        else:
            s.event("server_event", t, event=name)

    def _interrupt(self, t: float, reason: str) -> None:
        st = self.stats
        st["interrupted"] += 1
        st["discarded_s"] += self.s.interrupt(t, reason=reason)
        self.idle.set()
        if self.r.args["new_content_on_interrupt"] and reason == "interrupted" and not self.finishing:
            self.restart = True

    def _audio(self, content: Any, t: float) -> None:
        s, st = self.s, self.stats
        try:
            raw = base64.b64decode(content or "", validate=True)
        except (binascii.Error, ValueError, TypeError):
            s.event("error", t, reason="an audioOutput whose content is not base64 (ignored)")
            return
        if len(raw) % 2:
            s.event("error", t, reason=f"an audio chunk of an odd {len(raw)} bytes (last byte dropped)")
        pcm = from_pcm16(raw)
        if not len(pcm):
            return
        start = s.place(pcm, t)
        st["recv_chunks"] += 1
        st["recv_audio_s"] += len(pcm) / OUT_SR
        self.idle.clear()
        s.event("recv_audio", t, n_samples=len(pcm), placed_at=start)
