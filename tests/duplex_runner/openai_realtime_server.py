"""An OpenAI Realtime (GA) protocol test double: NOT the model, and no model inside.

It speaks the server side of the GA Realtime WebSocket API as the `openai` SDK's
`client.realtime.connect(...)` uses it (openai/openai-python src/openai/resources/realtime/
realtime.py; the event shapes of src/openai/types/realtime/), on 127.0.0.1 over plain ws://, so
the `openai-realtime` runner is tested with the real SDK on the client side:

- the handshake: `GET /v1/realtime?model=...` with `Authorization: Bearer <key>` (HTTP 401
  without the expected key, 404 on another path); then `session.created`;
- `session.update` (`session.type` must be "realtime") -> `session.updated` with the merged
  session (or, with `reject_session_update`, an `error` event instead: a fatal error before the
  clock);
- `input_audio_buffer.append` (base64 pcm16 LE mono at 24 kHz) accumulates the input timeline;
  a simple energy VAD (a 10 ms window is speech when a sample exceeds `vad_level`; exact zeros
  are silence) gives `input_audio_buffer.speech_started {audio_start_ms, item_id}` once
  `detect_ms` of speech have come (the onset less the session's prefix_padding_ms, as the API
  documents), and after
  `silence_duration_ms` of silence `speech_stopped {audio_end_ms}` (the last loud sample plus
  the silence, as documented) and `committed`;
- the reply: with `create_response`, a response becomes due `reply_delay_s` after the user's
  last loud sample E (never before speech_stopped) and starts once the input reaches it:
  `response.created`, `response.output_item.added`, `response.content_part.added`,
  `response.output_audio.delta` chunks of `chunk_ms` (a tone, or `reply_wav`) sent `speed`
  times faster than real time, `response.output_audio_transcript.delta` (one word per chunk),
  then the `.done` events and `response.done` (status completed, with usage);
- barge-in: speech_started while a response is in progress cancels it (with
  `interrupt_response`): `response.output_item.done` (incomplete) and `response.done` with
  status "cancelled";
- `conversation.item.truncate`: REJECTED with an `error` event "Audio content of X ms is already
  shorter than Y ms" when `audio_end_ms` exceeds the audio delivered for that item (the real
  server's check), else `conversation.item.truncated`. Every truncate is recorded;
- `response.cancel`, `input_audio_buffer.clear`/`commit` are answered minimally.

Options (`--script` JSON): `api_key` (the expected bearer), `reply_delay_s`, `reply_s`,
`tone_hz`, `tone_level`, `reply_wav` (24 kHz mono speech to reply with instead of a tone),
`chunk_ms`, `speed` (0: every chunk at once), `transcript`, `vad_level`, `detect_ms`, `max_replies`,
`die_in_session` k / `die_at_s` s / `die_how` ("abort": the TCP connection is dropped without
a close frame; "close": close code 1011; "error": a server_error event, then 1011) to die
mid-session, `reject_session_update` (the error message), `mute_session_update` (never answers
it: a stuck server). Run as a script it prints `PORT <n>` once it listens and appends JSON
lines to `--record`: `connect`, `session_update`, `speech_started`, `response`, `truncate`,
`error` and one `session` summary line per connection when it ends.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import sys
import threading
import time
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import numpy as np
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed

SR = 24000
WINDOW = SR // 100  # 10 ms VAD windows


@dataclass
class Script:
    api_key: str | None = None
    reply_delay_s: float = 0.5
    reply_s: float = 2.0
    tone_hz: float = 440.0
    tone_level: float = 0.3
    reply_wav: str | None = None
    chunk_ms: float = 100.0
    speed: float = 4.0
    transcript: str = "Sure, I can help with that."
    vad_level: float = 0.02
    detect_ms: float = 0.0     # speech_started only after this much speech (a real VAD's reaction time)
    max_replies: int | None = None
    die_in_session: int | None = None
    die_at_s: float | None = None
    die_how: str = "abort"
    reject_session_update: str | None = None
    mute_session_update: bool = False


@dataclass
class Item:
    id: str
    delivered: int = 0        # samples sent in deltas
    truncated_ms: int | None = None


@dataclass
class Response:
    id: str
    item: Item
    task: asyncio.Task | None = None
    cancelled: bool = False
    start_input_s: float = 0.0


class Recorder:
    def __init__(self, path: str | None):
        self.path = Path(path) if path else None
        self.lock = threading.Lock()

    def __call__(self, event: str, **fields: Any) -> None:
        if self.path is None:
            return
        with self.lock, self.path.open("a") as f:
            f.write(json.dumps({"event": event, **fields}) + "\n")


def default_session(model: str) -> dict:
    """What session.created reports before any session.update (the documented defaults)."""
    return {
        "type": "realtime", "object": "realtime.session", "id": "sess_double", "model": model,
        "output_modalities": ["audio"], "instructions": "", "tools": [], "tool_choice": "auto",
        "max_output_tokens": "inf", "tracing": None, "prompt": None, "expires_at": 0,
        "audio": {
            "input": {"format": {"type": "audio/pcm", "rate": SR}, "transcription": None,
                      "noise_reduction": None,
                      "turn_detection": {"type": "server_vad", "threshold": 0.5, "prefix_padding_ms": 300,
                                         "silence_duration_ms": 500, "create_response": True,
                                         "interrupt_response": True, "idle_timeout_ms": None}},
            "output": {"format": {"type": "audio/pcm", "rate": SR}, "voice": "alloy", "speed": 1.0},
        },
    }


def merge(base: dict, update: dict) -> dict:
    out = dict(base)
    for k, v in update.items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


class Conn:
    """One client connection: one Realtime session."""

    counter = 0

    def __init__(self, server: "Double", ws: ServerConnection, model: str):
        Conn.counter += 1
        self.n = Conn.counter
        self.srv, self.s, self.ws, self.model = server, server.script, ws, model
        self.session = default_session(model)
        self.ids = 0
        self.n_in = 0
        self.pending = np.zeros(0, dtype=np.float32)
        self.in_speech = False
        self.onset = 0
        self.candidate: int | None = None  # an onset not yet reported (detect_ms)
        self.last_loud = 0          # one past the last loud sample
        self.user_item: str | None = None
        self.due: int | None = None  # input sample at which the next reply starts
        self.replies = 0
        self.response: Response | None = None
        self.items: dict[str, Item] = {}
        self.truncates: list[dict] = []
        self.errors: list[str] = []
        self.appends = 0
        self.append_bytes: set[int] = set()
        self.speech: list[dict] = []
        self.responses: list[dict] = []
        self.send_lock = asyncio.Lock()
        self.dead = False
        self.wall0 = time.time()

    def new_id(self, prefix: str) -> str:
        self.ids += 1
        return f"{prefix}_{self.n:03d}{self.ids:05d}"

    async def send(self, type: str, **fields: Any) -> None:
        if self.dead:
            return
        async with self.send_lock:
            await self.ws.send(json.dumps({"type": type, "event_id": self.new_id("event"), **fields}))

    async def error(self, message: str, *, type: str = "invalid_request_error", code: str | None = None,
                    param: str | None = None, event_id: str | None = None) -> None:
        self.errors.append(message)
        self.srv.record("error", session=self.n, message=message, code=code)
        await self.send("error", error={"type": type, "code": code, "message": message, "param": param,
                                        "event_id": event_id})

    @property
    def td(self) -> dict:
        return self.session["audio"]["input"].get("turn_detection") or {}

    # -- the client's events --
    async def run(self) -> None:
        await self.send("session.created", session=self.session)
        try:
            async for raw in self.ws:
                try:
                    msg = json.loads(raw)
                except ValueError:
                    await self.error("The server could not parse the message as JSON.", code="invalid_json")
                    continue
                await self.handle(msg)
                if self.dead:
                    break
        except ConnectionClosed:
            pass
        finally:
            if self.response and self.response.task:
                self.response.task.cancel()
            self.srv.record("session", session=self.n, model=self.model, input_s=self.n_in / SR,
                            appends=self.appends, append_bytes=sorted(self.append_bytes), speech=self.speech,
                            responses=self.responses, truncates=self.truncates, errors=self.errors,
                            died=self.dead, wall=[self.wall0, time.time()])

    async def handle(self, msg: dict) -> None:
        kind = msg.get("type")
        if kind == "session.update":
            sess = msg.get("session") or {}
            self.srv.record("session_update", session=self.n, value=sess)
            if sess.get("type") != "realtime":
                await self.error("Missing required parameter: 'session.type'.", code="missing_required_parameter",
                                 param="session.type", event_id=msg.get("event_id"))
                return
            if self.s.reject_session_update:
                await self.error(self.s.reject_session_update, code="invalid_value", event_id=msg.get("event_id"))
                return
            if self.s.mute_session_update:
                return
            self.session = merge(self.session, sess)
            await self.send("session.updated", session=self.session)
        elif kind == "input_audio_buffer.append":
            try:
                data = base64.b64decode(msg["audio"], validate=True)
            except (KeyError, ValueError):
                await self.error("Invalid 'audio'. Expected base64-encoded audio bytes.", code="invalid_value",
                                 param="audio", event_id=msg.get("event_id"))
                return
            if len(data) % 2:
                await self.error("Audio bytes must be a whole number of 16-bit samples.", code="invalid_value")
                return
            self.appends += 1
            self.append_bytes.add(len(data))
            await self.audio(np.frombuffer(data, dtype="<i2").astype(np.float32) / 32768.0)
        elif kind == "conversation.item.truncate":
            await self.truncate(msg)
        elif kind == "response.cancel":
            if self.response is not None:
                self.response.cancelled = True
        elif kind == "input_audio_buffer.clear":
            self.pending = np.zeros(0, dtype=np.float32)
            await self.send("input_audio_buffer.cleared")
        elif kind == "input_audio_buffer.commit":
            await self.send("input_audio_buffer.committed", item_id=self.new_id("item"), previous_item_id=None)
        else:
            await self.error(f"Invalid value: '{kind}'. Supported values are the client events this double "
                             "implements.", code="invalid_value", param="type", event_id=msg.get("event_id"))

    async def audio(self, x: np.ndarray) -> None:
        self.pending = np.concatenate([self.pending, x])
        td = self.td
        while len(self.pending) >= WINDOW:
            w, self.pending = self.pending[:WINDOW], self.pending[WINDOW:]
            start = self.n_in
            self.n_in += WINDOW
            loud = np.flatnonzero(np.abs(w) > self.s.vad_level)
            silence = td.get("silence_duration_ms", 500) * SR // 1000 if td else 0
            if td and len(loud):
                self.last_loud = start + int(loud[-1]) + 1
                if not self.in_speech and self.candidate is None:
                    self.candidate = start + int(loud[0])
            elif td and self.in_speech and self.n_in - self.last_loud >= silence:
                await self.speech_stopped()
            if self.candidate is not None and not self.in_speech:
                if self.n_in - self.last_loud >= silence:
                    self.candidate = None   # too short to be reported
                elif self.n_in - self.candidate >= self.s.detect_ms * SR / 1000:
                    onset, self.candidate = self.candidate, None
                    await self.speech_started(onset)
            if self.due is not None and self.n_in >= self.due and self.response is None:
                self.due = None
                await self.start_response()
            die = self.s.die_at_s
            if self.s.die_in_session in (None, self.n) and die is not None and self.n_in >= die * SR:
                await self.die()
                return

    async def speech_started(self, onset: int) -> None:
        self.in_speech, self.onset = True, onset
        self.user_item = self.new_id("item")
        self.due = None
        start_ms = max(onset * 1000 // SR - int(self.td.get("prefix_padding_ms", 300)), 0)
        self.speech.append({"onset": onset, "audio_start_ms": start_ms})
        self.srv.record("speech_started", session=self.n, onset=onset, audio_start_ms=start_ms)
        await self.send("input_audio_buffer.speech_started", audio_start_ms=start_ms, item_id=self.user_item)
        r = self.response
        if r is not None and not r.cancelled and self.td.get("interrupt_response", True):
            r.cancelled = True

    async def speech_stopped(self) -> None:
        self.in_speech = False
        end_ms = -(-self.last_loud * 1000 // SR) + int(self.td.get("silence_duration_ms", 500))
        self.speech[-1].update({"end": self.last_loud, "audio_end_ms": end_ms})
        await self.send("input_audio_buffer.speech_stopped", audio_end_ms=end_ms, item_id=self.user_item)
        prev = self.user_item
        await self.send("input_audio_buffer.committed", item_id=self.user_item, previous_item_id=None)
        await self.send("conversation.item.added", previous_item_id=None,
                        item={"id": prev, "type": "message", "role": "user", "status": "completed",
                              "content": [{"type": "input_audio", "transcript": None}]})
        if self.td.get("create_response", True) and (self.s.max_replies is None or self.replies < self.s.max_replies):
            self.due = max(self.last_loud + int(round(self.s.reply_delay_s * SR)), self.n_in)
            if self.n_in >= self.due and self.response is None:
                self.due = None
                await self.start_response()

    # -- the reply --
    async def start_response(self) -> None:
        self.replies += 1
        item = Item(self.new_id("item"))
        self.items[item.id] = item
        r = Response(self.new_id("resp"), item, start_input_s=self.n_in / SR)
        self.response = r
        r.task = asyncio.create_task(self.respond(r))

    def reply_audio(self) -> np.ndarray:
        if self.s.reply_wav:
            return self.srv.wav
        t = np.arange(int(round(self.s.reply_s * SR))) / SR
        return (self.s.tone_level * np.sin(2 * np.pi * self.s.tone_hz * t)).astype(np.float32)

    async def respond(self, r: Response) -> None:
        item = r.item
        base = {"object": "realtime.response", "id": r.id, "conversation_id": "conv_double",
                "output_modalities": self.session.get("output_modalities", ["audio"]), "metadata": None,
                "audio": {"output": {"format": {"type": "audio/pcm", "rate": SR},
                                     "voice": self.session["audio"]["output"].get("voice", "alloy")}}}
        msg_item = {"id": item.id, "object": "realtime.item", "type": "message", "role": "assistant",
                    "status": "in_progress", "content": []}
        loop = asyncio.get_running_loop()
        try:
            await self.send("response.created", response={**base, "status": "in_progress", "status_details": None,
                                                          "output": [], "usage": None})
            await self.send("response.output_item.added", response_id=r.id, output_index=0, item=msg_item)
            await self.send("conversation.item.added", previous_item_id=self.user_item, item=msg_item)
            ids = {"response_id": r.id, "item_id": item.id, "output_index": 0, "content_index": 0}
            await self.send("response.content_part.added", **ids, part={"type": "audio", "transcript": ""})
            audio = self.reply_audio()
            pcm = np.clip(np.round(audio * 32767), -32768, 32767).astype("<i2")
            step = max(int(round(self.s.chunk_ms * SR / 1000)), 1)
            words = self.s.transcript.split()
            said: list[str] = []
            t_start = loop.time()
            for k, i in enumerate(range(0, len(pcm), step)):
                if self.s.speed > 0:
                    due = t_start + (i / SR) / self.s.speed
                    if due > loop.time():
                        await asyncio.sleep(due - loop.time())
                if r.cancelled:
                    break
                chunk = pcm[i:i + step]
                item.delivered += len(chunk)
                await self.send("response.output_audio.delta", **ids,
                                delta=base64.b64encode(chunk.tobytes()).decode("ascii"))
                if k < len(words):
                    delta = ("" if k == 0 else " ") + words[k]
                    said.append(delta)
                    await self.send("response.output_audio_transcript.delta", **ids, delta=delta)
            text = "".join(said)
            usage = {"total_tokens": 20 + len(said), "input_tokens": 20, "output_tokens": len(said),
                     "input_token_details": {"text_tokens": 10, "audio_tokens": 10, "cached_tokens": 0},
                     "output_token_details": {"text_tokens": len(said), "audio_tokens": 0}}
            done_item = {**msg_item, "status": "incomplete" if r.cancelled else "completed",
                         "content": [{"type": "output_audio", "transcript": text}]}
            if not r.cancelled:
                await self.send("response.output_audio.done", **ids)
                await self.send("response.output_audio_transcript.done", **ids, transcript=text)
                await self.send("response.content_part.done", **ids, part={"type": "audio", "transcript": text})
            await self.send("response.output_item.done", response_id=r.id, output_index=0, item=done_item)
            status = "cancelled" if r.cancelled else "completed"
            details = {"type": "cancelled", "reason": "turn_detected"} if r.cancelled else None
            await self.send("response.done", response={**base, "status": status, "status_details": details,
                                                       "output": [done_item], "usage": usage})
            self.responses.append({"id": r.id, "item_id": item.id, "start_input_s": r.start_input_s,
                                   "delivered_ms": item.delivered * 1000 / SR, "status": status})
            self.srv.record("response", session=self.n, **self.responses[-1])
        except ConnectionClosed:
            pass
        finally:
            if self.response is r:
                self.response = None

    async def truncate(self, msg: dict) -> None:
        item_id, end_ms = msg.get("item_id"), msg.get("audio_end_ms")
        item = self.items.get(item_id)
        delivered_ms = item.delivered * 1000 / SR if item else None
        row = {"item_id": item_id, "content_index": msg.get("content_index"), "audio_end_ms": end_ms,
               "delivered_ms": delivered_ms, "input_s": self.n_in / SR}
        if item is None:
            row["accepted"] = False
            await self.error(f"Conversation item with item_id '{item_id}' not found.", code="item_not_found",
                             param="item_id", event_id=msg.get("event_id"))
        elif not isinstance(end_ms, int) or end_ms < 0 or msg.get("content_index") != 0:
            row["accepted"] = False
            await self.error("Invalid 'audio_end_ms' or 'content_index'.", code="invalid_value",
                             param="audio_end_ms", event_id=msg.get("event_id"))
        elif end_ms > delivered_ms:
            row["accepted"] = False
            await self.error(f"Audio content of {delivered_ms:.0f} ms is already shorter than {end_ms} ms",
                             code="invalid_value", param="audio_end_ms", event_id=msg.get("event_id"))
        else:
            row["accepted"] = True
            item.truncated_ms = end_ms
            await self.send("conversation.item.truncated", item_id=item_id, content_index=0, audio_end_ms=end_ms)
        self.truncates.append(row)
        self.srv.record("truncate", session=self.n, **row)

    async def die(self) -> None:
        self.srv.record("die", session=self.n, input_s=self.n_in / SR, how=self.s.die_how)
        if self.s.die_how == "error":
            await self.send("error", error={"type": "server_error", "code": None, "param": None, "event_id": None,
                                            "message": "The server had an error while processing your request."})
            self.errors.append("server_error")
        self.dead = True
        if self.s.die_how == "abort":
            self.ws.transport.abort()
        else:
            await self.ws.close(1011, "internal error")


class Double:
    def __init__(self, script: Script, record: str | None):
        self.script = script
        self.record = Recorder(record)
        self.wav = None
        if script.reply_wav:
            import soundfile as sf
            y, sr = sf.read(script.reply_wav, dtype="float32")
            assert sr == SR and y.ndim == 1, "reply_wav must be mono 24 kHz"
            self.wav = y

    def process_request(self, conn: ServerConnection, request):
        parts = urlsplit(request.path)
        if parts.path.rstrip("/") != "/v1/realtime":
            return conn.respond(HTTPStatus.NOT_FOUND, "not found\n")
        auth = request.headers.get("Authorization", "")
        ok = self.script.api_key is None or auth == f"Bearer {self.script.api_key}"
        model = (parse_qs(parts.query).get("model") or [""])[0]
        self.record("connect", path=parts.path, model=model, auth_ok=ok,
                    bearer=auth.startswith("Bearer "))
        if not ok:
            body = {"error": {"type": "invalid_request_error", "code": "invalid_api_key",
                              "message": "Incorrect API key provided.", "param": None}}
            return conn.respond(HTTPStatus.UNAUTHORIZED, json.dumps(body) + "\n")
        return None

    async def handler(self, ws: ServerConnection) -> None:
        parts = urlsplit(ws.request.path)
        model = (parse_qs(parts.query).get("model") or [""])[0]
        await Conn(self, ws, model).run()


async def main_async(port: int, script: Script, record: str | None) -> None:
    double = Double(script, record)
    async with serve(double.handler, "127.0.0.1", port, process_request=double.process_request,
                     max_size=None, compression=None) as server:
        port = server.sockets[0].getsockname()[1]
        print(f"PORT {port}", flush=True)
        await asyncio.Future()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--record", default=None)
    ap.add_argument("--script", default="{}", help="JSON object of Script fields")
    args = ap.parse_args(argv)
    script = Script(**json.loads(args.script))
    try:
        asyncio.run(main_async(args.port, script, args.record))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
