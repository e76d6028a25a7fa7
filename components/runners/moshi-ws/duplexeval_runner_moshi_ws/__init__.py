"""duplexeval runner package: the WebSocket client of a Moshi-protocol server (Moshi, PersonaPlex, FLM-Audio)."""

__version__ = "0.1.0"
