"""`asr-aligner` command: the standard `run` stage plus `list`."""

from __future__ import annotations

import click

from duplexeval_common.cli import run_command
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


@click.group(help="Word-timestamped transcripts of model output, in the official output.json format.")
@click.version_option(__version__)
def main() -> None:
    pass


@main.command("list")
def list_backends() -> None:
    """List the ASR backends."""
    for e in BACKENDS.entries():
        click.echo(f"{e.name:16} {e.summary}")


main.add_command(run_command(make_stage))
