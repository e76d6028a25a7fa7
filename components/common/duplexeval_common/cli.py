"""The `run` command every component shares, and one-line error handling."""

from __future__ import annotations

import functools
import os
import inspect
import sys
import traceback
from pathlib import Path
from typing import Any, Callable

import click

from . import schemas
from .errors import DuplexEvalError
from .jsonio import read_json_object
from .registry import Entry, Registry
from .secrets import expand, scrub
from .settings import declared
from .stage import EXIT_CRASH, EXIT_STOPPED, Stage


def one_line_errors(fn: Callable) -> Callable:
    """Exit codes with one meaning each: a DuplexEvalError is `error: ...` on one line and exit 2
    (a stage-stopping error: bad config, missing model); any other exception is a crash: its
    traceback (secrets scrubbed) and exit 3."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except DuplexEvalError as exc:
            click.echo(scrub(f"error: {exc}"), err=True)
            sys.exit(EXIT_STOPPED)
        except (KeyboardInterrupt, SystemExit, click.exceptions.ClickException, click.exceptions.Abort):
            raise
        except BrokenPipeError:  # the reader went away (`... | head`): nothing more to say
            try:
                sys.stdout = open(os.devnull, "w")  # the interpreter's last flush goes nowhere
            except OSError:
                pass
            sys.exit(141)  # 128 + SIGPIPE, as a shell reports a command killed by it
        except Exception:  # noqa: BLE001 - a crash: keep the trace, give it its own exit code
            click.echo(scrub(traceback.format_exc()), err=True, nl=False)
            click.echo(f"error: internal error (crash); exit code {EXIT_CRASH}", err=True)
            sys.exit(EXIT_CRASH)
    return wrapper


def parse_pairs(values, what: str, decode: bool = True) -> dict:
    """{NAME: VALUE} of `NAME=VALUE` arguments (one line for one without "="); with decode, a
    value that is JSON (a number, true, a list...) is decoded, any other stays a string. A name
    given twice keeps the last value."""
    import json
    out = {}
    for v in values:
        k, sep, val = str(v).partition("=")
        if not sep or not k:
            raise DuplexEvalError(f"{what} {v!r}: expected NAME=VALUE")
        if decode:
            try:
                out[k] = json.loads(val)
                continue
            except ValueError:
                pass
        out[k] = val
    return out


def _parse_shard(value: str) -> tuple[int, int]:
    try:
        i, n = (int(x) for x in value.split("/"))
        assert 0 <= i < n
        return i, n
    except (ValueError, AssertionError):
        raise click.BadParameter("expected i/n with 0 <= i < n") from None


def load_config(path: Path | None, component: str | None = None) -> dict:
    """A stage's settings: checked against schemas/config-<component>.schema.json (unknown keys
    are one-line errors), secret references expanded from the environment."""
    config = {} if path is None else read_json_object(path, f"config {path}")
    if component:
        check_config(component, config)
    return expand(config)


def check_config(component: str, config: dict) -> None:
    """One line for the first problem of a stage config, against its schema."""
    try:
        schemas.load_schema(f"config-{component}")
    except DuplexEvalError:
        return  # a component without a config schema (tests' toy stages)
    schema = schemas.load_schema(f"config-{component}")
    known = sorted(schema.get("properties", {}))
    unknown = sorted(set(config) - set(known))
    # A schema that admits further settings leaves them to whoever reads them (a benchmark's hook)
    if unknown and schema.get("additionalProperties", True) is False:
        raise DuplexEvalError(f"unknown {component} setting(s) {', '.join(unknown)} "
                              f"(known: {', '.join(known)})")
    msg = schemas.problem(f"config-{component}", config)
    if msg:
        raise DuplexEvalError(f"{component} config: {msg.split(': ', 1)[1]}")


def check_kwargs(what: str, fn: Callable, kwargs: dict, noun: str | None = None) -> None:
    """A one-line error when `fn(**kwargs)` would not accept these arguments.

    `what` names who is configured (`ASR backend 'faster-whisper'`) and `noun` what its arguments are
    called (`backend_args`); without `noun`, `what` may end with it (`ASR backend 'x': backend_args`).
    When `fn` declares SETTINGS (duplexeval_common.settings), every name and value is checked
    against the declaration: type, range, choices (`ASR backend 'faster-whisper': backend_args
    beam_size must be an integer >= 1 (got -5)`; an unknown name lists the known ones). Then the
    names are bound to its signature (for a callable without SETTINGS the only check: unknown or
    missing arguments)."""
    who = what
    if noun is None and ": " in what:
        who, _, noun = what.rpartition(": ")
    spec = declared(fn)
    if spec is not None:
        required = {s.name: None for s in spec.settings if s.required and s.name not in kwargs}
        spec.check(who, {**kwargs, **required}, noun=noun or "arguments", named=True)
    try:
        inspect.signature(fn).bind(**kwargs)
    except TypeError as exc:
        params = [p.name for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        raise DuplexEvalError(f"{who}: {noun + ': ' if noun else ''}{exc} (known: {', '.join(params) or 'none'})") from None


def build(what: str, cls: Callable, kwargs: dict, noun: str | None = None) -> Any:
    """`cls(**kwargs)` with its arguments checked first (check_kwargs: one line instead of a TypeError
    trace, or of a value that fails every sample or silently changes the numbers)."""
    check_kwargs(what, cls, kwargs, noun)
    return cls(**kwargs)


def run_command(make_stage: Callable[[dict], Stage], component: str | None = None) -> click.Command:
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
        """Run this component as one pipeline stage.

        Exit codes: 0 every sample ok; 1 some samples failed (the stage completed, stage.json
        says which and why); 2 an error that stopped the stage (bad config, missing model);
        3 a crash."""
        if not inputs:
            raise DuplexEvalError("run needs at least one --input folder (a stage folder, or the "
                                  "dataset's source folder)")
        shard_in = _parse_shard(shard)
        config = load_config(config_path, component)
        stage = make_stage(config)
        sys.exit(stage.run(list(inputs), output, config, allow_failures, shard_in))
    return run


def check_command(make_stage: Callable[[dict], Stage], component: str | None = None) -> click.Command:
    """`check --config FILE`: validate a stage's settings (names, arguments, installed packages)
    without loading a model or reading any sample; the orchestrator calls it before running."""
    @click.command("check")
    @click.option("--config", "config_path", type=click.Path(path_type=Path), help="JSON settings of this stage.")
    @one_line_errors
    def check(config_path):
        """Check this stage's settings without running it."""
        config = load_config(config_path, component)
        stage = make_stage(config)
        if stage.check:
            stage.check(config)
        click.echo("ok")
    return check


def component_group(component: str, help: str, version: str, make_stage: Callable[[dict], Stage],
                    registry: Registry, note: Callable[[Entry], str | None] | None = None) -> click.Group:
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

    group.add_command(run_command(make_stage, component))
    group.add_command(check_command(make_stage, component))
    return group
