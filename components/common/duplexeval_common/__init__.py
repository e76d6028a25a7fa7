"""Shared library of the duplexeval components.

Only what every component needs lives here: schema validation, WAV and JSON
I/O, hashing, atomic writes, the stage contract and progress logging.
"""

__version__ = "0.1.0"
