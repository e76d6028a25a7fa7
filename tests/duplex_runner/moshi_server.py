"""PROTOCOL TEST DOUBLE of Moshi's WebSocket server, backed by a TINY RANDOM-WEIGHT model. NOT Moshi.

It speaks the byte protocol of kyutai-labs/moshi @ e6a55d2, moshi/server.py (ServerState.handle_chat
and recv_loop), and runs the real moshi inference code (moshi 0.2.13: MimiModel.encode/decode and
LMGen.step) on the tiny random-weight Mimi + LM of duplexeval_runner_moshi/tiny.py. Its audio is
noise and its text is token ids: it exists so clients can be tested on this machine, without a GPU
or weights. Run it with the moshi environment's python:

    .venvs/runner-moshi/bin/python tests/duplex_runner/moshi_server.py --port 8998
    .venvs/runner-moshi/bin/python tests/duplex_runner/moshi_server.py --print-port [options]

The protocol, as moshi/server.py has it (aiohttp, GET /api/chat upgraded to a WebSocket, every
message binary with a one-byte kind):

- The WebSocket is accepted first; then the session waits for the server's one lock (one session
  at a time: a second client is connected but gets no handshake until the first session ends).
  Under the lock: a fresh sphn.OpusStreamWriter/Reader at 24 kHz, mimi.reset_streaming(),
  lm_gen.reset_streaming(), then the handshake `b"\\x00"`.
- Client -> server `0x01` + Ogg-Opus bytes (sphn.OpusStreamWriter's pages). Decoded PCM is cut
  into 1920-sample frames; each is Mimi-encoded and stepped through LMGen. The very first frame
  is encoded and then the Mimi streaming state is reset (its left padding), as server.py does; its
  LMGen.step returns None, so the first reply comes after the second input frame.
- Server -> client, per LMGen step that returns tokens: `0x01` + the Ogg-Opus bytes of the decoded
  1920 samples (when the writer has bytes), then `0x02` + UTF-8 text when the text token is not
  0 or 3 (padding). There is no tokenizer: the text is " <id>" for token id.
- Other kinds are logged and ignored ("unknown message kind"), as server.py does. There is no
  end-of-input message: the client closes the socket.

Extras for tests (none of them in the real server, except where named):

--print-port             bind port 0 and print the port, alone on the first stdout line
--seed N                 the tiny model's weights and the sampling seed (default 0); a session
                         whose query has `seed=<int>` (PersonaPlex's query parameter) reseeds
                         torch with it when it starts, so a session is reproducible
--handshake-delay S      sleep S seconds under the lock before the handshake (PersonaPlex runs its
                         voice and text prompts there before sending 0x00)
--die-after-frames N     after N input frames of a session, drop the TCP connection abruptly (no
                         WebSocket close frame); --die-times K: only the first K sessions (0: all)
--stall-after-frames N   after N input frames, keep the socket open but stop answering
--step-delay-ms MS       sleep MS per input frame (a slow model; the server lags as Moshi's would)
--reply-after-silence S  gate the output: send silence (still one Opus frame per step) except
                         where the user has been silent for S seconds after having spoken, on the
                         input timeline (output step k covers input frame k, the alignment of
                         Full-Duplex-Bench's Moshi client); the user speaking again mutes it at once
--reply-wav PATH         with --reply-after-silence: the audio of each reply turn is this file (at
                         24 kHz, from its start on each turn, then silence) instead of the tiny
                         model's noise, so an ASR finds words where the reply starts
--silence-rms X          |sample| above X is speech for the gate (default 0.01)
--threads N              torch CPU threads (default 1)
--text-chars N           hostile-input tests: after a session's first audio reply, one 0x02 text frame of N
                         characters "A" (a model's text piece is a few)
--oversize-bytes N       hostile-input tests: after a session's first audio reply, one 0x02 frame of N bytes
                         (over a client's message size limit); --oversize-times K: only the first K sessions
                         (0: all)

GET /api/sessions        JSON list, one object per session: its query parameters (voice_prompt,
                         text_prompt, seed, ...), frames in, audio/text messages out, settings,
                         how it ended
POST /api/settings       FLM-Audio's (cofe-ai/flm-audio flmaudio/server.py): a JSON object of
                         LMGen attributes set with setattr; 400 on bad JSON, 503 while a session
                         holds the lock, else {"status": "success"}
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

# moshi reads NO_TORCH_COMPILE when imported: decide before importing it.
os.environ.setdefault("NO_TORCH_COMPILE", "1")
os.environ.setdefault("NO_CUDA_GRAPH", "1")

import numpy as np  # noqa: E402

try:
    from duplexeval_runner_moshi import tiny  # noqa: E402
except ImportError:  # not installed: the source tree
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "components" / "runners" / "moshi"))
    from duplexeval_runner_moshi import tiny  # noqa: E402

import aiohttp  # noqa: E402
import sphn  # noqa: E402
import torch  # noqa: E402
from aiohttp import web  # noqa: E402
from moshi.models import LMGen  # noqa: E402

SR = 24000
FRAME = 1920
SETTABLE = ("use_sampling", "temp", "temp_text", "top_k", "top_k_text", "cfg_coef")


def log(msg: str) -> None:
    print(f"[moshi-double {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class Gate:
    """Which output samples are a reply: the user silent for `after_s` after having spoken."""

    def __init__(self, after_s: float, rms: float, reply: np.ndarray | None):
        self.after = int(round(after_s * SR))
        self.thr = rms
        self.reply = reply
        self.last_speech = -1  # input sample index of the last speech sample so far
        self.turn_start = -1   # input sample index where the current reply turn started
        self.was_on = False

    def apply(self, frame_in: np.ndarray, k: int, pcm: np.ndarray) -> np.ndarray:
        """Output frame k (covering input frame k): the model's pcm (or the reply file) where the
        gate is open, silence elsewhere."""
        idx = k * FRAME + np.arange(FRAME)
        speech = np.where(np.abs(frame_in) > self.thr, idx, -1)
        last = np.maximum.accumulate(np.maximum(speech, self.last_speech))
        self.last_speech = int(last[-1])
        on = (last >= 0) & (idx - last >= self.after)
        if self.reply is None:
            self.was_on = bool(on[-1])
            return np.where(on, pcm, 0.0).astype(np.float32)
        starts = on & ~np.concatenate(([self.was_on], on[:-1]))
        begin = np.maximum.accumulate(np.maximum(np.where(starts, idx, -1), self.turn_start))
        self.turn_start = int(begin[-1])
        self.was_on = bool(on[-1])
        pos = idx - begin
        play = on & (begin >= 0) & (pos < len(self.reply))
        out = np.zeros(FRAME, np.float32)
        out[play] = self.reply[pos[play]]
        return out


class DoubleServer:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        torch.set_num_threads(max(1, args.threads))
        torch.manual_seed(args.seed)
        self.mimi, lm = tiny.build(args.seed)
        # moshi/server.py builds LMGen(lm, cfg_coef=..., **lm_gen_config): LMGen's own defaults
        # (temp 0.8, temp_text 0.7, top_k 250, top_k_text 25).
        self.lm_gen = LMGen(lm)
        self.mimi.streaming_forever(1)
        self.lm_gen.streaming_forever(1)
        self.lock = asyncio.Lock()
        self.sessions: list[dict[str, Any]] = []
        self.reply = None
        if args.reply_wav:
            pcm, _ = sphn.read(args.reply_wav, sample_rate=SR)
            self.reply = np.asarray(pcm[0], np.float32)
        self._warmup()

    def _warmup(self) -> None:
        with torch.no_grad():
            for _ in range(4):
                codes = self.mimi.encode(torch.zeros(1, 1, FRAME))
                tokens = self.lm_gen.step(codes)
                if tokens is not None:
                    self.mimi.decode(tokens[:, 1:])

    def settings(self) -> dict[str, Any]:
        return {k: getattr(self.lm_gen, k) for k in SETTABLE}

    async def handle_sessions(self, request: web.Request) -> web.Response:
        return web.json_response(self.sessions)

    async def handle_settings(self, request: web.Request) -> web.Response:
        try:
            settings = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            return web.json_response({"error": "Invalid JSON"}, status=400)
        if self.lock.locked():
            return web.json_response({"error": "Server is busy, please try again later."}, status=503)
        if not isinstance(settings, dict):
            return web.json_response({"error": "Invalid JSON"}, status=400)
        for key, value in settings.items():
            try:
                setattr(self.lm_gen, key, value)
            except Exception as exc:  # FLM-Audio prints and goes on
                log(f"settings: {key}: {exc}")
        log(f"settings: {json.dumps(settings)}")
        return web.json_response({"status": "success"})

    async def handle_chat(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        rec: dict[str, Any] = {"id": len(self.sessions), "path": request.path, "query": dict(request.query),
                               "frames_in": 0, "audio_out": 0, "text_out": 0, "state": "waiting"}
        self.sessions.append(rec)
        log(f"accepted connection {rec['id']} query={json.dumps(rec['query'])}")
        async with self.lock:
            rec["state"] = "open"
            rec["settings"] = self.settings()
            seed = request.query.get("seed")
            if seed is not None:
                try:
                    torch.manual_seed(int(seed))
                except ValueError:
                    log(f"session {rec['id']}: seed {seed!r} is not an integer (ignored)")
            writer = sphn.OpusStreamWriter(SR)
            reader = sphn.OpusStreamReader(SR)
            self.mimi.reset_streaming()
            self.lm_gen.reset_streaming()
            if self.args.handshake_delay > 0:
                await asyncio.sleep(self.args.handshake_delay)
            try:
                await ws.send_bytes(b"\x00")
                await self.recv_loop(request, ws, reader, writer, rec)
            except ConnectionResetError as exc:
                if rec["state"] == "open":
                    rec["state"] = f"lost ({type(exc).__name__})"
            finally:
                if rec["state"] == "open":
                    rec["state"] = "closed"
                log(f"done with connection {rec['id']}: {rec['state']}, {rec['frames_in']} frames in, "
                    f"{rec['audio_out']} audio messages out")
        return ws

    def _oversize(self, rec: dict) -> bool:
        a = self.args
        if not a.oversize_bytes or rec.get("oversized") is not None:
            return False
        sent = sum(1 for s in self.sessions if s.get("oversized"))
        rec["oversized"] = a.oversize_times == 0 or sent < a.oversize_times
        return rec["oversized"]

    async def _hostile(self, ws: web.WebSocketResponse, rec: dict) -> None:
        """After the first audio reply of a session: the text frames of --text-chars / --oversize-bytes."""
        if self.args.text_chars and not rec.get("long_text"):
            rec["long_text"] = self.args.text_chars
            await ws.send_bytes(b"\x02" + b"A" * self.args.text_chars)
        if self._oversize(rec):
            log(f"session {rec['id']}: sending a text frame of {self.args.oversize_bytes} bytes")
            await ws.send_bytes(b"\x02" + b"B" * (self.args.oversize_bytes - 1))

    def _dies(self, rec: dict) -> bool:
        a = self.args
        if a.die_after_frames is None or rec["frames_in"] < a.die_after_frames:
            return False
        died = sum(1 for s in self.sessions if s["state"] == "died")
        return a.die_times == 0 or died < a.die_times

    async def recv_loop(self, request: web.Request, ws: web.WebSocketResponse, reader, writer,
                        rec: dict) -> None:
        a = self.args
        pending = np.zeros(0, np.float32)
        skip_frames = 1
        gate = Gate(a.reply_after_silence, a.silence_rms, self.reply) if a.reply_after_silence is not None else None
        async for message in ws:
            if message.type == aiohttp.WSMsgType.ERROR:
                log(f"error {ws.exception()}")
                break
            if message.type == aiohttp.WSMsgType.CLOSED:
                break
            if message.type != aiohttp.WSMsgType.BINARY:
                log(f"unexpected message type {message.type}")
                continue
            data = message.data
            if len(data) == 0:
                log("empty message")
                continue
            if data[0] != 1:
                log(f"unknown message kind {data[0]}")
                continue
            if rec["state"] == "stalled":
                continue
            pcm = reader.append_bytes(data[1:])
            if pcm.shape[-1] == 0:
                continue
            pending = np.concatenate((pending, pcm.astype(np.float32)))
            while len(pending) >= FRAME:
                if self._dies(rec):
                    rec["state"] = "died"
                    log(f"session {rec['id']}: dying after {rec['frames_in']} frames (abort, no close frame)")
                    if request.transport is not None:
                        request.transport.abort()
                    return
                if a.stall_after_frames is not None and rec["frames_in"] >= a.stall_after_frames:
                    rec["state"] = "stalled"
                    log(f"session {rec['id']}: stalled after {rec['frames_in']} frames")
                    break
                chunk, pending = pending[:FRAME], pending[FRAME:]
                k = rec["frames_in"]
                rec["frames_in"] += 1
                started = time.monotonic()
                with torch.no_grad():
                    codes = self.mimi.encode(torch.from_numpy(chunk.copy())[None, None])
                    if skip_frames:
                        # server.py: the first frame's codes have the encoder's left padding;
                        # reset so that the padding is applied again on the next call
                        self.mimi.reset_streaming()
                        skip_frames -= 1
                    tokens = self.lm_gen.step(codes)
                    out = None if tokens is None else self.mimi.decode(tokens[:, 1:])[0, 0].numpy()
                if a.step_delay_ms:
                    await asyncio.sleep(a.step_delay_ms / 1000.0)
                if tokens is None:
                    continue
                if gate is not None:
                    out = gate.apply(chunk, k, out)
                opus = writer.append_pcm(out)
                if len(opus) > 0:
                    await ws.send_bytes(b"\x01" + opus)
                    rec["audio_out"] += 1
                    await self._hostile(ws, rec)
                text_token = int(tokens[0, 0, 0])
                if text_token not in (0, 3):
                    await ws.send_bytes(b"\x02" + f" <{text_token}>".encode("utf8"))
                    rec["text_out"] += 1
                rec["last_frame_ms"] = round(1000 * (time.monotonic() - started), 2)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Protocol test double of Moshi's WebSocket server (tiny "
                                "random-weight model; not Moshi).")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8998)
    p.add_argument("--print-port", action="store_true", help="bind port 0 and print it on stdout")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--handshake-delay", type=float, default=0.0, metavar="S")
    p.add_argument("--die-after-frames", type=int, default=None, metavar="N")
    p.add_argument("--die-times", type=int, default=0, metavar="K")
    p.add_argument("--stall-after-frames", type=int, default=None, metavar="N")
    p.add_argument("--step-delay-ms", type=float, default=0.0, metavar="MS")
    p.add_argument("--reply-after-silence", type=float, default=None, metavar="S")
    p.add_argument("--reply-wav", default=None, metavar="PATH")
    p.add_argument("--silence-rms", type=float, default=0.01, metavar="X")
    p.add_argument("--text-chars", type=int, default=0, metavar="N")
    p.add_argument("--oversize-bytes", type=int, default=0, metavar="N")
    p.add_argument("--oversize-times", type=int, default=0, metavar="K")
    p.add_argument("--threads", type=int, default=1, metavar="N",
                   help="torch CPU threads (default 1: steady on a loaded machine)")
    args = p.parse_args(argv)
    if args.reply_wav and args.reply_after_silence is None:
        p.error("--reply-wav needs --reply-after-silence")
    return args


async def serve(args: argparse.Namespace) -> None:
    state = DoubleServer(args)
    app = web.Application()
    app.router.add_get("/api/chat", state.handle_chat)
    app.router.add_get("/api/sessions", state.handle_sessions)
    app.router.add_post("/api/settings", state.handle_settings)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, args.host, 0 if args.print_port else args.port)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    if args.print_port:
        print(port, flush=True)
    log(f"listening on http://{args.host}:{port}/api/chat (tiny random-weight model, seed {args.seed})")
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()


def main(argv: list[str] | None = None) -> None:
    asyncio.run(serve(parse_args(argv)))


if __name__ == "__main__":
    main()
