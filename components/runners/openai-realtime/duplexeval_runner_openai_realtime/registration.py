"""The runners this package registers (entry point `duplexeval.runners`; nothing heavy imported).

Install hints carry the versions of this package's requirements.txt (deps.pip_hint)."""

from duplexeval_runner.deps import pip_hint

_PIP = pip_hint(__file__, ["openai", "websockets"])
HINTS = {"openai": _PIP, "websockets": _PIP}

RUNNERS = [
    {"name": "openai-realtime", "target": "duplexeval_runner_openai_realtime.runner:OpenAIRealtimeRunner",
     "summary": "client of the OpenAI Realtime API (GA, WebSocket, openai SDK), realtime; key from OPENAI_API_KEY, "
                "endpoint MODEL_URL (default wss://api.openai.com/v1); server VAD, replies placed at arrival, "
                "barge-in drops unplayed audio and truncates the item at what played",
     "requires": ["openai", "websockets"], "hints": HINTS},
]
