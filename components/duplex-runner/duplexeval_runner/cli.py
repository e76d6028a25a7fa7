"""`duplex-runner` command: the standard `run` stage plus `list`."""

from __future__ import annotations

import click

from duplexeval_common.cli import run_command

from . import __version__
from .registry import RUNNERS, availability
from .stage import make_stage


@click.group(help="Run a spoken dialogue model over each sample's input.wav (output.wav, events.jsonl, "
                  "runner.json).")
@click.version_option(__version__)
def main() -> None:
    pass


@main.command("list")
def list_runners() -> None:
    """List the runners and whether their packages are installed."""
    for e in RUNNERS.entries():
        ok, note = availability(e.name)
        click.echo(f"{e.name:14} {e.summary}")
        if not ok:
            click.echo(f"{'':14} {note}")


main.add_command(run_command(make_stage))
