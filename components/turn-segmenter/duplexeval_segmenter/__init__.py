"""turn-segmenter: the user turns and response windows of two-channel dialogues (MTR-DuplexBench
dialogue quality, the paper's Algorithm 1), by LLM voting or by the deterministic offline rule.
Config "mode": "rounds" then cuts the dialogue-quality round samples `<dialogue>-r<kk>` from the
segmentations (duplexeval_segmenter.rounds; the MTR round sample contract of benchmarks/mtr/README.md).

Library use (the algorithm, no files):
    from duplexeval_segmenter.voting import vote, windows
    v = vote(runs)            # runs: each LLM run's [(start, end)]; v.turns, v.candidates
"""

__version__ = "0.1.0"
