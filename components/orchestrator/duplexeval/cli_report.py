"""The `duplexeval` commands: report (the HTML report of a run). Registered by cli.py from COMMANDS."""

from __future__ import annotations

import time
from pathlib import Path

import click

from duplexeval_common.cli import one_line_errors


@click.command("report")
@click.argument("run", default="latest")
@click.option("--self-contained", "bundle", is_flag=True,
              help="write one HTML file with the samples' audio inlined, to send to someone")
@click.option("--samples", "samples", multiple=True, metavar="SUBSET/ID",
              help="with --self-contained: the samples it holds (repeat, or comma-separated; default every "
                   "sample of a run of at most 100)")
@click.option("-o", "--output", "output", type=click.Path(path_type=Path), default=None,
              help="with --self-contained: the file (default runs/<id>/report-self-contained.html)")
@click.pass_obj
@one_line_errors
def report_cmd(store, run, bundle, samples, output):
    """Build RUN's static HTML report (default: the latest run) and link it from its run folder.

    The report (report.html with the tables, plots and a sample list, one page per sample whose
    players link the run's audio in the store, no network) is cached in store/reports/<digest>/: a
    second call, or a cached rerun's, reuses it. With --self-contained, one file with the index and
    the chosen samples' pages, their audio inlined. docs/reports.md tells what it shows."""
    from . import reports
    keys = [k for x in samples for k in x.replace(",", " ").split()]
    if not bundle and (keys or output is not None):
        from duplexeval_common.errors import DuplexEvalError
        raise DuplexEvalError("--samples and -o/--output go with --self-contained")
    t0 = time.monotonic()
    if bundle:
        path, n = reports.self_contained(store, run, keys or None, output)
        click.echo(f"self-contained report ({n} sample page(s), {path.stat().st_size / 1e6:.1f} MB, built in "
                   f"{time.monotonic() - t0:.1f}s): {path}")
        return
    path, built = reports.build_and_link(store, run)
    how = f"built in {time.monotonic() - t0:.1f}s" if built else "reused from the store"
    click.echo(f"report ({how}): {path}")


COMMANDS: list = [report_cmd]
