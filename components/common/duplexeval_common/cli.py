"""The `run` command every component shares, and one-line error handling."""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Callable

import click

from .errors import DuplexEvalError
from .jsonio import read_json_object
from .registry import Entry, Registry
from .stage import Stage


def one_line_errors(fn: Callable) -> Callable:
    """Turn a DuplexEvalError into `error: ...` and exit code 2."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except DuplexEvalError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)
    return wrapper


def _parse_shard(value: str) -> tuple[int, int]:
    try:
        i, n = (int(x) for x in value.split("/"))
        assert 0 <= i < n
        return i, n
    except (ValueError, AssertionError):
        raise click.BadParameter("expected i/n with 0 <= i < n") from None


def load_config(path: Path | None) -> dict:
    return {} if path is None else read_json_object(path, f"config {path}")


def run_command(make_stage: Callable[[dict], Stage]) -> click.Command:
    """The standard `run` subcommand for a component's click group."""
    @click.command("run")
    @click.option("--input", "inputs", multiple=True, type=click.Path(path_type=Path),
                  help="An input stage folder (repeatable; later ones take precedence).")
    @click.option("--output", required=True, type=click.Path(path_type=Path),
                  help="This stage's output folder.")
    @click.option("--config", "config_path", type=click.Path(path_type=Path),
                  help="JSON settings of this stage.")
    @click.option("--allow-failures", is_flag=True, help="Exit 0 even when some samples failed.")
    @click.option("--shard", default="0/1", help="Run only every n-th sample, starting at i (i/n).")
    @one_line_errors
    def run(inputs, output, config_path, allow_failures, shard):
        """Run this component as one pipeline stage."""
        config = load_config(config_path)
        stage = make_stage(config)
        sys.exit(stage.run(list(inputs), output, config, allow_failures, _parse_shard(shard)))
    return run


def component_group(help: str, version: str, make_stage: Callable[[dict], Stage], registry: Registry,
                    note: Callable[[Entry], str | None] | None = None) -> click.Group:
    """A component's command: `run` (the stage) and `list` (its registry), plus --version."""
    @click.group(help=help)
    @click.version_option(version)
    def group() -> None:
        pass

    @group.command("list", help=f"List the {registry.kind}s.")
    def list_entries() -> None:
        width = max((len(n) for n in registry.names()), default=0) + 2
        for e in registry.entries():
            click.echo(f"{e.name:{width}}{e.summary}")
            extra = note(e) if note else None
            if extra:
                click.echo(f"{'':{width}}{extra}")

    group.add_command(run_command(make_stage))
    return group
