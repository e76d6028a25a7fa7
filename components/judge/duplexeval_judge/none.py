"""The `none` judge: a run without ratings, recorded as such."""

from __future__ import annotations

from duplexeval_common.settings import Spec

from .judges import Rating


class NoJudge:
    name = "none"
    model = None
    official = False
    settings: dict = {}
    SETTINGS = Spec()  # it takes none

    def rate(self, *texts, **_) -> Rating:
        return Rating(None, "not judged")
