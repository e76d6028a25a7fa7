"""`asr-aligner` command: the standard `run` stage plus `list` and `check`."""

from __future__ import annotations

from duplexeval_common.cli import build, check_kwargs, component_group
from duplexeval_common.stage import Stage

from . import __version__
from .align import transcribe_sample
from .backends import BACKENDS

DEFAULTS = {"backend": "faster-whisper", "backend_args": {}}


def make_stage(config: dict) -> Stage:
    cfg = {**DEFAULTS, **config}
    state: dict = {}
    what = f"ASR backend {cfg['backend']!r}: backend_args"

    def check(_cfg: dict) -> None:
        check_kwargs(what, BACKENDS.load(cfg["backend"]), cfg["backend_args"])

    def setup(_cfg: dict) -> None:
        state["backend"] = build(what, BACKENDS.load(cfg["backend"]), cfg["backend_args"])

    def process(ctx) -> None:
        transcribe_sample(ctx, state["backend"])

    return Stage("asr-aligner", __version__, process, setup=setup, check=check)


main = component_group("asr-aligner", "Word-timestamped transcripts of model output, in the official output.json format.",
                       __version__, make_stage, BACKENDS)
