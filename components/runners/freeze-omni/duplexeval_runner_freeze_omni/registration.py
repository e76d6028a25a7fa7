"""The runners this package registers (entry point `duplexeval.runners`; nothing heavy imported)."""

_PIP = "pip install -c constraints.txt python-socketio==5.18.1 python-engineio==4.15.1 aiohttp==3.14.5"
HINTS = {"socketio": _PIP, "engineio": _PIP, "aiohttp": _PIP}

RUNNERS = [
    {"name": "freeze-omni", "target": "duplexeval_runner_freeze_omni.runner:FreezeOmniRunner",
     "summary": "client of a Freeze-Omni (or VITA-1.5) server: socket.io over HTTPS, realtime; URL from "
                "MODEL_URL; frames on absolute deadlines, replies placed at arrival, stop_tts drops unplayed audio",
     "requires": ["socketio", "engineio", "aiohttp"], "hints": HINTS},
]
