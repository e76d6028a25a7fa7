"""duplexeval: evaluate full-duplex spoken dialogue models, one stage per component."""

__version__ = "0.1.0"
