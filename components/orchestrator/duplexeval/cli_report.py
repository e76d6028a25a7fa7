"""The `duplexeval` commands: report (the HTML report of a run). Registered by cli.py from COMMANDS."""

from __future__ import annotations

import time

import click

from duplexeval_common.cli import one_line_errors


@click.command("report")
@click.argument("run", default="latest")
@click.pass_obj
@one_line_errors
def report_cmd(store, run):
    """Build RUN's static HTML report (default: the latest run) and link it from its run folder.

    The report (report.html and one page per sample, every plot and audio inlined, no network)
    is cached in store/reports/<digest>/: a second call, or a cached rerun's, reuses it.
    docs/reports.md tells what it shows."""
    from . import reports
    t0 = time.monotonic()
    path, built = reports.build_and_link(store, run)
    how = f"built in {time.monotonic() - t0:.1f}s" if built else "reused from the store"
    click.echo(f"report ({how}): {path}")


COMMANDS: list = [report_cmd]
