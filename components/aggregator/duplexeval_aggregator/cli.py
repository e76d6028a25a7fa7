"""`aggregator`: the aggregate stage (`run`, `check`), `score` (a tree made elsewhere) and
`compare` (two scored folders, paired), each by the benchmark named with --benchmark."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from duplexeval_common import benchmarks
from duplexeval_common.cli import one_line_errors, parse_pairs
from duplexeval_common.errors import DuplexEvalError


def _check_out(tree: Path, out: Path) -> None:
    """--out must be a folder (or not exist yet) outside the tree; else one line and exit code 2."""
    from duplexeval_common.samples import inside
    if out.exists() and not out.is_dir():
        raise DuplexEvalError(f"--out {out} exists and is not a folder")
    if tree.is_dir() and inside(tree, out):
        raise DuplexEvalError(f"--out {out} lies inside the tree {tree}: choose a folder outside it")


def _flags(declared, extra: list[str]) -> dict:
    """The hook's settings given as flags after the command's own (`--cache-dir DIR`, `--jobs 1`,
    `--exclude-invalid`): a declared boolean setting is a flag, any other takes the next word."""
    known = {o.name: o for o in declared}
    out, i = {}, 0
    while i < len(extra):
        word = extra[i]
        name = word[2:].replace("-", "_") if word.startswith("--") else None
        if name is None or name not in known:
            raise DuplexEvalError(f"unknown option {word!r} (the benchmark's settings: "
                                  f"{', '.join('--' + n.replace('_', '-') for n in sorted(known)) or 'none'})")
        if known[name].type is bool:
            out[name], i = True, i + 1
        elif i + 1 < len(extra):
            out[name], i = extra[i + 1], i + 2
        else:
            raise DuplexEvalError(f"option {word} needs a value")
    return out


def _options(declared, given: tuple[str, ...], bench: str, extra: list[str] = ()) -> dict:
    """The hook's settings from `--option NAME=VALUE` and the flags after the command's own
    (each checked against its declaration)."""
    pairs = {**parse_pairs(given, "--option"), **_flags(declared, list(extra))}
    known = {o.name: o for o in declared}
    unknown = sorted(set(pairs) - set(known))
    if unknown:
        raise DuplexEvalError(f"--option {unknown[0]}: benchmark {bench} has no such setting here "
                              f"(known: {', '.join(sorted(known)) or 'none'})")
    return {n: o.check(bench, pairs[n]) if n in pairs else o.default for n, o in known.items()}


BENCHMARK_HELP = "The benchmark whose scorer runs (`duplexeval benchmarks` lists them; default: the default one)."


def _benchmark(name: str | None):
    return benchmarks.get(name) if name else benchmarks.default()


@click.group()
def main() -> None:
    """duplexeval aggregator: scores runs and trees by each benchmark's own rules."""


EXTRA = {"ignore_unknown_options": True, "allow_extra_args": True}


@main.command("score", context_settings=EXTRA)
@click.option("--benchmark", default=None, help=BENCHMARK_HELP)
@click.option("--tree", type=click.Path(path_type=Path), required=True,
              help="The tree to score, in the benchmark's layout (its doc page describes it).")
@click.option("--out", type=click.Path(path_type=Path), required=True, help="Folder for the scores.")
@click.option("--task", "tasks", multiple=True, metavar="SUBSET=TASK",
              help="The task of a subset folder the tree's manifest and the official names do not give "
                   "(repeatable), e.g. --task pause_handling_example=pause_handling.")
@click.option("--option", "options", multiple=True, metavar="NAME=VALUE",
              help="One of the benchmark's scoring settings (repeatable; its doc page lists them); each may "
                   "also be given as a flag, e.g. --exclude-invalid or --cache-dir DIR.")
@click.pass_context
@one_line_errors
def score_cmd(ctx, benchmark: str, tree: Path, out: Path, tasks: tuple[str, ...], options: tuple[str, ...]) -> None:
    """Score a tree made elsewhere (`make score BENCHMARK=... TREE=... OUT=...`)."""
    bench = _benchmark(benchmark)
    hook = bench.hook("score_tree")
    _check_out(tree, out)
    opts = _options(getattr(hook, "OPTIONS", ()), options, bench.name, ctx.args)
    sys.exit(hook.score_tree(tree, out, parse_pairs(tasks, "--task", decode=False), opts))


@main.command("compare", context_settings=EXTRA)
@click.option("--benchmark", default=None, help=BENCHMARK_HELP)
@click.argument("a", type=click.Path(path_type=Path))
@click.argument("b", type=click.Path(path_type=Path))
@click.option("--json-out", type=click.Path(path_type=Path), default=None,
              help="Also write the comparison as JSON.")
@click.option("--option", "options", multiple=True, metavar="NAME=VALUE",
              help="One of the benchmark's comparison settings (repeatable); or as a flag, e.g. "
                   "--allow-revision-mismatch.")
@click.pass_context
@one_line_errors
def compare_cmd(ctx, benchmark: str, a: Path, b: Path, json_out: Path | None, options: tuple[str, ...]) -> None:
    """Paired comparison of two scored folders (B minus A), by the benchmark's rules."""
    from duplexeval_common.jsonio import atomic_write_many as write_all, dumps
    bench = _benchmark(benchmark)
    hook = bench.hook("compare")
    result = hook.compare(a, b, **_options(getattr(hook, "OPTIONS", ()), options, bench.name, ctx.args))
    if json_out:
        write_all({json_out: dumps(result)})
    click.echo(hook.render(result), nl=False)


def _pipeline_stage():
    # `aggregator run`: the pipeline stage (stage contract of duplexeval_common).
    from duplexeval_common.cli import run_command
    from .pipeline_stage import make_stage
    return run_command(make_stage, "aggregator")


def _check_command():
    # `aggregator check`: validate the pipeline stage's settings (the orchestrator calls it first).
    from duplexeval_common.cli import check_command
    from .pipeline_stage import make_stage
    return check_command(make_stage, "aggregator")


main.add_command(_pipeline_stage())
main.add_command(_check_command())

if __name__ == "__main__":
    main()
