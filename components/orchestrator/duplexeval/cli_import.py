"""The `duplexeval import` commands: one per importer a benchmark declares (its `importers`
hook), each checking a folder and writing what passed to <home>/datasets/<name>/ (importing.py);
registered by cli.py from COMMANDS. `duplexeval eval --dataset <name>` then runs on it."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from duplexeval_common.cli import one_line_errors
from duplexeval_common.errors import DuplexEvalError


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


class ImportGroup(click.Group):
    """`duplexeval import`: its subcommands are the installed benchmarks' importers (found when
    asked for, so a broken benchmark package does not break every command)."""

    def list_commands(self, ctx):
        from .importing import importers
        try:
            return sorted([*super().list_commands(ctx), *importers()])
        except DuplexEvalError:
            return super().list_commands(ctx)

    def get_command(self, ctx, name):
        cmd = super().get_command(ctx, name)
        if cmd is not None:
            return cmd
        from .importing import importers
        found = importers().get(name)
        return _command(name, *found) if found else None


def _command(name: str, benchmark: str, imp) -> click.Command:
    params = [click.Argument(["directory"], type=click.Path(path_type=Path), metavar=imp.argument),
              click.Option(["--name"], default=imp.default_name, required=imp.default_name is None,
                           show_default=imp.default_name is not None,
                           help="The dataset's name (for eval --dataset)."),
              click.Option(["--force"], is_flag=True, help="Replace a dataset already imported under this name.")]
    for o in imp.options:
        flag = "--" + o.name.replace("_", "-")
        if o.type is bool:
            params.append(click.Option([flag, o.name], is_flag=True, default=bool(o.default), help=o.help))
        else:
            params.append(click.Option([flag, o.name], default=o.default, help=o.help, show_default=o.default is not None))

    @click.pass_obj
    @one_line_errors
    def run(store, directory, name, force, **options):
        from . import importing
        given = {o.name: o.check(benchmark, options[o.name]) for o in imp.options}
        _done(imp.run(importing, directory, name, _home(store), force, None, **given))
    return click.Command(name, params=params, callback=run,
                         help=f"{imp.summary} (benchmark {benchmark}; docs: its doc page)")


@click.group("import", cls=ImportGroup)
def import_group():
    """Import a dataset: every sample checked, the good ones written to <home>/datasets/<name>/.

    One command per importer of the installed benchmarks (`duplexeval import --help` lists
    them). A sample that fails a check is named on stderr as `<subset>/<id>: <reason>`, left out
    and listed in the manifest; the others are kept. Exit code 0 all imported, 1 some excluded,
    2 nothing written (a bad folder or option, or no sample passed). docs/datasets.md."""


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
        click.echo("no imported datasets (`duplexeval import --help` lists the importers)")


COMMANDS: list = [import_group]
