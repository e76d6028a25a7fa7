"""`asr-aligner` command: the standard `run` stage plus `list`."""

from __future__ import annotations

from duplexeval_common.cli import component_group
from duplexeval_common.stage import Stage

from . import __version__
from .align import transcribe_sample
from .backends import BACKENDS

DEFAULTS = {"backend": "faster-whisper", "backend_args": {}}


def make_stage(config: dict) -> Stage:
    cfg = {**DEFAULTS, **config}
    state: dict = {}

    def setup(_cfg: dict) -> None:
        state["backend"] = BACKENDS.load(cfg["backend"])(**cfg["backend_args"])

    def process(ctx) -> None:
        transcribe_sample(ctx, state["backend"])

    return Stage("asr-aligner", __version__, process, setup=setup)


main = component_group("Word-timestamped transcripts of model output, in the official output.json format.",
                       __version__, make_stage, BACKENDS)
