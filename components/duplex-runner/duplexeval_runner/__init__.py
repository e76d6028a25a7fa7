"""duplex-runner: drive a spoken dialogue model over each sample's input.wav (the runner core).

The core owns I/O and time: it reads `input.wav`, resamples it to the runner's rate, feeds it
on the runner's clock (step, stream or offline: protocol.py, clocks.py) without ever handing a
runner input ahead of that clock, places the model's audio on the input's timeline, and writes
`output.wav` (exactly the input's length and rate), `events.jsonl` and `runner.json`. Each model
is a runner package (components/runners/<name>/) found through its entry point (registry.py).
"""

__version__ = "0.1.0"
