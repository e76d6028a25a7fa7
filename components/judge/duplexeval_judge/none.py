"""The `none` judge: a run without ratings, recorded as such."""

from __future__ import annotations

from .judges import Rating


class NoJudge:
    name = "none"
    model = None
    official = False
    settings: dict = {}

    def rate(self, *texts, **_) -> Rating:
        return Rating(None, "not judged")
