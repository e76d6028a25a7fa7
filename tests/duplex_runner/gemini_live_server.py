"""A Gemini Live API protocol test double: NOT the model, and no model inside.

It speaks the WebSocket messages of the Gemini API's BidiGenerateContent, as the google-genai SDK
(3.6.1, google/genai/live.py) sends and reads them, so the `gemini-live` runner can be tested with
the real SDK as its client and no network:

- the path `/ws/google.ai.generativelanguage.<version>.GenerativeService.BidiGenerateContent` (any
  other answers HTTP 404) over TLS (`--cert`/`--key`: the SDK always dials wss://) or plain ws;
- the API key in the `x-goog-api-key` header (or a `key` query parameter). When the environment
  variable GEMINI_LIVE_DOUBLE_KEY is set, a request without that key gets its setup read and the
  connection closed with code 1007 "API key not valid. Please pass a valid API key.";
- the first message `{"setup": {"model": "models/...", "generationConfig": {"responseModalities":
  ["AUDIO"]}, ...}}` is answered `{"setupComplete": {}}`;
- `realtimeInput` (or `realtime_input`) `audio` blobs: base64 pcm16 LE at 16 kHz
  (`audio/pcm;rate=16000`, or `audio/pcm`), checked strictly; `audioStreamEnd`.

Its "dialogue" is a deterministic script on input-audio time (samples received / 16 kHz): the user
speaks while samples exceed `level` (exact zeros are silence); `min_silence_s` of silence ends a turn
at its last loud sample E. Once the input has reached E + `reply_delay_s` the reply goes out:
`serverContent.modelTurn.parts[].inlineData` chunks (`chunk_ms`, pcm16 24 kHz) of a `tone_s` tone
(or of the `reply_wav` file), `speed` times faster than real time (0: all at once), then
`generationComplete` and `turnComplete` (and `usageMetadata`; an `outputTranscription` /
`inputTranscription` when the setup asked for them). User speech starting while a reply plays (by
input-audio time, for the reply's length from its start) gets `serverContent.interrupted: true` and
the rest of that reply is not sent. `audioStreamEnd` sends a reply still waiting for its time at
once. Options: `die_after` N audio messages (`die_how` "exit": the process dies without a close
frame; "close": a close frame 1011; "go_away": `goAway` then a close frame 1001; `die_in_session`
k: only the k-th connection), `mute_setup` (never answer the setup: a stuck server), `api_version`
(only that version's path), `junk_after` N audio messages (an unknown message and a text frame that
is not JSON, once).

Run as a script it prints `PORT <n>` once it listens and appends to the `--record` JSON-lines file
one `session` line per connection (what it saw), plus `rejected` lines for refused handshakes.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import binascii
import json
import os
import ssl
import sys
import wave
from dataclasses import asdict, dataclass, field
from http import HTTPStatus
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import numpy as np
from websockets.asyncio.server import serve

IN_SR, OUT_SR = 16000, 24000
PATH = "/ws/google.ai.generativelanguage.{version}.GenerativeService.BidiGenerateContent"
VERSIONS = ("v1alpha", "v1beta", "v1")
KEY_ENV = "GEMINI_LIVE_DOUBLE_KEY"
URLSAFE = str.maketrans("-_", "+/")


@dataclass
class Script:
    reply_delay_s: float = 0.5
    min_silence_s: float = 0.3
    level: float = 1e-3
    tone_s: float = 1.0
    tone_hz: float = 440.0
    tone_level: float = 0.3
    chunk_ms: int = 40
    speed: float = 4.0            # reply chunks at this many times real time; 0: all at once
    api_version: str | None = None
    die_after: int | None = None
    die_how: str = "exit"
    die_in_session: int | None = None
    mute_setup: bool = False
    junk_after: int | None = None  # after N audio messages: a message the SDK cannot read, and one not JSON
    reply_wav: str | None = None   # reply with this 24 kHz mono 16-bit WAV (e.g. speech) instead of the tone


@dataclass
class Record:
    index: int
    path: str = ""
    key_ok: bool | None = None
    headers: dict = field(default_factory=dict)
    setup: dict | None = None
    order: list = field(default_factory=list)   # message kinds in arrival order (runs collapsed)
    frames: int = 0
    samples: int = 0
    frame_bytes: set = field(default_factory=set)
    mime_types: set = field(default_factory=set)
    speech_starts: list = field(default_factory=list)
    speech_ends: list = field(default_factory=list)
    replies: list = field(default_factory=list)      # input sample at which each reply went out
    interrupts: list = field(default_factory=list)   # input sample of the speech that cut a reply
    stream_end_at: int | None = None
    errors: list = field(default_factory=list)
    closed: str = ""


def pick(d: dict, *names: str):
    for n in names:
        if n in d:
            return d[n]
    return None


def reply_audio(sc: Script) -> np.ndarray:
    """The reply, int16 at 24 kHz: the WAV file's samples, or the tone."""
    if sc.reply_wav:
        with wave.open(sc.reply_wav, "rb") as w:
            if (w.getnchannels(), w.getsampwidth(), w.getframerate()) != (1, 2, OUT_SR):
                raise SystemExit(f"reply_wav must be mono 16-bit {OUT_SR} Hz")
            return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
    t = np.arange(int(round(sc.tone_s * OUT_SR))) / OUT_SR
    y = sc.tone_level * np.sin(2 * np.pi * sc.tone_hz * t)
    return np.clip(np.round(y * 32767), -32768, 32767).astype("<i2")


