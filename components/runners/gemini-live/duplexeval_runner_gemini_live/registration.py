"""The runners this package registers (entry point `duplexeval.runners`; nothing heavy imported).

Install hints carry the versions of this package's requirements.txt (deps.pip_hint)."""

from duplexeval_runner.deps import pip_hint

_PIP = pip_hint(__file__, ["google-genai", "websockets"])
HINTS = {"google.genai": _PIP, "websockets": _PIP}

RUNNERS = [
    {"name": "gemini-live", "target": "duplexeval_runner_gemini_live.runner:GeminiLiveRunner",
     "summary": "Gemini Live API client (google-genai live session, realtime): one session per sample kept "
                "across turns; key from GEMINI_API_KEY or GOOGLE_API_KEY, endpoint MODEL_URL (default the "
                "SDK's); replies placed at arrival, `interrupted` drops unplayed audio",
     "requires": ["google.genai", "websockets"], "hints": HINTS},
]
