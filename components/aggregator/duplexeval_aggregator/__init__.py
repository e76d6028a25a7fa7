"""Full-Duplex-Bench v1.0 scoring: the official-compatible column and the unified column.

`score_tree` is the entry point the pipeline stage calls; `aggregator fdb-v1` is its command.
"""

DEFINITIONS = "fdb-v1.0-unified-4"
__version__ = "0.1.0"


def score_tree(*args, **kwargs):
    """See `duplexeval_aggregator.score.score_tree` (imported lazily to keep startup fast)."""
    from .score import score_tree as _score_tree
    return _score_tree(*args, **kwargs)


__all__ = ["DEFINITIONS", "score_tree"]
