"""The runners this package registers (entry point `duplexeval.runners`; nothing heavy imported).

Install hints carry the versions of this package's requirements.txt (deps.pip_hint)."""

from duplexeval_runner.deps import pip_hint

_PIP = pip_hint(__file__, ["aiohttp", "sphn"])
HINTS = {"aiohttp": _PIP, "sphn": _PIP}

RUNNERS = [
    {"name": "moshi-ws", "target": "duplexeval_runner_moshi_ws.runner:MoshiWSRunner",
     "summary": "client of a Moshi-protocol WebSocket server (/api/chat, Ogg-Opus 24 kHz, 80 ms frames): "
                "profiles moshi, personaplex (voice and text prompt per task), flm-audio (POST "
                "/api/settings); URL from MODEL_URL; clock lockstep (placed by frame count) or realtime",
     "requires": ["aiohttp", "sphn"], "hints": HINTS},
]
