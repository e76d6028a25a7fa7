"""The runners this package registers (entry point `duplexeval.runners`; nothing heavy imported).

Install hints carry the versions of this package's requirements.txt (deps.pip_hint)."""

from duplexeval_runner.deps import pip_hint

from .vocalnet_hint import HINT as VOCALNET_HINT

HINTS = {
    "onnxruntime": pip_hint(__file__, ["onnxruntime"]),
    "silero_vad": pip_hint(__file__, ["silero-vad", "onnxruntime"]),
    "openai": pip_hint(__file__, ["openai"]),
    "omni_speech": VOCALNET_HINT,
}

RUNNERS = [
    {"name": "half-duplex", "target": "duplexeval_runner_half_duplex.runner:HalfDuplexRunner",
     "summary": "a speech-in, speech-out model that answers whole turns, made full-duplex by MTR-DuplexBench's "
                "rule: Silero VAD endpointing, reply placed at detection + compute, stops when the user speaks; "
                "backends chat-audio (an OpenAI-compatible chat endpoint with audio in and out, MODEL_URL) and "
                "vocalnet (VocalNet in process, MODEL_DIR)",
     "requires": ["onnxruntime", "silero_vad", "openai"], "hints": HINTS},
]
