"""The orchestrator's own pages: the paired comparison of two runs and the leaderboard of
archives (the pieces come from duplexeval_common.html; each benchmark renders its run reports)."""
