"""duplexeval runner package: Moshi (kyutai-labs/moshi) in process, lockstep on 80 ms frames."""

__version__ = "0.1.0"
