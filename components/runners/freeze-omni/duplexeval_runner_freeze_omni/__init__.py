"""duplexeval runner package: the socket.io client of a Freeze-Omni (or VITA-1.5) server."""

__version__ = "0.1.0"
