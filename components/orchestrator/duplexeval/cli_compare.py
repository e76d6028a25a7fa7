"""The `duplexeval` commands: compare (two runs, paired) and leaderboard (archives side by side).
Registered by cli.py from COMMANDS."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from duplexeval_common.cli import one_line_errors


@click.command("compare")
@click.argument("a")
@click.argument("b")
@click.option("-o", "--out", type=click.Path(path_type=Path), default=None,
              help="The HTML page (default runs/<A's run id>/compare-<B's run id>.html).")
@click.option("--option", "options", multiple=True, metavar="NAME=VALUE",
              help="One of the benchmark's comparison settings (repeatable), e.g. Full-Duplex-Bench v1.0's "
                   "allow_revision_mismatch=true (compare runs whose official columns follow different "
                   "upstream revisions).")
@click.pass_obj
@one_line_errors
def compare_cmd(store, a, b, out, options):
    """Paired comparison of two runs of one dataset, B minus A.

    A and B are each a run id (or `latest`) or an archive file (.tar.gz/.tar.zst, made by
    `duplexeval archive`; verified first), of one benchmark and dataset, which pairs them as its
    comparison says (Full-Duplex-Bench v1.0: samples paired by id over those eligible in both, the
    differences with paired-bootstrap 95% intervals and, for each yes/no metric, the exact
    McNemar test); prints it and writes it as an HTML page."""
    from .compare_runs import compare_runs
    _, text, path = compare_runs(store, a, b, out, options)
    click.echo(text.rstrip())
    click.echo(f"\nwritten: {path}")


@click.command("leaderboard")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-o", "--out", type=click.Path(path_type=Path), default=Path("leaderboard.html"),
              show_default=True, help="The HTML page.")
@one_line_errors
def leaderboard_cmd(files, out):
    """Headline metrics of archived runs side by side, from archive files only.

    Each archive is verified first; one that fails is listed as rejected with its first problem
    and not scored. Prints the table and writes it as an HTML page whose rows link to their
    archives by relative path. Exit code 1 when an archive was rejected (the page is still
    written)."""
    from .leaderboard import build, render_text, write
    board = build(list(files), out)
    path = write(board, out)
    click.echo(render_text(board).rstrip())
    click.echo(f"\nwritten: {path}")
    if board["rejected"]:
        sys.exit(1)


COMMANDS: list = [compare_cmd, leaderboard_cmd]
