"""The `duplexeval import` commands: the official Full-Duplex-Bench v1.0 release, or a plain
folder, checked and written to <home>/datasets/<name>/ (importers.py); registered by cli.py from
COMMANDS. `duplexeval eval --dataset <name>` then runs on it."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from duplexeval_common.cli import one_line_errors


def _home(store) -> Path:
    """The home folder the store lives in (--home, else $DUPLEXEVAL_HOME or the current folder)."""
    return store.root.parent


def _done(result) -> None:
    """The summary line; exit code 1 when some samples were excluded (the dataset was written)."""
    excluded = len(result.excluded)
    subsets = sorted({r["subset"] for r in result.manifest["samples"]})
    click.echo(f"imported {result.kept} samples in {len(subsets)} subsets ({', '.join(subsets)}) as "
               f"{result.name!r}: {result.path}")
    if excluded:
        click.echo(f"{excluded} samples excluded (named above, listed in {result.path / 'manifest.json'})")
        sys.exit(1)


@click.group("import")
def import_group():
    """Import a dataset: every sample checked, the good ones written to <home>/datasets/<name>/.

    A sample that fails a check is named on stderr as `<subset>/<id>: <reason>`, left out and
    listed in the manifest; the others are kept. Exit code 0 all imported, 1 some excluded,
    2 nothing written (a bad folder or option, or no sample passed). docs/datasets.md."""


@import_group.command("fdb-v1")
@click.argument("directory", type=click.Path(path_type=Path))
@click.option("--name", default="fdb-v1", show_default=True, help="The dataset's name (for eval --dataset).")
@click.option("--icc-gt", "icc_gt", type=click.Path(path_type=Path), default=None,
              help="The ICC ground truth (default: icc_gt_distribution.json beside the subsets).")
@click.option("--force", is_flag=True, help="Replace a dataset already imported under this name.")
@click.pass_obj
@one_line_errors
def fdb_v1_cmd(store, directory, name, icc_gt, force):
    """The official Full-Duplex-Bench v1.0 data as downloaded: DIRECTORY holds the subset folders
    (candor_pause_handling, synthetic_pause_handling, candor_turn_taking, icc_backchannel,
    synthetic_user_interruption), or holds one folder that does."""
    from .importers import import_fdb_v1
    _done(import_fdb_v1(directory, name, icc_gt, _home(store), force))


@import_group.command("folder")
@click.argument("directory", type=click.Path(path_type=Path))
@click.option("--name", required=True, help="The dataset's name (for eval --dataset).")
@click.option("--subset", default=None,
              help="Subset name for every sample; it must end with pause_handling, turn_taking or "
                   "user_interruption (default: <name>_<that suffix>, by each sample's annotation).")
@click.option("--force", is_flag=True, help="Replace a dataset already imported under this name.")
@click.pass_obj
@one_line_errors
def folder_cmd(store, directory, name, subset, force):
    """A plain folder: DIRECTORY/<id>/input.wav plus one of pause.json, turn_taking.json or
    interrupt.json (the official formats), which gives the sample's task."""
    from .importers import import_folder
    _done(import_folder(directory, name, subset, _home(store), force))


@import_group.command("mtr")
@click.argument("directory", type=click.Path(path_type=Path))
@click.option("--name", default="mtr", show_default=True, help="The dataset's name (for eval --dataset).")
@click.option("--force", is_flag=True, help="Replace a dataset already imported under this name.")
@click.pass_obj
@one_line_errors
def mtr_cmd(store, directory, name, force):
    """The MTR-DuplexBench release (Hugging Face Jeff0918/MTR-DuplexBench): DIRECTORY is its data/
    folder or holds it. Writes round samples (docs/datasets.md, "Importing MTR-DuplexBench")."""
    from .importers_mtr import import_mtr
    _done(import_mtr(directory, name, _home(store), force))


@import_group.command("list")
@click.pass_obj
@one_line_errors
def list_cmd(store):
    """The imported datasets under <home>/datasets/."""
    from .catalog import imported_datasets
    found = imported_datasets(_home(store))
    for name, (_, _, summary) in sorted(found.items()):
        click.echo(f"dataset {name:16} {summary}")
    if not found:
        click.echo("no imported datasets (duplexeval import fdb-v1 DIR, or duplexeval import folder DIR --name NAME)")


COMMANDS: list = [import_group]
