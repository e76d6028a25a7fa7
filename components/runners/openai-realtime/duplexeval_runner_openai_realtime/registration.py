"""The runners this package registers (entry point `duplexeval.runners`; nothing heavy imported)."""

_PIP = "pip install -c constraints.txt openai==3.57.0 websockets==15.0.1"
HINTS = {"openai": _PIP, "websockets": _PIP}

RUNNERS = [
    {"name": "openai-realtime", "target": "duplexeval_runner_openai_realtime.runner:OpenAIRealtimeRunner",
     "summary": "client of the OpenAI Realtime API (GA, WebSocket, openai SDK), realtime; key from OPENAI_API_KEY, "
                "endpoint MODEL_URL (default wss://api.openai.com/v1); server VAD, replies placed at arrival, "
                "barge-in drops unplayed audio and truncates the item at what played",
     "requires": ["openai", "websockets"], "hints": HINTS},
]
