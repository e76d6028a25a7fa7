"""`duplex-runner` command: the standard `run` and `check` stage commands, `list`, and
`settings-table RUNNER [--write]` (a runner's README settings table, from its declaration)."""

from __future__ import annotations

import click

from duplexeval_common.cli import component_group, one_line_errors
from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.jsonio import atomic_write_text

from . import __version__, settings
from .registry import RUNNERS, availability
from .stage import make_stage


def _missing(entry) -> str | None:
    ok, note = availability(entry.name)
    return None if ok else note


main = component_group("duplex-runner", "Run a spoken dialogue model over each sample's input.wav (output.wav, events.jsonl, "
                       "runner.json).", __version__, make_stage, RUNNERS, note=_missing)


@main.command("settings-table")
@click.argument("runner")
@click.option("--write", is_flag=True, help="Replace the table in the runner package's README.md (source tree).")
@one_line_errors
def settings_table(runner: str, write: bool) -> None:
    """Print the Markdown settings table of RUNNER, made from its declared SETTINGS; with --write,
    put it into its package's README.md (between its settings-table markers)."""
    cls = RUNNERS.load(runner)
    if not write:
        click.echo(settings.table(cls), nl=False)
        return
    path = settings.readme_path(cls)
    if not path.is_file():
        raise DuplexEvalError(f"runner {runner!r}: no README.md at {path} (--write works in the source "
                                       "tree, components/runners/<name>/)")
    text = path.read_text(encoding="utf-8")
    new = settings.readme_update(text, cls)
    if new != text:
        atomic_write_text(path, new)
    click.echo(f"{path}: {'updated' if new != text else 'up to date'}")
