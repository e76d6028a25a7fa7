"""asr-aligner: transcribe output.wav into word timestamps (official output.json)."""

__version__ = "0.1.0"