class Conversation:
    """One connection: the VAD script and the replies."""

    def __init__(self, ws, script: Script, rec: Record):
        self.ws, self.sc, self.rec = ws, script, rec
        self.speaking = False
        self.last_loud = -1
        self.due: int | None = None            # input sample at which the pending reply goes out
        self.playing: tuple[int, int] | None = None   # [start, end) of the current reply, input samples
        self.task: asyncio.Task | None = None
        self.transcribe_in = self.transcribe_out = False
        self.pcm = reply_audio(script)

    def kind(self, name: str) -> None:
        if not self.rec.order or self.rec.order[-1] != name:
            self.rec.order.append(name)

    async def send(self, obj: dict) -> None:
        await self.ws.send(json.dumps(obj))

    async def reply(self) -> None:
        pcm = self.pcm
        step = int(OUT_SR * self.sc.chunk_ms / 1000)
        if self.transcribe_out:
            await self.send({"serverContent": {"outputTranscription": {"text": "tone"}}})
        for i in range(0, len(pcm), step):
            chunk = base64.b64encode(pcm[i:i + step].tobytes()).decode("ascii")
            await self.send({"serverContent": {"modelTurn": {"parts": [
                {"inlineData": {"mimeType": f"audio/pcm;rate={OUT_SR}", "data": chunk}}]}}})
            if self.sc.speed > 0:
                await asyncio.sleep(self.sc.chunk_ms / 1000 / self.sc.speed)
        await self.send({"serverContent": {"generationComplete": True}})
        await self.send({"serverContent": {"turnComplete": True}})
        await self.send({"usageMetadata": {"promptTokenCount": 10, "responseTokenCount": 25,
                                           "totalTokenCount": 35}})

    def start_reply(self, at: int) -> None:
        self.rec.replies.append(at)
        self.playing = (at, at + len(self.pcm) * IN_SR // OUT_SR)
        self.due = None
        self.task = asyncio.create_task(self.reply())

    async def audio(self, blob: dict) -> None:
        mime = pick(blob, "mimeType", "mime_type")
        self.rec.mime_types.add(mime)
        if mime not in (f"audio/pcm;rate={IN_SR}", "audio/pcm"):
            self.rec.errors.append(f"audio blob of type {mime!r}")
            return
        try:
            # proto3 JSON bytes: standard or URL-safe base64 (the SDK sends URL-safe)
            raw = base64.b64decode(str(pick(blob, "data") or "").translate(URLSAFE), validate=True)
        except (binascii.Error, TypeError, ValueError):
            self.rec.errors.append("audio data is not base64")
            return
        if len(raw) % 2:
            self.rec.errors.append(f"audio blob of an odd {len(raw)} bytes")
            return
        x = np.frombuffer(raw, dtype="<i2").astype(np.float32) / 32768.0
        self.rec.frames += 1
        self.rec.frame_bytes.add(len(raw))
        base = self.rec.samples
        self.rec.samples += len(x)
        loud = np.flatnonzero(np.abs(x) > self.sc.level)
        if len(loud):
            first = base + int(loud[0])
            if not self.speaking:
                self.speaking = True
                self.rec.speech_starts.append(first)
                await self.barge_in(first)
            self.last_loud = base + int(loud[-1])
        end = self.last_loud + 1
        if self.speaking and self.rec.samples - end >= self.sc.min_silence_s * IN_SR:
            self.speaking = False
            self.rec.speech_ends.append(end)
            if self.transcribe_in:
                await self.send({"serverContent": {"inputTranscription": {"text": "speech"}}})
            self.due = end + int(round(self.sc.reply_delay_s * IN_SR))
        if self.due is not None and self.rec.samples >= self.due:
            self.start_reply(self.due)

    async def barge_in(self, at: int) -> None:
        self.due = None  # a reply not yet started is dropped silently
        if self.playing and self.playing[0] <= at < self.playing[1]:
            self.rec.interrupts.append(at)
            if self.task is not None and not self.task.done():
                self.task.cancel()
            self.playing = None
            await self.send({"serverContent": {"interrupted": True}})

    async def stream_end(self) -> None:
        self.rec.stream_end_at = self.rec.samples
        if self.speaking:
            self.speaking = False
            self.rec.speech_ends.append(self.last_loud + 1)
            self.due = self.last_loud + 1 + int(round(self.sc.reply_delay_s * IN_SR))
        if self.due is not None:
            self.start_reply(self.due)


class Double:
    def __init__(self, script: Script, record: Path):
        self.sc, self.record = script, record
        self.count = 0
        self.key = os.environ.get(KEY_ENV) or None

    def write(self, row: dict) -> None:
        with open(self.record, "a") as f:
            f.write(json.dumps(row, default=lambda o: sorted(o, key=str) if isinstance(o, set) else str(o)) + "\n")

    def paths(self) -> set[str]:
        versions = (self.sc.api_version,) if self.sc.api_version else VERSIONS
        return {PATH.format(version=v) for v in versions}

    def process_request(self, connection, request):
        path = urlsplit(request.path).path
        if path not in self.paths():
            self.write({"event": "rejected", "path": request.path, "status": 404})
            return connection.respond(HTTPStatus.NOT_FOUND, "no such method\n")
        return None

    def key_of(self, request) -> str | None:
        query = parse_qs(urlsplit(request.path).query)
        return request.headers.get("x-goog-api-key") or (query.get("key") or [None])[0]

    async def handler(self, ws) -> None:
        self.count += 1
        rec = Record(index=self.count, path=ws.request.path)
        rec.headers = {k: ("<present>" if k.lower() == "x-goog-api-key" else v)
                       for k, v in ws.request.headers.items() if k.lower() in ("x-goog-api-key", "user-agent")}
        rec.key_ok = self.key is None or self.key_of(ws.request) == self.key
        conv = Conversation(ws, self.sc, rec)
        try:
            await self.session(ws, conv, rec)
        except Exception as exc:  # the client went away, or a bad message
            rec.closed = rec.closed or f"{type(exc).__name__}: {exc}"
        finally:
            if conv.task is not None and not conv.task.done():
                conv.task.cancel()
            self.write({"event": "session", **asdict(rec)})

    async def session(self, ws, conv: Conversation, rec: Record) -> None:
        first = json.loads(await ws.recv())
        setup = first.get("setup") if isinstance(first, dict) else None
        conv.kind("setup" if setup is not None else "other")
        if not isinstance(setup, dict):
            rec.errors.append("the first message is not a setup")
            await ws.close(1007, "The first message must be a setup message.")
            return
        rec.setup = setup
        model = setup.get("model")
        gen = pick(setup, "generationConfig", "generation_config") or {}
        if not (isinstance(model, str) and model.startswith("models/")):
            rec.errors.append(f"setup.model {model!r} does not start with models/")
        if pick(gen, "responseModalities", "response_modalities") != ["AUDIO"]:
            rec.errors.append("setup asks for no AUDIO response")
        conv.transcribe_in = pick(setup, "inputAudioTranscription", "input_audio_transcription") is not None
        conv.transcribe_out = pick(setup, "outputAudioTranscription", "output_audio_transcription") is not None
        if not rec.key_ok:
            rec.closed = "bad key"
            await ws.close(1007, "API key not valid. Please pass a valid API key.")
            return
        if self.sc.mute_setup:
            await asyncio.sleep(3600)
        await conv.send({"setupComplete": {}})
        dies = self.sc.die_after is not None and self.sc.die_in_session in (None, rec.index)
        async for raw in ws:
            msg = json.loads(raw)
            rt = pick(msg, "realtimeInput", "realtime_input")
            if rt is None:
                conv.kind(next(iter(msg), "empty"))
                rec.errors.append(f"unexpected message {sorted(msg)}")
                continue
            if pick(rt, "audio") is not None:
                conv.kind("audio")
                await conv.audio(pick(rt, "audio"))
            elif pick(rt, "audioStreamEnd", "audio_stream_end"):
                conv.kind("audioStreamEnd")
                await conv.stream_end()
            else:
                conv.kind(f"realtimeInput.{next(iter(rt), 'empty')}")
                rec.errors.append(f"unexpected realtimeInput {sorted(rt)}")
            if self.sc.junk_after is not None and rec.frames == self.sc.junk_after and "junk" not in rec.order:
                conv.kind("junk")
                await conv.send({"someFutureMessage": {"x": 1}})
                await ws.send("not json")
            if dies and rec.frames >= self.sc.die_after:
                await self.die(ws, rec)
                return
        rec.closed = rec.closed or f"client closed ({ws.close_code})"

    async def die(self, ws, rec: Record) -> None:
        rec.closed = f"died ({self.sc.die_how}) after {rec.frames} frames"
        if self.sc.die_how == "exit":
            self.write({"event": "session", **asdict(rec)})
            os._exit(3)  # no close frame: the client sees the connection drop
        if self.sc.die_how == "go_away":
            await ws.send(json.dumps({"goAway": {"timeLeft": "0s"}}))
            await ws.close(1001, "The service is restarting.")
            return
        await ws.close(1011, "Internal error encountered.")


async def main(args) -> None:
    script = Script(**json.loads(args.script or "{}"))
    double = Double(script, Path(args.record))
    ctx = None
    if args.cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.cert, args.key)
    async with serve(double.handler, "127.0.0.1", 0, ssl=ctx, process_request=double.process_request,
                     max_size=2**22) as server:
        port = server.sockets[0].getsockname()[1]
        print(f"PORT {port}", flush=True)
        await server.serve_forever()


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--record", required=True)
    p.add_argument("--script", default="{}")
    p.add_argument("--cert")
    p.add_argument("--key")
    try:
        asyncio.run(main(p.parse_args()))
    except KeyboardInterrupt:
        sys.exit(0)
