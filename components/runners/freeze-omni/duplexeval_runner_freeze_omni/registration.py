"""The runners this package registers (entry point `duplexeval.runners`; nothing heavy imported).

Install hints carry the versions of this package's requirements.txt (deps.pip_hint)."""

from duplexeval_runner.deps import pip_hint

_PIP = pip_hint(__file__, ["python-socketio", "python-engineio", "aiohttp"])
HINTS = {"socketio": _PIP, "engineio": _PIP, "aiohttp": _PIP}

RUNNERS = [
    {"name": "freeze-omni", "target": "duplexeval_runner_freeze_omni.runner:FreezeOmniRunner",
     "summary": "client of a Freeze-Omni (or VITA-1.5) server: socket.io over HTTPS, realtime; URL from "
                "MODEL_URL; frames on absolute deadlines, replies placed at arrival, stop_tts drops unplayed audio",
     "requires": ["socketio", "engineio", "aiohttp"], "hints": HINTS},
]
