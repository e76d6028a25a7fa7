"""duplexeval runner package: a speech-in, speech-out model that answers whole turns as a full-duplex
runner (runner.py), and the half-duplex turn logic it shares with the cascade (turns.py)."""

__version__ = "0.1.0"
