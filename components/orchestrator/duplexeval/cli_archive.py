"""The `duplexeval` commands: archive, verify, rescore (docs/archives.md). Registered by cli.py from
COMMANDS; heavy imports stay inside the commands."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from duplexeval_common.cli import one_line_errors

MAX_BYTES_HELP = "Refuse an archive that expands past this many bytes (default 32 GiB)."
MAX_MEMBERS_HELP = ("Refuse an archive of more than this many members (default: 20000 and one per 32 bytes "
                    "of the file, at most 1000000).")


@click.command("archive")
@click.argument("run", default="latest")
@click.option("-o", "--output", "out", required=True, type=click.Path(path_type=Path),
              help="The archive to write: FILE.tar.gz or FILE.tar.zst (zstandard).")
@click.pass_obj
@one_line_errors
def archive_cmd(store, run, out):
    """Write RUN (default: the latest) as one deterministic, verifiable file: its records, every
    stage's outputs, configs and the VAD cache entries of its audio; never a secret."""
    from .archive import write_with_record
    path, meta = write_with_record(store, run, out)
    click.echo(f"archived run {meta['run_id']}: {path} ({meta['members'] + 2} members, {meta['bytes']} bytes "
               f"of data, {path.stat().st_size} bytes written)")


@click.command("verify")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--max-bytes", type=int, default=None, help=MAX_BYTES_HELP)
@click.option("--max-members", type=int, default=None, help=MAX_MEMBERS_HELP)
@one_line_errors
def verify_cmd(file, max_bytes, max_members):
    """Check an archive: its structure, every SHA256SUMS line, each stage.json's output hashes.

    Exit code: 0 intact, 1 a difference (one line each), 2 unreadable or unsafe."""
    from .archive import check
    n, diffs = check(file, max_bytes, max_members)
    if diffs:
        for line in diffs:
            click.echo(line)
        sys.exit(1)
    click.echo(f"ok: {n} members verified")


@click.command("rescore")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--runtime", type=click.Choice(["local", "docker"]), default="local", show_default=True)
@click.option("--aggregator-image", default=None,
              help="Rescore with this aggregator image (docker runtime), e.g. a newer scoring version.")
@click.option("-o", "--output", "out", type=click.Path(path_type=Path), default=None,
              help="Folder for the new outputs (default: a fresh runs/rescore-<run>-<hex>/).")
@click.option("--max-bytes", type=int, default=None, help=MAX_BYTES_HELP)
@click.option("--max-members", type=int, default=None, help=MAX_MEMBERS_HELP)
@click.pass_obj
@one_line_errors
def rescore_cmd(store, file, runtime, aggregator_image, out, max_bytes, max_members):
    """Verify and extract an archive, run its aggregate stage again from the archived stages (no
    network, the judge never called) and compare the outputs byte for byte with the archived ones.

    Exit code: 0 identical, 1 some file differs (its changed values are listed), 2 an error."""
    from .rescore import rescore
    res = rescore(file, store, runtime, aggregator_image, out, max_bytes, max_members)
    for line in res.lines():
        click.echo(line)
    click.echo(f"rescored outputs: {res.out}")
    if not res.same:
        sys.exit(1)


COMMANDS: list = [archive_cmd, verify_cmd, rescore_cmd]
