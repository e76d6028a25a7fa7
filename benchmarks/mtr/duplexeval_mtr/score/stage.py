"""The aggregate stage's scorer hook for MTR-DuplexBench: check the settings, then build the
scoring tree from the round samples and score it (pipeline.score_stage)."""

from __future__ import annotations

from duplexeval_common.errors import DuplexEvalError

from .pipeline import score_stage as score  # noqa: F401  (the hook's `score`)


def check(config: dict) -> None:
    unknown = sorted(set(config) - {"benchmark"})
    if unknown:
        raise DuplexEvalError(f"aggregator: MTR-DuplexBench scoring has no setting {', '.join(unknown)} "
                              "(it takes none)")
