"""A chat-completions test double that answers with audio, for the `half-duplex` runner's tests.

It is a protocol test double, not a model: an aiohttp server on 127.0.0.1 speaking the real
OpenAI chat-completions JSON (`POST /v1/chat/completions`; `choices[0].message.audio` with base64
`data` and a `transcript`, as gpt-4o-audio models and vLLM-served Qwen-Omni answer), whose reply is
a fixed tone of `reply_s` seconds (or the recording `reply_wav`, e.g. Piper speech, so that an ASR hears
words), sent `delay_s` after the request arrived. What it does with the
n-th request (from 0) is `modes[min(n, len(modes) - 1)]`:

- `audio`: the tone, as a WAV at `reply_sr` or as pcm16 at 24 kHz (the request's `audio.format`);
- `text`: a chat completion with text content and no audio (a model that cannot speak);
- `500`: HTTP 500 with an error body;
- `close`: the connection closed after the request was read, before any answer;
- `bad-audio`: `audio.data` that is not base64.

Each request is recorded (`--record`, JSON lines, event "request"): its number, mode, the sha256 of
its Authorization header (never the key itself), model, modalities, audio options, seed,
temperature, the roles of its messages, the number of input_audio parts and the length in samples
of the last one (a 16 kHz WAV), and the arrival time. `echo_auth` makes the transcript repeat the
Authorization header (a hostile server echoing the key: the runner must never write it).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import io
import json
import sys
import time
from dataclasses import dataclass, field

import numpy as np
import soundfile as sf
from aiohttp import web


@dataclass
class Script:
    delay_s: float = 0.3
    reply_s: float = 2.0
    reply_sr: int = 24000
    modes: list = field(default_factory=lambda: ["audio"])
    echo_auth: bool = False
    reply_wav: str | None = None


def tone(seconds: float, sr: int) -> np.ndarray:
    t = np.arange(int(round(seconds * sr))) / sr
    return (0.5 * np.sin(2 * np.pi * 300 * t + 0.5)).astype(np.float32)


class Double:
    def __init__(self, script: Script, record: str | None):
        self.script, self.record, self.n = script, record, 0
        if script.reply_wav:
            x, sr = sf.read(script.reply_wav, dtype="float32")
            self.reply, self.reply_sr = x.reshape(len(x), -1).mean(axis=1), sr
        else:
            self.reply, self.reply_sr = tone(script.reply_s, script.reply_sr), script.reply_sr

    def reply_at(self, sr: int) -> np.ndarray:
        if sr == self.reply_sr:
            return self.reply
        from math import gcd
        from scipy.signal import resample_poly
        g = gcd(sr, self.reply_sr)
        return resample_poly(self.reply, sr // g, self.reply_sr // g).astype(np.float32)

    def log(self, **fields) -> None:
        if self.record:
            with open(self.record, "a") as f:
                f.write(json.dumps({"event": "request", **fields}) + "\n")

    async def chat(self, request: web.Request) -> web.StreamResponse:
        n, self.n = self.n, self.n + 1
        s = self.script
        mode = s.modes[min(n, len(s.modes) - 1)]
        body = await request.json()
        auth = request.headers.get("Authorization", "")
        parts = [p for m in body.get("messages", []) if isinstance(m.get("content"), list)
                 for p in m["content"] if p.get("type") == "input_audio"]
        last = None
        if parts:
            x, _sr = sf.read(io.BytesIO(base64.b64decode(parts[-1]["input_audio"]["data"])), dtype="int16")
            last = len(x)
        self.log(n=n, mode=mode, auth_sha256=hashlib.sha256(auth.encode()).hexdigest(), model=body.get("model"),
                 modalities=body.get("modalities"), audio=body.get("audio"), seed=body.get("seed"),
                 temperature=body.get("temperature"), max_tokens=body.get("max_tokens"),
                 roles=[m.get("role") for m in body.get("messages", [])], input_audio_parts=len(parts),
                 last_input_samples=last, t=time.time())
        if mode == "close":
            request.transport.close()
            raise web.HTTPInternalServerError()  # never sent: the connection is gone
        await asyncio.sleep(s.delay_s)
        if mode == "500":
            return web.json_response({"error": {"message": "the double's 500", "type": "server_error"}}, status=500)
        transcript = f"This is the double's reply number {n + 1}." + (f" {auth}" if s.echo_auth else "")
        message: dict = {"role": "assistant", "content": None}
        if mode == "text":
            message["content"] = transcript
        else:
            fmt = (body.get("audio") or {}).get("format", "wav")
            if mode == "bad-audio":
                data = "%%% not base64 %%%"
            elif fmt == "pcm16":
                pcm = np.clip(np.round(self.reply_at(24000) * 32767), -32768, 32767).astype("<i2")
                data = base64.b64encode(pcm.tobytes()).decode()
            else:
                buf = io.BytesIO()
                sf.write(buf, self.reply, self.reply_sr, subtype="PCM_16", format="WAV")
                data = base64.b64encode(buf.getvalue()).decode()
            message["audio"] = {"id": f"audio_{n}", "data": data, "expires_at": 2000000000, "transcript": transcript}
        return web.json_response({
            "id": f"chatcmpl-{n}", "object": "chat.completion", "created": 1700000000, "model": body.get("model"),
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 7, "total_tokens": 17}})


async def main_async(port: int, script: Script, record: str | None) -> None:
    double = Double(script, record)
    app = web.Application(client_max_size=64 << 20)
    app.router.add_post("/v1/chat/completions", double.chat)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port)
    await site.start()
    print(f"PORT {site._server.sockets[0].getsockname()[1]}", flush=True)
    await asyncio.Future()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--record", default=None)
    ap.add_argument("--script", default="{}", help="JSON object of Script fields")
    args = ap.parse_args(argv)
    try:
        asyncio.run(main_async(args.port, Script(**json.loads(args.script)), args.record))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
