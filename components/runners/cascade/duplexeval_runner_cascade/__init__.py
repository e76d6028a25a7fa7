"""duplexeval runner package: a real half-duplex cascade, VAD -> ASR -> LLM -> TTS (cascade.py)."""

__version__ = "0.1.0"
