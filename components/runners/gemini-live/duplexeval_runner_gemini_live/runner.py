"""`gemini-live`: the Gemini Live API through the google-genai SDK, on the realtime clock.

One live session per sample (`client.aio.live.connect`), written against google-genai 3.6.1's
google/genai/live.py. On the wire (a WebSocket, `wss://`) that is:

1. the URL `<base_url>/ws/google.ai.generativelanguage.<api_version>.GenerativeService.BidiGenerateContent`
   (the SDK turns the base URL's scheme into wss), the API key in the `x-goog-api-key` header;
2. `{"setup": {"model": "models/<model>", "generationConfig": {"responseModalities": ["AUDIO"]},
   "systemInstruction": ..., "realtimeInputConfig": ...}}`, answered by `{"setupComplete": {}}`;
   the clock starts when it has come (t0);
3. one `{"realtime_input": {"audio": {"data": <URL-safe base64 of pcm16 LE>, "mime_type": "audio/pcm;rate=16000"}}}`
   per `frame_ms` frame (64 ms = 1024 samples, the chunk Full-Duplex-Bench's client sends), frame k
   at t0 + (k+1) * frame on absolute deadlines (the core's pacing), then `grace_s` of silence
   frames so the reply to the last words streams in, then `{"realtime_input": {"audioStreamEnd": true}}`;
4. server messages: `serverContent.modelTurn.parts[].inlineData` (pcm16 24 kHz) is placed on the
   input timeline at its arrival (after what is still queued); `serverContent.interrupted` (the
   server heard the user start talking) drops what has not played by then; `generationComplete`,
   `turnComplete`, transcriptions (when `transcription` is on), `goAway` and usage are logged.
   The SDK's `receive()` generator ends at each `turnComplete`: it is called again for the
   next turn, so one session carries the whole sample and the model keeps its context.

Full-Duplex-Bench's client (DanielLin94144/Full-Duplex-Bench @ d7336bd,
v1_v1.5/model_inference/gemini/inference_gemini25_native.py) opens a new session after every
turn and every interruption, so the model forgets the conversation at each turn and the audio
sent while it reconnects is late. This runner keeps one session per sample instead: closer to a
live call, and what the model is built for. It also sends each chunk when it is complete (FDB
sends chunk k at its start and sleeps, so it runs ahead of a live microphone and drifts by the
loop's overhead) and places replies at arrival rather than through a wall-clock recorder.

The key comes from GEMINI_API_KEY (as FDB reads it) or else GOOGLE_API_KEY, only from the
environment; it goes to the SDK and nowhere else (every error text is scrubbed of it).
The endpoint is `url` (or MODEL_URL): the API's base URL; None is the SDK's default. An
`https://` URL is reached as `wss://` (with `ca_file`/MODEL_CA or `insecure`/MODEL_INSECURE for a
private certificate); an `http://` URL as plain `ws://` (a local gateway or test double), which
the SDK cannot do by itself: the runner sets the client's WebSocket base URL for it.

Multi-round samples: `history` "replayed", as every network runner (why, and what the core does
with the output: components/duplex-runner/README.md, "Multi-round (MTR) protocol").
"""

from __future__ import annotations

import asyncio
import logging
import os
import ssl
import time
from typing import Any
from urllib.parse import urlunsplit

import numpy as np

from duplexeval_common import secrets
from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.wavio import resample

from duplexeval_runner import deps, net
from duplexeval_runner.net import from_pcm16, to_pcm16
from duplexeval_runner.protocol import Connection, Session, SessionFailed, StreamRunner
from duplexeval_runner.settings import Setting, Spec, frame_ms, whole_samples

NAME = "gemini-live"
PACKAGE = "duplexeval_runner_gemini_live"
PROFILE = "gemini-live"
IN_SR = 16000   # the Live API takes 16-bit PCM at 16 kHz
OUT_SR = 24000  # and answers 16-bit PCM at 24 kHz
MIME = f"audio/pcm;rate={IN_SR}"
KEY_ENVS = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
SDK_DEFAULT_URL = "https://generativelanguage.googleapis.com"
MAX_UNREADABLE = 20  # server messages the SDK cannot read before the session counts as broken

