"""duplex-runner: drive a spoken dialogue model over each sample's input.wav.

The harness owns I/O: it reads `input.wav`, resamples it to the runner's
rate, calls the runner, resamples the reply back and fits it to exactly the
input's length, and writes `output.wav`, `events.jsonl` and `runner.json`.
A runner only maps user audio to model audio on the same timeline.
"""

__version__ = "0.1.0"
