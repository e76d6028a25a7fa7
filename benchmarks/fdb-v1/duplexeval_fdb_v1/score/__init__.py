"""Full-Duplex-Bench v1.0 scoring: the official-compatible column and the unified column.

`score_tree` (score.py) scores a tree in the official layout; the aggregate stage links its
samples into such a tree (stage.py) and calls the same function.
"""

DEFINITIONS = "fdb-v1.0-unified-4"


def score_tree(*args, **kwargs):
    """See `duplexeval_fdb_v1.score.score.score_tree` (imported lazily to keep startup fast)."""
    from .score import score_tree as _score_tree
    return _score_tree(*args, **kwargs)


__all__ = ["DEFINITIONS", "score_tree"]
