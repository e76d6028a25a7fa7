"""duplexeval runner package: control runners whose outputs are known by construction.

silence (never speaks), fixed-latency (a fixed phrase exactly delay_s after each end of user
speech), always-talk (speaks over everything). Also the Silero VAD (vad.py) and Piper voice
(tts.py) the cascade reuses.
"""

__version__ = "0.1.0"
