"""A Freeze-Omni protocol test double: NOT the model, and no model inside.

It speaks the socket.io protocol of VITA-MLLM/Freeze-Omni bin/server.py (commit 3e17af4) over HTTPS
with a self-signed certificate, so the `freeze-omni` runner can be tested without a GPU:

- `prompt_text` (str) -> `prompt_success`;
- `recording-started` -> `stop_tts` twice (as the real server does around its reset);
- `audio`: a JSON string `{"audio": [int16 LE bytes], "sample_rate": 16000}`, checked strictly;
  at most one queued reply chunk goes out per incoming `audio` event, as the real server only
  emits output from its `audio` handler;
- `recording-stopped` -> `stop_tts`.

Its "dialogue" is a deterministic script: the user speaks while samples exceed `level` (exact zeros
are silence); `min_silence_s` of silence ends a turn at its last loud sample E; the reply, a
`tone_s` tone at 24 kHz in `chunk_ms` chunks (raw int16 bytes), becomes due once the stream has
reached E + `reply_delay_s` and goes out one chunk per incoming frame from the frame that reaches
it. User speech starting while a reply is due or still playing (by stream time) gets `stop_tts`
and cancels the rest of the reply. Options: `too_many_users` (emitted on connect, after which
the session is refused, as the real server does at `--max_users`), `die_after` N audio frames
(`die_how` "exit": the process dies; "disconnect": a socket.io disconnect; `die_in_session` k:
only in the k-th session; `die_times` n: only the first n sessions that reach `die_after` frames
die), `basic_auth` "user:password" (HTTP 401 without it, as a reverse proxy in front of the server
would answer), `mute_prompt` (no `prompt_success`: a stuck server), `mute` (answers nothing: no
`prompt_success`, no `stop_tts`, no audio), `stall` (accepts the TLS connection, then never answers
the HTTP request), `reply_wav` (the reply is this WAV file, int16 mono 24 kHz, instead of the tone),
`burst_at` k (on the k-th audio frame: `burst` reply chunks and a `stop_tts` right after them, in
one go, to check that a client handles them in order), `acks` (how many `stop_tts` answer
`recording-started`: 2 as Freeze-Omni, 1 as VITA-1.5's web_demo/server.py), `reply_text` (a
`response_text` event `{"text": ...}` with each reply's first chunk, as VITA-1.5 sends).

Each `session` record carries `started_at` (time.monotonic() when the second `stop_tts` answering
`recording-started` went out: the client's clock can only start after it) and `arrivals` (the
time.monotonic() each `audio` frame was handled), so a test can check the client's pacing.

The HTTP server is a small threaded HTTPS WSGI server from the standard library that hands the
TLS socket to python-engineio's threading mode (simple-websocket, as gunicorn does), so the test
needs nothing beyond the runner's own packages. Run as a script it prints `PORT <n>` once it
listens, and appends what it saw to the `--record` JSON-lines file (one `session` line per
session, plus `error` lines for every protocol violation).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import socket
import ssl
import sys
import threading
import time
import wave
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote

import numpy as np
import socketio

IN_SR, OUT_SR = 16000, 24000


@dataclass
class Script:
    reply_delay_s: float = 0.5
    min_silence_s: float = 0.3
    level: float = 1e-3
    tone_s: float = 1.0
    tone_hz: float = 440.0
    tone_level: float = 0.3
    chunk_ms: int = 160
    too_many_users: bool = False
    die_after: int | None = None
    die_how: str = "exit"
    die_in_session: int | None = None  # only the n-th session (1-based) dies; None: every one
    die_times: int | None = None        # only the first n sessions reaching die_after die
    basic_auth: str | None = None
    mute_prompt: bool = False   # never answer prompt_text (a stuck server)
    mute: bool = False          # never answer anything (a silent server)
    stall: bool = False         # never answer the HTTP request at all
    reply_wav: str | None = None  # the reply (int16 mono 24 kHz WAV) instead of the tone
    burst_at: int | None = None   # on this audio frame: `burst` chunks then stop_tts, back to back
    burst: int = 3
    acks: int = 2                 # stop_tts answering recording-started (VITA-1.5's server sends one)
    reply_text: str | None = None  # sent as response_text {"text": ...} with a reply's first chunk (VITA-1.5)


@dataclass
class Session:
    sid: str
    index: int = 0
    refused: bool = False
    prompt: str | None = None
    order: list = field(default_factory=list)       # protocol events in arrival order (audio once)
    frames: int = 0
    samples: int = 0
    frame_bytes: set = field(default_factory=set)
    speaking: bool = False
    last_loud: int = 0
    speech_starts: list = field(default_factory=list)
    speech_ends: list = field(default_factory=list)
    reply_due: int | None = None
    reply_end: int | None = None
    chunks: list = field(default_factory=list)
    replies: list = field(default_factory=list)      # [due sample, frame index of the first chunk]
    interrupts: list = field(default_factory=list)   # stream samples where stop_tts was sent
    chunks_sent: int = 0
    stopped: bool = False
    started_at: float | None = None
    arrivals: list = field(default_factory=list)
    errors: list = field(default_factory=list)


def reply_pcm(s: Script) -> np.ndarray:
    if s.reply_wav:
        with wave.open(s.reply_wav, "rb") as w:
            assert (w.getnchannels(), w.getsampwidth(), w.getframerate()) == (1, 2, OUT_SR), s.reply_wav
            return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
    n = int(round(s.tone_s * OUT_SR))
    x = s.tone_level * np.cos(2 * np.pi * s.tone_hz * np.arange(n) / OUT_SR)
    return np.clip(np.round(x * 32767), -32768, 32767).astype("<i2")


def tone_chunks(s: Script) -> list[bytes]:
    pcm = reply_pcm(s)
    step = OUT_SR * s.chunk_ms // 1000
    return [pcm[i:i + step].tobytes() for i in range(0, len(pcm), step)]


class FreezeOmniDouble:
    """The socket.io application (a WSGI app) and its per-session script."""

    def __init__(self, script: Script, record: Path | None = None):
        self.s = script
        self.record = record
        self.lock = threading.Lock()
        self.sessions: dict[str, Session] = {}
        self.connects = 0
        self.deaths = 0
        self.reply_s = len(reply_pcm(script)) / OUT_SR
        self.sockets: dict[str, socket.socket] = {}
        # async_handlers=False: one session's events are handled in order (the real server's
        # Flask-SocketIO default runs each in its own thread).
        self.sio = sio = socketio.Server(async_mode="threading", async_handlers=False, logger=False,
                                         engineio_logger=False)
        self.app = socketio.WSGIApp(sio)
        sio.on("connect", self.on_connect)
        sio.on("disconnect", self.on_disconnect)
        sio.on("prompt_text", self.on_prompt)
        sio.on("recording-started", self.on_started)
        sio.on("recording-stopped", self.on_stopped)
        sio.on("audio", self.on_audio)
        sio.on("*", self.on_other)

    def note(self, row: dict) -> None:
        if self.record is not None:
            with self.lock, open(self.record, "a") as f:
                f.write(json.dumps(row) + "\n")

    def error(self, ses: Session, msg: str) -> None:
        ses.errors.append(msg)
        self.note({"event": "error", "sid": ses.sid, "error": msg})

    def summary(self, ses: Session) -> dict:
        return {"event": "session", "sid": ses.sid, "refused": ses.refused, "prompt": ses.prompt,
                "order": ses.order, "frames": ses.frames, "samples": ses.samples,
                "frame_bytes": sorted(ses.frame_bytes), "speech_starts": ses.speech_starts,
                "speech_ends": ses.speech_ends, "replies": ses.replies, "interrupts": ses.interrupts,
                "chunks_sent": ses.chunks_sent, "started_at": ses.started_at, "arrivals": ses.arrivals,
                "errors": ses.errors}

    # -- events --
    def on_connect(self, sid, environ, auth=None):
        self.connects += 1
        ses = self.sessions[sid] = Session(sid, self.connects)
        self.sockets[sid] = environ.get("gunicorn.socket")
        if self.s.too_many_users:
            ses.refused = True
            self.sio.emit("too_many_users", to=sid)   # accepted, then refused: as bin/server.py does

    def on_disconnect(self, sid, reason=None):
        ses = self.sessions.pop(sid, None)
        self.sockets.pop(sid, None)
        if ses is not None:
            self.note(self.summary(ses))

    def _session(self, sid, event) -> Session | None:
        ses = self.sessions.get(sid)
        if ses is None or ses.refused:
            self.sio.disconnect(sid)   # bin/server.py: an unknown user is disconnected
            return None
        if event != "audio" or not ses.order or ses.order[-1] != "audio":
            ses.order.append(event)
        return ses

    def on_prompt(self, sid, text):
        ses = self._session(sid, "prompt_text")
        if ses is None:
            return
        if not isinstance(text, str) or not text:
            self.error(ses, f"prompt_text payload is {type(text).__name__}, not a non-empty str")
        if "recording-started" in ses.order:
            self.error(ses, "prompt_text after recording-started")
        ses.prompt = text
        if not (self.s.mute_prompt or self.s.mute):
            self.sio.emit("prompt_success", to=sid)

    def on_started(self, sid, *args):
        ses = self._session(sid, "recording-started")
        if ses is None:
            return
        if ses.frames:
            self.error(ses, "recording-started after audio")
        if self.s.mute:
            return
        for _ in range(self.s.acks):
            self.sio.emit("stop_tts", to=sid)
        ses.started_at = time.monotonic()

    def on_stopped(self, sid, *args):
        ses = self._session(sid, "recording-stopped")
        if ses is None:
            return
        ses.stopped = True
        if not self.s.mute:
            self.sio.emit("stop_tts", to=sid)

    def on_other(self, event, sid, *args):
        ses = self.sessions.get(sid)
        if ses is not None:
            self.error(ses, f"unknown event {event!r}")

    def on_audio(self, sid, data):
        now = time.monotonic()
        ses = self._session(sid, "audio")
        if ses is None:
            return
        ses.arrivals.append(now)
        x = self._parse(ses, data)
        if x is None:
            return
        if "recording-started" not in ses.order:
            self.error(ses, "audio before recording-started")
        if ses.stopped:
            self.error(ses, "audio after recording-stopped")
        ses.frames += 1
        if self.s.mute:
            return
        self._script(ses, x)
        if self.s.burst_at is not None and ses.frames == self.s.burst_at:
            for chunk in tone_chunks(self.s)[:self.s.burst]:
                self.sio.emit("audio", chunk, to=sid)
            self.sio.emit("stop_tts", to=sid)
            ses.interrupts.append(ses.samples)
        if self.s.die_after is not None and ses.frames == self.s.die_after \
                and self.s.die_in_session in (None, ses.index) and self._may_die():
            self.note({**self.summary(ses), "died": self.s.die_how})
            if self.s.die_how == "exit":
                os._exit(3)
            self.sio.disconnect(sid)

    def _may_die(self) -> bool:
        with self.lock:
            if self.s.die_times is not None and self.deaths >= self.s.die_times:
                return False
            self.deaths += 1
            return True

    def _parse(self, ses: Session, data) -> np.ndarray | None:
        if not isinstance(data, str):
            self.error(ses, f"audio payload is {type(data).__name__}, not a JSON string")
            return None
        try:
            obj = json.loads(data)
        except ValueError as exc:
            self.error(ses, f"audio payload is not JSON ({exc})")
            return None
        if not isinstance(obj, dict) or set(obj) != {"audio", "sample_rate"}:
            self.error(ses, f"audio payload keys {sorted(obj) if isinstance(obj, dict) else obj!r}")
            return None
        if obj["sample_rate"] != IN_SR:
            self.error(ses, f"sample_rate {obj['sample_rate']!r}, expected {IN_SR}")
        raw = obj["audio"]
        if not isinstance(raw, list) or not all(isinstance(b, int) and 0 <= b <= 255 for b in raw):
            self.error(ses, "audio is not a list of byte values")
            return None
        if len(raw) % 2:
            self.error(ses, f"audio has {len(raw)} bytes, not whole int16 samples")
            return None
        ses.frame_bytes.add(len(raw))
        return np.frombuffer(bytes(raw), dtype="<i2").astype(np.float32) / 32768.0

    def _script(self, ses: Session, x: np.ndarray) -> None:
        s, n0 = self.s, ses.samples
        ses.samples += len(x)
        loud = np.flatnonzero(np.abs(x) > s.level)
        if len(loud):
            first = n0 + int(loud[0])
            if not ses.speaking:
                ses.speaking = True
                ses.speech_starts.append(first)
                if ses.reply_due is not None and first < ses.reply_end:
                    self.sio.emit("stop_tts", to=ses.sid)    # barge-in: the rest of the reply is dropped
                    ses.interrupts.append(first)
                    ses.reply_due = ses.reply_end = None
                    ses.chunks = []
            ses.last_loud = n0 + int(loud[-1]) + 1
        if ses.speaking and ses.samples - ses.last_loud >= s.min_silence_s * IN_SR:
            ses.speaking = False
            ses.speech_ends.append(ses.last_loud)
            ses.reply_due = ses.last_loud + int(round(s.reply_delay_s * IN_SR))
            ses.reply_end = ses.reply_due + int(round(self.reply_s * IN_SR))
            ses.chunks = tone_chunks(s)
            ses.replies.append([ses.reply_due, None])
        if ses.reply_due is not None and ses.samples >= ses.reply_due and ses.chunks:
            if ses.replies[-1][1] is None:
                ses.replies[-1][1] = ses.frames - 1
                if self.s.reply_text is not None:
                    self.sio.emit("response_text", {"text": self.s.reply_text}, to=ses.sid)
            self.sio.emit("audio", ses.chunks.pop(0), to=ses.sid)
            ses.chunks_sent += 1


class _Handler(BaseHTTPRequestHandler):
    """HTTP/1.1 over TLS to WSGI; a websocket request keeps its socket (engineio 'gunicorn' mode)."""

    protocol_version = "HTTP/1.1"

    def setup(self):
        # TCP_NODELAY: a binary event is two websocket messages (header, attachment); with Nagle the
        # second would wait for the client's ACK, which rides on its next frame (up to frame_ms).
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.request = self.server.tls.wrap_socket(self.request, server_side=True)
        super().setup()

    def log_message(self, *args):
        pass

    def do_GET(self):
        srv = self.server
        if srv.double.s.stall:   # a stuck server: the connection stays open, nothing answers
            srv.double.note({"event": "stalled"})
            time.sleep(3600)
            return
        if srv.expected_auth and self.headers.get("Authorization") != srv.expected_auth:
            srv.double.note({"event": "auth_rejected", "had_header": "Authorization" in self.headers})
            self._respond("401 Unauthorized", [("WWW-Authenticate", 'Basic realm="freeze-omni"')],
                          b"unauthorized\n")
            return
        path, _, query = self.path.partition("?")
        env = {"REQUEST_METHOD": self.command, "SCRIPT_NAME": "", "PATH_INFO": unquote(path),
               "QUERY_STRING": query, "SERVER_NAME": srv.server_address[0],
               "SERVER_PORT": str(srv.server_address[1]), "SERVER_PROTOCOL": self.request_version,
               "REMOTE_ADDR": self.client_address[0], "wsgi.version": (1, 0), "wsgi.url_scheme": "https",
               "wsgi.input": self.rfile, "wsgi.errors": sys.stderr, "wsgi.multithread": True,
               "wsgi.multiprocess": False, "wsgi.run_once": False, "gunicorn.socket": self.connection}
        for k, v in self.headers.items():
            key = k.upper().replace("-", "_")
            env[key if key in ("CONTENT_TYPE", "CONTENT_LENGTH") else "HTTP_" + key] = v
        started = []
        try:
            body = b"".join(srv.double.app(env, lambda status, headers, exc=None:
                                           started.extend([status, headers])))
        except StopIteration:   # a websocket session ended; simple-websocket closed the socket
            self.close_connection = True
            return
        self._respond(started[0], started[1], body)

    do_POST = do_GET

    def _respond(self, status: str, headers: list, body: bytes) -> None:
        code, _, reason = status.partition(" ")
        self.send_response(int(code), reason)
        for h, v in headers:
            if h.lower() != "content-length":
                self.send_header(h, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        exc = sys.exc_info()[1]
        if isinstance(exc, (ssl.SSLError, ConnectionError, OSError)):
            self.double.note({"event": "tls_error", "error": str(exc)})   # e.g. the client rejected our cert
            return
        super().handle_error(request, client_address)


def serve(double: FreezeOmniDouble, cert: str, key: str, host: str = "127.0.0.1", port: int = 0,
          basic_auth: str | None = None) -> _Server:
    srv = _Server((host, port), _Handler)
    srv.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    srv.tls.load_cert_chain(cert, key)
    srv.double = double
    srv.expected_auth = ("Basic " + base64.b64encode(basic_auth.encode()).decode()) if basic_auth else None
    return srv


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--record")
    ap.add_argument("--script", default="{}", help="JSON object of Script fields")
    args = ap.parse_args(argv)
    script = Script(**json.loads(args.script))
    double = FreezeOmniDouble(script, Path(args.record) if args.record else None)
    srv = serve(double, args.cert, args.key, port=args.port, basic_auth=script.basic_auth)
    print(f"PORT {srv.server_address[1]}", flush=True)
    srv.serve_forever(poll_interval=0.1)


if __name__ == "__main__":
    main()
