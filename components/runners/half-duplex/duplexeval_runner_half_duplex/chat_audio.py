"""The `chat-audio` backend: an OpenAI-compatible chat-completions endpoint with speech in and out.

One request per user turn, as OpenAI's gpt-4o-audio models and vLLM-served Qwen2.5-Omni / Qwen3-Omni
take it: the messages are the system prompt, the last `history_messages` of the conversation (the
user's earlier turns as the audio they sent, the model's as its transcripts) and the turn, a user
message whose content is one `input_audio` part (the turn's 16 kHz audio as a base64 16-bit WAV);
the request asks for `modalities: ["text", "audio"]` and `audio: {voice, format}` ("wav" or
"pcm16"). The reply's `choices[0].message.audio.data` (base64) is the speech, `.transcript` its
text. The request goes through duplexeval_common.llm's one client (the openai package): the key only
from the environment variable `api_key_env` (a local server without authentication takes none),
never written; its retries (429, 5xx, timeouts, dropped connections, `max_retries`), `timeout_s`;
a reply read up to `max_reply_bytes`. A WAV reply is resampled to `out_sr`; pcm16 is taken to be at
`out_sr` (OpenAI's pcm16 is 24 kHz mono).

A sample fails, with one line, when its request fails for good (a 500 after the retries, a server
that closes the connection, a timeout), when the endpoint answers without audio (the line gives
the start of the text it sent instead), or when the audio cannot be read.
"""

from __future__ import annotations

import base64
import binascii
import io
from typing import Callable

import numpy as np
import soundfile as sf

from duplexeval_common.secrets import scrub
from duplexeval_common.wavio import resample

from duplexeval_runner import net
from duplexeval_runner.protocol import SessionFailed
from duplexeval_runner_controls import vad

from .turns import Answer, Step, timed

OPENAI_URL = "https://api.openai.com/v1"
SHOW = 120  # characters of a server's text quoted in a failure line


def wav_b64(audio16k: np.ndarray) -> str:
    """16 kHz float32 as the base64 of a 16-bit mono WAV file (clipped, never wrapping)."""
    buf = io.BytesIO()
    pcm = np.frombuffer(net.to_pcm16(audio16k), dtype="<i2")
    sf.write(buf, pcm, vad.SR, subtype="PCM_16", format="WAV")
    return base64.b64encode(buf.getvalue()).decode("ascii")


