"""tts-synth: the embedded fdb-mini dataset, synthesized from text scripts.

`synthesize(text, sample_rate)` is the one-call Piper path (deterministic
settings, speech-trimmed) that other components may reimplement; they never
import this package.
"""

from __future__ import annotations

__version__ = "0.1.0"


def synthesize(text: str, sample_rate: int = 16000):
    """Deterministic Piper speech (joe voice) as float32 mono at sample_rate.

    Peak-normalized to 0.8 and trimmed to the first and last sample above
    0.01, so the array starts and ends with speech.
    """
    from .piper_engine import synthesize as _synthesize
    return _synthesize(text, sample_rate)