START_SENSITIVITY = ("START_SENSITIVITY_HIGH", "START_SENSITIVITY_LOW")
END_SENSITIVITY = ("END_SENSITIVITY_HIGH", "END_SENSITIVITY_LOW")
ACTIVITY_HANDLING = ("START_OF_ACTIVITY_INTERRUPTS", "NO_INTERRUPTION")

# The runner's own defaults; the profile file (profiles/gemini-live.json) sets FDB's over them.
SETTINGS = Spec(
    *net.endpoint_settings("the API's base URL, https://host[:port][/prefix] (http:// is reached as plain ws://), "
                           f"no credentials, query or fragment; null and no $MODEL_URL: the SDK's default, "
                           f"{SDK_DEFAULT_URL}"),
    Setting("model", str, "gemini-2.5-flash-native-audio-preview-12-2025", "the model", nonempty=True),
    Setting("api_version", str, "v1beta", "the API version of the WebSocket path", nonempty=True),
    Setting("system_instruction", str, None, "the system instruction (null: none)"),
    Setting("vad_disabled", bool, False, "realtime_input_config.automatic_activity_detection.disabled"),
    Setting("start_of_speech_sensitivity", str, None, "automatic activity detection (null: the server's default)",
            choices=START_SENSITIVITY),
    Setting("end_of_speech_sensitivity", str, None, "automatic activity detection (null: the server's default)",
            choices=END_SENSITIVITY),
    Setting("prefix_padding_ms", int, None, "automatic activity detection, in ms (null: the server's default)",
            ge=0),
    Setting("silence_duration_ms", int, None, "automatic activity detection, in ms (null: the server's default)",
            ge=0),
    Setting("activity_handling", str, None, "realtime_input_config.activity_handling (null: the server's default)",
            choices=ACTIVITY_HANDLING),
    Setting("voice", str, None, "a prebuilt voice name (null: the server's default)"),
    Setting("transcription", bool, False, "ask for input and output transcriptions (logged as text events)"),
    Setting("temperature", float, None, "sampling temperature (null: the server's default)", ge=0, le=2),
    Setting("send_seed", bool, False, "send the run's seed in the setup (FDB sends none)"),
    frame_ms(64, IN_SR, "frame length, in ms (64 ms: 1024 samples at 16 kHz, FDB's CHUNK_SIZE)"),
    Setting("grace_s", float, 3.0, "silence sent after the input while the last reply streams in, in seconds",
            ge=0),
    Setting("finish_wait_s", float, 2.0, "after audioStreamEnd, the longest wait for a reply in flight, in seconds",
            ge=0),
    Setting("open_timeout_s", float, 10.0, "connect, setup and setupComplete, in seconds", gt=0),
    # websockets' own default (what the SDK's connection had before it was a setting)
    net.message_limit(2**20),
    package=PACKAGE, profile=PROFILE,
)


def _fail(msg: str) -> DuplexEvalError:
    return net.fail(NAME, msg)


def api_key(environ: dict | None = None) -> tuple[str, str]:
    """(key, the variable it came from): GEMINI_API_KEY, else GOOGLE_API_KEY."""
    env = os.environ if environ is None else environ
    for var in KEY_ENVS:
        value = env.get(var, "").strip()
        if value:
            return value, var
    raise _fail(f"no API key: set {KEY_ENVS[0]} or {KEY_ENVS[1]} in the environment")


def base_url(url: str) -> tuple[str, bool]:
    """(base URL without a trailing slash, whether it is TLS) of an http(s) or ws(s) URL."""
    u = net.parse_url(NAME, url, detail=False)
    if u.scheme not in ("http", "https", "ws", "wss") or not u.hostname:
        raise _fail(f"url must be the API's base URL, https://host[:port][/prefix] (got scheme {u.scheme!r})")
    if u.has_userinfo or u.query or u.fragment:
        raise _fail(f"url must carry no credentials, query or fragment: the key comes from "
                    f"{KEY_ENVS[0]} or {KEY_ENVS[1]}")
    tls = u.scheme in ("https", "wss")
    net.refuse_clear_key(NAME, u.scheme, u.hostname, " or ".join(KEY_ENVS))
    return urlunsplit(("https" if tls else "http", u.netloc, u.path.rstrip("/"), "", "")), tls