class ChatAudio:
    parts = ("llm",)
    deterministic = False  # a served model may answer differently

    def __init__(self, runner: str, args: dict, seed: int | None):
        from duplexeval_common.llm.client import ChatClient
        self.runner = runner
        url, insecure, ca_file = net.endpoint(runner, args, default=None)
        self.key_env = args["api_key_env"]
        import os
        # no url nor $MODEL_URL: the client's $OPENAI_BASE_URL, else OpenAI's; the key's check sees
        # the endpoint the client will really call
        url = url or os.environ.get("OPENAI_BASE_URL", "").strip() or None
        if url is not None and os.environ.get(self.key_env):
            u = net.parse_url(runner, url)
            net.refuse_clear_key(runner, u.scheme, u.hostname, self.key_env)
        verify = net.ssl_context(insecure, ca_file) if (insecure or ca_file) else True
        self.client = ChatClient(base_url=url, api_key_env=self.key_env, what=f"runner {runner!r}", seed=seed,
                                 timeout_s=args["timeout_s"], max_retries=args["max_retries"], backoff_s=0.5,
                                 max_backoff_s=4.0, max_reply_bytes=args["max_reply_bytes"], verify=verify)
        self.model = args["model_name"]
        self.system_prompt = args["system_prompt"]
        self.voice, self.format = args["voice"], args["audio_format"]
        self.out_sr = int(args["out_sr"])
        self.keep = int(args["history_messages"])
        self.seed = seed
        self.temperature = args["temperature"]
        self.max_tokens = args["max_tokens"]
        self.requests = 0

    def loaders(self) -> list[tuple[str, Callable[[], None]]]:
        return []  # nothing to load: the model is served

    def warmup(self) -> None:
        pass  # a served model is warm; no request is spent on it

    def request(self, history: list[dict], content: list[dict]) -> dict:
        """The chat-completions fields of one turn (model and messages, then the rest)."""
        past = history[-self.keep:] if self.keep else []
        messages = [*([{"role": "system", "content": self.system_prompt}] if self.system_prompt else []),
                    *past, {"role": "user", "content": content}]
        extra = {"modalities": ["text", "audio"], "audio": {"voice": self.voice, "format": self.format}}
        if self.max_tokens is not None:
            extra["max_tokens"] = int(self.max_tokens)
        return {"messages": messages, "extra": extra}

    def answer(self, audio: np.ndarray, history: list[dict], log: Callable[[Step], None]) -> Answer:
        from duplexeval_common.llm.client import CallError
        content = [{"type": "input_audio", "input_audio": {"data": wav_b64(audio), "format": "wav"}}]
        req = self.request(history, content)
        self.requests += 1
        try:
            c, seconds = timed(lambda: self.client.complete(self.model, req["messages"], seed=self.seed,
                                                            temperature=self.temperature, extra=req["extra"]))
        except CallError as exc:
            raise SessionFailed(f"runner {self.runner!r}: {exc}") from None
        got = (c.detail or {}).get("audio") or {}
        if not got.get("data"):
            text = " ".join(self._scrub(c.text).split())
            said = f" (it sent text: {text[:SHOW]!r}{'...' if len(text) > SHOW else ''})" if text else ""
            raise SessionFailed(f"runner {self.runner!r}: the endpoint answered without audio{said}; "
                                f"{self.model!r} must take modalities [\"text\", \"audio\"]")
        speech = self._decode(got["data"])
        transcript = " ".join(self._scrub(got.get("transcript") or c.text or "").split())
        step = Step("llm", seconds, {"text": transcript, "audio_s": round(len(speech) / self.out_sr, 6),
                                     **({"tokens": c.tokens_out} if c.tokens_out is not None else {})})
        log(step)
        return Answer([step], user=content, text=transcript, speech=speech)

    def _decode(self, data: str) -> np.ndarray:
        try:
            raw = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError, TypeError):
            raise SessionFailed(f"runner {self.runner!r}: the endpoint's audio is not base64") from None
        if self.format == "pcm16":
            speech = net.from_pcm16(raw)
        else:
            try:
                x, sr = sf.read(io.BytesIO(raw), dtype="float32", always_2d=True)
            except (sf.LibsndfileError, RuntimeError, ValueError) as exc:
                raise SessionFailed(f"runner {self.runner!r}: the endpoint's audio is not a WAV file "
                                    f"({' '.join(str(exc).split())[:SHOW]})") from None
            speech = x.mean(axis=1).astype(np.float32)
            if sr != self.out_sr and len(speech):
                speech = resample(speech, sr, self.out_sr).astype(np.float32)
        if len(speech) == 0:
            raise SessionFailed(f"runner {self.runner!r}: the endpoint answered with empty audio")
        return np.ascontiguousarray(speech, dtype=np.float32)

    def _scrub(self, text: str) -> str:
        return scrub(text or "", self.client.secrets())  # a served reply may echo the key

    def secrets(self) -> tuple[str, ...]:
        return self.client.secrets()

    def settings(self) -> dict:
        return {"chat_audio": {"base_url": self.client.base_url, "model": self.model, "voice": self.voice,
                               "format": self.format, "out_sr": self.out_sr, "history_messages": self.keep,
                               "seed": self.seed, "temperature": self.temperature, "max_tokens": self.max_tokens,
                               "input": "input_audio wav, 16 kHz pcm16 mono"}}

    def models(self) -> dict:
        return {"chat-audio": {"model": self.model, "base_url": self.client.base_url}}
