"""duplexeval runner package: an OpenAI Realtime (GA) client over WebSocket with the openai SDK."""

__version__ = "0.1.0"
