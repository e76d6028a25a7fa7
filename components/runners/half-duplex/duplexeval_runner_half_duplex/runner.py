"""`half-duplex`: a speech-in, speech-out model that answers whole turns, as a full-duplex runner.

MTR-DuplexBench's rule (arXiv 2511.10262, section 3, Remark 1: the half-duplex and cascaded systems
"stop talking as soon as user speech is detected"), in the turn logic shared with the cascade
(turns.py): the Silero VAD endpointer closes the user's turn; the turn's audio (padded by
`turn_pad_ms`, at most `max_turn_s`, never past what has been heard) and the conversation so far go
to the model; its reply is placed at the detection time plus the measured compute time (`clock`
"measured") or plus `fixed_compute_s` (`clock` "fixed"), after the previous reply's compute when
that ends later (one worker); playback stops at the detection of user speech (`stop_on_user_speech`),
and a reply that never started playing leaves the history.

Backends (`backend`):

- `chat-audio` (chat_audio.py): an OpenAI-compatible chat-completions endpoint taking `input_audio`
  parts and answering with audio (OpenAI's gpt-4o-audio models; Qwen2.5-Omni / Qwen3-Omni served by
  vLLM), at `url` or $MODEL_URL (OpenAI's API when neither is set), key from the environment
  variable `api_key_env`;
- `vocalnet` (vocalnet.py): VocalNet in process with its upstream inference code (not on PyPI:
  one line says how to get it), weights from `model_dir` or $MODEL_DIR.

Multi-round samples (duplexeval_runner/rounds.py): `history` "teacher-forced". At `open` the round's
GT history texts (user lines as user messages, model lines as assistant messages) become the
conversation (an `llm_context` event records them); the history's frames are kept in the heard audio
but go through no VAD and no model; from the round's start on every frame is a `step`.
"""

from __future__ import annotations

from typing import Any

from duplexeval_runner import net
from duplexeval_runner.settings import Setting, Spec

from .turns import TurnRunner, turn_settings

BACKENDS = ("chat-audio", "vocalnet")
SYSTEM_PROMPT = ("You are a friendly voice assistant talking with a person. Reply in one or two "
                 "short spoken sentences, in plain words, without lists or formatting.")

SETTINGS = Spec(
    Setting("backend", str, "chat-audio", "the model: chat-audio (an OpenAI-compatible chat endpoint with "
            "audio in and out) or vocalnet (VocalNet in process)", choices=BACKENDS),
    *turn_settings("turn_pad_ms", "audio kept before and after a turn for the model, in ms"),
    # chat-audio
    *net.endpoint_settings("chat-audio: the endpoint's base URL, e.g. http://gpu-host:8000/v1 (vLLM); "
                           "null: $MODEL_URL, else OpenAI's API"),
    Setting("model_name", str, "gpt-4o-audio-preview", "chat-audio: the model name", nonempty=True),
    Setting("api_key_env", str, "OPENAI_API_KEY", "chat-audio: the environment variable holding the key "
            "(unset: none sent, for a local server without authentication)", nonempty=True),
    Setting("system_prompt", str, SYSTEM_PROMPT, "chat-audio: the system prompt (empty: none)"),
    Setting("voice", str, "alloy", "chat-audio: the voice asked for (the endpoint's names: alloy, ... for "
            "OpenAI; Chelsie or Ethan for Qwen2.5-Omni)", nonempty=True),
    Setting("audio_format", str, "wav", "chat-audio: the reply's audio format asked for", choices=("wav", "pcm16")),
    Setting("out_sr", int, 24000, "chat-audio: the replies' rate (pcm16 is taken to be at it; a WAV reply "
            "is resampled to it)", ge=8000, le=96000),
    Setting("history_messages", int, 20, "chat-audio: the most earlier messages sent with a turn (0: none)",
            ge=0, le=1000),
    Setting("temperature", float, None, "chat-audio: the sampling temperature sent (null: the server's)",
            ge=0, le=2),
    Setting("max_tokens", int, None, "chat-audio: max_tokens sent (null: none)", ge=1, le=1_000_000),
    Setting("timeout_s", float, 60.0, "chat-audio: seconds one request may take", gt=0, le=3600),
    Setting("max_retries", int, 2, "chat-audio: retries of a failed request (429, 5xx, timeouts, dropped "
            "connections) before the sample fails", ge=0, le=10),
    Setting("max_reply_bytes", int, 16 << 20, "chat-audio: the largest reply read, in bytes; a larger one "
            "fails the sample", ge=1024, le=1 << 30),
    # vocalnet
    Setting("model_dir", str, None, "vocalnet: the VocalNet checkpoint folder (null: $MODEL_DIR)",
            env="MODEL_DIR", path="dir"),
    Setting("cosyvoice_dir", str, None, "vocalnet: the CosyVoice2-0.5B folder (an absolute path; required)"),
    Setting("code_dir", str, None, "vocalnet: the VocalNet checkout (an absolute path; null: found on PYTHONPATH)"),
    Setting("prompt_wav", str, "omni_speech/infer/cn_prompt.wav", "vocalnet: the speaker prompt, relative "
            "to the checkout (upstream's PROMPT_SPEECH)", nonempty=True),
    Setting("vocalnet_temperature", float, 0.0, "vocalnet: sampling temperature (0: greedy, upstream's)", ge=0, le=2),
    Setting("top_p", float, 0.1, "vocalnet: nucleus sampling (upstream's)", gt=0, le=1),
    Setting("max_new_tokens", int, 512, "vocalnet: the longest reply, in tokens (upstream's)", ge=1, le=8192),
)


class HalfDuplexRunner(TurnRunner):
    name = "half-duplex"
    clock = "simulated"
    history = "teacher-forced"
    PAD = "turn_pad_ms"
    SETTINGS = SETTINGS

    def __init__(self, seed: int | None = None, **args: Any):
        resolved, _ = self.SETTINGS.resolve(self.name, args)
        self.init_turns(resolved, seed)
        if resolved["backend"] == "chat-audio":
            from .chat_audio import ChatAudio
            self.backend = ChatAudio(self.name, resolved, seed)
        else:
            from .vocalnet import VocalNet
            self.backend = VocalNet(self.name, resolved)

    def secrets(self) -> tuple[str, ...]:
        return getattr(self.backend, "secrets", lambda: ())()
