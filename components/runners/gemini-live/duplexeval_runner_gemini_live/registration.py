"""The runners this package registers (entry point `duplexeval.runners`; nothing heavy imported)."""

_PIP = "pip install -c constraints.txt google-genai==3.6.1 websockets==15.0.1"
HINTS = {"google.genai": _PIP, "websockets": _PIP}

RUNNERS = [
    {"name": "gemini-live", "target": "duplexeval_runner_gemini_live.runner:GeminiLiveRunner",
     "summary": "Gemini Live API client (google-genai live session, realtime): one session per sample kept "
                "across turns; key from GEMINI_API_KEY or GOOGLE_API_KEY, endpoint MODEL_URL (default the "
                "SDK's); replies placed at arrival, `interrupted` drops unplayed audio",
     "requires": ["google.genai", "websockets"], "hints": HINTS},
]
