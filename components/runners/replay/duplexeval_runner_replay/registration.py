"""The runners this package registers (entry point `duplexeval.runners`; nothing heavy imported)."""

RUNNERS = [
    {"name": "replay", "target": "duplexeval_runner_replay.runner:ReplayRunner",
     "summary": "offline: each sample's output.wav from a Full-Duplex-Bench output tree made elsewhere "
                "(runner_arg tree; rate and length checked against the input)",
     "requires": [], "hints": {}},
]
