"""duplexeval runner package: `replay`, the outputs of a Full-Duplex-Bench tree made elsewhere (runner.py)."""

__version__ = "0.1.0"
