"""judge: rate the reply after each user interruption."""

__version__ = "0.1.0"