def pcm_rate(mime: str | None) -> int | None:
    """The rate of an `audio/pcm;rate=N` MIME type (None: not audio/pcm; no rate: the API's 24 kHz)."""
    if not mime:
        return OUT_SR
    kind, *params = [p.strip() for p in mime.split(";")]
    if kind.lower() not in ("audio/pcm", "audio/l16"):
        return None
    for p in params:
        k, _, v = p.partition("=")
        if k.strip().lower() == "rate" and v.strip().isascii() and v.strip().isdigit() and int(v) > 0:
            return int(v)
    return OUT_SR


class GeminiLiveRunner(StreamRunner):
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
        self._key, self.key_env = api_key()
        url, self.insecure, self.ca_file = net.endpoint(NAME, a)
        self.url, self.tls = base_url(url) if url else (SDK_DEFAULT_URL, True)
        self.custom_url = url is not None
        self.frame_ms = a["frame_ms"]
        self.frame = whole_samples(self.frame_ms, IN_SR)
        self.grace_s = float(a["grace_s"])
        self.open_timeout_s = float(a["open_timeout_s"])
        self._client: Any = None
        self._genai: Any = None
        self._types: Any = None
        self._errors: Any = None

    # -- the SDK ---------------------------------------------------------------------------------

    def setup(self) -> None:
        if self._client is not None:
            return
        what = f"runner {NAME!r}"
        genai = deps.import_module(what, "google.genai")
        types = deps.import_module(what, "google.genai.types")
        self._errors = deps.import_module(what, "google.genai.errors")
        deps.import_module(what, "websockets")
        opts: dict[str, Any] = {"api_version": self.args["api_version"]}
        if self.custom_url:
            opts["base_url"] = self.url
        ctx = self.ssl_context()
        if ctx is not None:
            opts["async_client_args"] = {"ssl": ctx}
        # With both variables set the SDK warns that it uses GOOGLE_API_KEY; it uses the key passed.
        sdk_log = logging.getLogger("google_genai._api_client")
        level = sdk_log.level
        sdk_log.setLevel(logging.ERROR)
        try:
            client = genai.Client(api_key=self._key, vertexai=False, http_options=types.HttpOptions(**opts))
        except Exception as exc:
            raise _fail(f"cannot make the google-genai client: {self.scrub(str(exc))}") from None
        finally:
            sdk_log.setLevel(level)
        api = client._api_client
        # The SDK passes the dict _websocket_ssl_ctx to websockets' connect as keyword arguments: the
        # only way in for max_size (async_client_args also reaches the HTTP client, which takes no max_size).
        if not isinstance(getattr(api, "_websocket_ssl_ctx", None), dict):
            raise _fail(f"this google-genai ({deps.version('google-genai')}) takes no WebSocket options "
                        "(max_message_bytes cannot be applied)")
        if not self.tls:
            # The SDK always turns the base URL into wss://; an http:// endpoint is plain ws://.
            if not hasattr(api, "_websocket_base_url"):
                raise _fail(f"this google-genai ({deps.version('google-genai')}) cannot be pointed at a "
                            "plain http:// URL; use https://")
            ws_url = "ws" + self.url[len("http"):]
            api._websocket_base_url = lambda http_options=None: ws_url
            api._websocket_ssl_ctx = {}
        api._websocket_ssl_ctx = {**api._websocket_ssl_ctx, "max_size": self.args["max_message_bytes"]}
        self._genai, self._types, self._client = genai, types, client

    def ssl_context(self) -> ssl.SSLContext | None:
        """The TLS context of a private endpoint (None: the SDK's own, from its CA bundle)."""
        return net.ssl_context(self.insecure, self.ca_file, system=False) if self.tls else None

    def live_config(self) -> Any:
        """The session's LiveConnectConfig (a fresh object: the SDK rewrites parts of it)."""
        a, types = self.args, self._types
        vad = {"disabled": a["vad_disabled"]}
        for k in ("start_of_speech_sensitivity", "end_of_speech_sensitivity", "prefix_padding_ms",
                  "silence_duration_ms"):
            if a[k] is not None:
                vad[k] = a[k]
        ric: dict[str, Any] = {"automatic_activity_detection": types.AutomaticActivityDetection(**vad)}
        if a["activity_handling"] is not None:
            ric["activity_handling"] = a["activity_handling"]
        cfg: dict[str, Any] = {"response_modalities": ["AUDIO"],
                               "realtime_input_config": types.RealtimeInputConfig(**ric)}
        if a["system_instruction"] is not None:
            cfg["system_instruction"] = a["system_instruction"]
        if a["voice"] is not None:
            cfg["speech_config"] = types.SpeechConfig(voice_config=types.VoiceConfig(
                prebuilt_voice_config=types.PrebuiltVoiceConfig(voice_name=a["voice"])))
        if a["transcription"]:
            cfg["input_audio_transcription"] = types.AudioTranscriptionConfig()
            cfg["output_audio_transcription"] = types.AudioTranscriptionConfig()
        if a["temperature"] is not None:
            cfg["temperature"] = float(a["temperature"])
        if a["send_seed"] and self.seed is not None:
            cfg["seed"] = int(self.seed)
        return types.LiveConnectConfig(**cfg)

    def connect(self, session: Session) -> Connection:
        self.setup()
        return _Live(self, session)

    # -- records ----------------------------------------------------------------------------------

    def settings(self) -> dict:
        s = {k: v for k, v in self.args.items() if k not in ("url", "insecure", "ca_file")}
        s.update({"url": self.url, "url_from": "runner_args/MODEL_URL" if self.custom_url else "sdk default",
                  "websocket": ("wss" if self.tls else "ws") + self.url[self.url.index("://"):]
                               + f"/ws/google.ai.generativelanguage.{self.args['api_version']}"
                                 ".GenerativeService.BidiGenerateContent",
                  "insecure": self.insecure, "ca_file": self.ca_file, "key_env": self.key_env,
                  "frame_samples": self.frame, "mime_type": MIME, "send_at": "frame end",
                  "sessions": "one per sample, kept across turns", "seed_sent": bool(self.args["send_seed"]),
                  "client": {d: deps.version(d) for d in ("google-genai", "websockets")}})
        return s

    def models(self) -> dict:
        return {"gemini": {"model": self.args["model"], "api_version": self.args["api_version"],
                           "endpoint": self.url}}

    def scrub(self, text: str) -> str:
        return secrets.scrub(text, extra=[self._key])


