"""The runners this package registers (entry point `duplexeval.runners`; nothing heavy imported)."""

_PIP = "pip install -c constraints.txt aiohttp==3.14.5 sphn==0.2.1"
HINTS = {"aiohttp": _PIP, "sphn": _PIP}

RUNNERS = [
    {"name": "moshi-ws", "target": "duplexeval_runner_moshi_ws.runner:MoshiWSRunner",
     "summary": "client of a Moshi-protocol WebSocket server (/api/chat, Ogg-Opus 24 kHz, 80 ms frames): "
                "profiles moshi, personaplex (voice and text prompt per task), flm-audio (POST "
                "/api/settings); URL from MODEL_URL; clock lockstep (placed by frame count) or realtime",
     "requires": ["aiohttp", "sphn"], "hints": HINTS},
]