class _Live(Connection):
    """One live session: one sample, every turn of it."""

    def __init__(self, runner: GeminiLiveRunner, session: Session):
        self.r, self.s = runner, session
        self.types = runner._types
        self.cm: Any = None
        self.live: Any = None
        self.finishing = False
        self.ended = asyncio.Event()   # receive() stopped (the connection is gone)
        self.idle = asyncio.Event()    # no reply in flight (none started, or the last one ended)
        self.idle.set()
        self.go_away: str | None = None
        self.stats: dict[str, Any] = {"recv_messages": 0, "recv_chunks": 0, "recv_audio_s": 0.0,
                                      "interrupted": 0, "discarded_s": 0.0, "turns_complete": 0,
                                      "generations_complete": 0, "go_away": 0}

    def _failed(self, what: str, exc: BaseException | None = None) -> SessionFailed:
        why = f": {self._reason(exc)}" if exc is not None else ""
        return SessionFailed(self.r.scrub(f"runner {NAME!r}: {what}{why}"))

    def _reason(self, exc: BaseException) -> str:
        if net.too_big(exc):
            return net.too_big_reason(self.r.args["max_message_bytes"])
        return net.connect_reason(exc, status=self._status, outer=True)

    def _status(self, e: BaseException) -> str | None:
        """What the SDK and websockets say of a closed or refused connection."""
        code = getattr(e, "code", None)
        if self.r._errors is not None and isinstance(e, self.r._errors.APIError) and isinstance(code, int):
            if code == 1006:  # what the SDK reports for a connection dropped without a close frame
                return "the connection was lost without a close frame (code 1006)"
            detail = e.details if isinstance(e.details, str) else (e.message or e.status or e.details)
            text = f"the server closed the connection (code {code}: {detail or 'no reason given'})"
            if "api key" in str(detail).lower():
                text += f"; check {KEY_ENVS[0]} / {KEY_ENVS[1]}"
            return text
        response = getattr(e, "response", None)
        status = getattr(response, "status_code", None)
        if isinstance(status, int):  # websockets InvalidStatus: the handshake was refused
            hint = {401: f"; check {KEY_ENVS[0]} / {KEY_ENVS[1]}", 403: f"; check {KEY_ENVS[0]} / {KEY_ENVS[1]}",
                    404: "; check url and api_version"}.get(status, "")
            return f"the server answered HTTP {status} to the WebSocket handshake{hint}"
        if type(e).__name__.startswith("ConnectionClosed"):
            rcvd = getattr(e, "rcvd", None)
            return (f"the connection closed (code {rcvd.code}: {rcvd.reason or 'no reason given'})" if rcvd
                    else "the connection was lost without a close frame (code 1006)")
        return None

    # -- the session ------------------------------------------------------------------------------

    async def open(self) -> None:
        t = time.monotonic()
        cm = self.r._client.aio.live.connect(model=self.r.args["model"], config=self.r.live_config())
        try:
            self.live = await cm.__aenter__()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            raise self._failed(f"cannot open a session at {self.r.url}", exc) from None
        self.cm = cm
        setup = getattr(self.live, "setup_complete", None)
        self.stats["open_s"] = round(time.monotonic() - t, 6)
        if setup is None:
            self.s.event("error", 0.0, reason="the server's first message was not setupComplete (session kept)")
        self.s.event("server_event", 0.0, event="setup_complete", model=self.r.args["model"],
                     open_s=self.stats["open_s"], session_id=getattr(setup, "session_id", None))

    async def send(self, frame: np.ndarray, k: int) -> None:
        try:
            await self.live.send_realtime_input(audio=self.types.Blob(data=to_pcm16(frame), mime_type=MIME))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            # A closed connection: the receiver has (or soon will have) the server's reason, and the
            # core decides from it whether the sample fails (before the input ended) or keeps its output.
            try:
                await asyncio.wait_for(self.ended.wait(), timeout=0.5)
            except asyncio.TimeoutError:
                raise self._failed(f"sending frame {k} failed", exc) from None
            # The receiver has ended: the core sees it before the next frame and stops there.

    async def receive(self) -> None:
        try:
            while True:
                try:
                    # The SDK's receive() ends after each turnComplete: call it again for the next turn.
                    async for msg in self.live.receive():
                        self._handle(msg)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    if self._closed(exc):
                        raise
                    # A message the SDK could not read (it raises and drops it); the connection is
                    # still up, so read on, up to a point.
                    self.stats["unreadable_messages"] = self.stats.get("unreadable_messages", 0) + 1
                    self.s.event("error", reason=self.r.scrub(f"a server message the SDK could not read "
                                                              f"({self._reason(exc)}); ignored"))
                    if self.stats["unreadable_messages"] >= MAX_UNREADABLE:
                        raise
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.ended.set()
            self.idle.set()
            if self.finishing:  # after audioStreamEnd the server may close: not a failure
                self.s.event("server_event", event="closed", reason=self.r.scrub(self._reason(exc)))
                await asyncio.Event().wait()  # until the core cancels this task
            note = f" after goAway (time left {self.go_away})" if self.go_away is not None else ""
            what = "the session ended" if self._closed(exc) else "too many unreadable server messages"
            raise self._failed(f"{what}{note}", exc) from None
        finally:
            self._flush_stats()

    def _closed(self, exc: BaseException) -> bool:
        """Whether exc says the connection is gone (the SDK raises APIError with the close code)."""
        errors = self.r._errors
        return ((errors is not None and isinstance(exc, errors.APIError) and isinstance(exc.code, int))
                or type(exc).__name__.startswith("ConnectionClosed") or isinstance(exc, OSError))

    async def finish(self) -> None:
        self.finishing = True
        if self.ended.is_set():
            return
        try:
            await self.live.send_realtime_input(audio_stream_end=True)
            self.s.event("server_event", event="audio_stream_end_sent")
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.s.event("error", reason=self.r.scrub(f"audioStreamEnd not sent: {self._reason(exc)}"))
            return
        wait = float(self.r.args["finish_wait_s"])
        if wait > 0:
            try:
                await asyncio.wait_for(self.idle.wait(), timeout=wait)
            except asyncio.TimeoutError:
                self.s.event("server_event", event="finish_wait_over", wait_s=wait)

    async def close(self) -> None:
        self._flush_stats()
        cm, self.cm = self.cm, None
        if cm is None:
            return
        try:
            await cm.__aexit__(None, None, None)
        except BaseException:
            pass

    def _flush_stats(self) -> None:
        st = dict(self.stats)
        st["recv_audio_s"] = round(st["recv_audio_s"], 6)
        st["discarded_s"] = round(st["discarded_s"], 6)
        self.s.stats.update(st)

    # -- server messages --------------------------------------------------------------------------

    def _handle(self, msg: Any) -> None:
        s, st = self.s, self.stats
        t = s.now()
        st["recv_messages"] += 1
        sc = msg.server_content
        if sc is not None:
            if sc.interrupted:
                st["interrupted"] += 1
                st["discarded_s"] += s.interrupt(t, reason="interrupted")
                self.idle.set()
            turn = sc.model_turn
            for part in (turn.parts or []) if turn is not None else []:
                if part.inline_data is not None and part.inline_data.data:
                    self._audio(part.inline_data, t)
                elif part.text:
                    s.event("text", t, source="model_turn", text=part.text, **({"thought": True} if part.thought else {}))
            for source, tr in (("input_transcription", sc.input_transcription),
                               ("output_transcription", sc.output_transcription)):
                if tr is not None and tr.text:
                    s.event("text", t, source=source, text=tr.text)
            if sc.generation_complete:
                st["generations_complete"] += 1
                s.event("server_event", t, event="generation_complete")
            if sc.turn_complete:
                st["turns_complete"] += 1
                reason = getattr(sc, "turn_complete_reason", None)
                s.event("server_event", t, event="turn_complete",
                        **({"reason": str(getattr(reason, "value", reason))} if reason else {}))
                self.idle.set()
        if msg.go_away is not None:
            st["go_away"] += 1
            self.go_away = str(msg.go_away.time_left) if msg.go_away.time_left is not None else "unknown"
            s.event("server_event", t, event="go_away", time_left=self.go_away)
        if msg.usage_metadata is not None and msg.usage_metadata.total_token_count is not None:
            st["total_token_count"] = int(msg.usage_metadata.total_token_count)
        if msg.tool_call is not None:
            s.event("error", t, reason="the server sent a tool call; this runner declares no tools (ignored)")
        signal = getattr(msg, "voice_activity_detection_signal", None) or getattr(msg, "voice_activity", None)
        if signal is not None:
            kind = str(getattr(signal, "vad_signal_type", None) or getattr(signal, "voice_activity_type", None))
            s.event("vad_start" if "START" in kind.upper() else "vad_end" if "END" in kind.upper()
                    else "server_event", t, source="server", signal=kind)

    def _audio(self, blob: Any, t: float) -> None:
        s, st = self.s, self.stats
        rate = pcm_rate(blob.mime_type)
        if rate is None:
            s.event("error", t, reason=f"inline data of type {blob.mime_type!r} is not audio/pcm (ignored)")
            return
        data = blob.data
        if len(data) % 2:
            s.event("error", t, reason=f"an audio chunk of an odd {len(data)} bytes (last byte dropped)")
        pcm = from_pcm16(data)
        if rate != OUT_SR:
            pcm = resample(pcm, rate, OUT_SR).astype(np.float32, copy=False)
        start = s.place(pcm, t)
        st["recv_chunks"] += 1
        st["recv_audio_s"] += len(pcm) / OUT_SR
        self.idle.clear()
        s.event("recv_audio", t, n_samples=len(pcm), placed_at=start)
