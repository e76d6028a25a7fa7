"""`aggregator fdb-v1` (score a tree), `aggregator compare` (two scored runs, paired) and
`aggregator mtr` (score an MTR-DuplexBench tree)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from duplexeval_common.cli import one_line_errors

from duplexeval_common.errors import DuplexEvalError

from . import revisions
from .errors import InputError


def _check_out(tree: Path, out: Path) -> None:
    """--out must be a folder (or not exist yet) outside the tree; else one line and exit code 2."""
    from duplexeval_common.samples import inside
    if out.exists() and not out.is_dir():
        click.echo(f"error: --out {out} exists and is not a folder", err=True)
        sys.exit(2)
    if tree.is_dir() and inside(tree, out):
        click.echo(f"error: --out {out} lies inside the tree {tree}: choose a folder outside it", err=True)
        sys.exit(2)


@click.group()
def main() -> None:
    """duplexeval aggregator: Full-Duplex-Bench v1.0 scoring (official-compatible and unified)."""


@main.command("fdb-v1")
@click.option("--tree", type=click.Path(path_type=Path), required=True,
              help="Tree in the official v1.0 layout: <subset>/<id>/ with input.wav, output.wav, ...")
@click.option("--out", type=click.Path(path_type=Path), required=True,
              help="Folder for metrics.json, unified.json and unified-samples.jsonl.")
@click.option("--icc-gt", type=click.Path(path_type=Path), default=None,
              help="ICC ground-truth distribution (official icc_gt_distribution.json format).")
@click.option("--cache-dir", type=click.Path(path_type=Path), default=None,
              help="Root of the VAD probability cache (default: the user cache, "
                   "$DUPLEXEVAL_CACHE/vad, else $XDG_CACHE_HOME/duplexeval/vad, "
                   "else ~/.cache/duplexeval/vad).")
@click.option("--jobs", type=int, default=None, help="VAD worker processes (default: all cores).")
@click.option("--vad-backend", type=click.Choice(["onnx", "jit"]), default="onnx", show_default=True,
              help="Silero model file: silero_vad.onnx or the JIT model the official script loads.")
@click.option("--official-only", is_flag=True, help="Only the official column (no unified VAD).")
@click.option("--exclude-invalid", is_flag=True,
              help="Score the rest when a sample fails a load-time check: list each such sample "
                   "and its reason on stderr, make it ineligible (invalid:<code>) and record it in "
                   "unified.json. Default: the first problem stops with exit code 2.")
@click.option("--official-revision", "official_revision", default=revisions.DEFAULT, show_default=True,
              metavar="REV",
              help="Upstream Full-Duplex-Bench revision whose evaluator rules the official column "
                   f"reproduces: {revisions.known()} (docs/metrics.md).")
@click.option("--quiet", is_flag=True, help="No report and no progress.")
@one_line_errors
def fdb_v1(tree: Path, out: Path, icc_gt: Path | None, cache_dir: Path | None, jobs: int | None,
           vad_backend: str, official_only: bool, exclude_invalid: bool, official_revision: str,
           quiet: bool) -> None:
    """Score a Full-Duplex-Bench v1.0 tree."""
    from .report import invalid_lines, render
    from .score import build
    from duplexeval_common.jsonio import atomic_write_many as write_all, dumps, jsonl_text as jsonl
    _check_out(tree, out)
    if jobs is not None and jobs < 1:
        click.echo(f"error: --jobs must be at least 1, got {jobs}", err=True)
        sys.exit(2)
    try:
        revision = revisions.get(official_revision)
    except revisions.UnknownRevision as exc:
        click.echo(f"error: --official-revision: {exc}", err=True)
        sys.exit(2)
    try:
        metrics, uni, rows = build(tree, icc_gt, cache_dir, out, vad_backend, jobs, None, quiet,
                                   official_only, exclude_invalid=exclude_invalid,
                                   official_revision=revision)
    except InputError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    for line in invalid_lines(uni):  # one line per excluded sample, even with --quiet
        click.echo(line, err=True)
    write_all({out / "metrics.json": dumps(metrics), out / "unified.json": dumps(uni),
               out / "unified-samples.jsonl": jsonl(rows)})
    if not quiet:
        click.echo(render(uni), nl=False)


@main.command("compare")
@click.argument("a", type=click.Path(path_type=Path))
@click.argument("b", type=click.Path(path_type=Path))
@click.option("--json-out", type=click.Path(path_type=Path), default=None,
              help="Also write the comparison as JSON.")
@click.option("--allow-revision-mismatch", is_flag=True,
              help="Compare folders whose official columns reproduce different upstream revisions "
                   "(or an unknown one); the official differences are labelled as across revisions. "
                   "Default: refuse with exit code 2.")
@one_line_errors
def compare_cmd(a: Path, b: Path, json_out: Path | None, allow_revision_mismatch: bool) -> None:
    """Paired comparison of two scored output folders (B minus A)."""
    from .compare import compare, render
    from duplexeval_common.jsonio import atomic_write_many as write_all, dumps
    try:
        result = compare(a, b, allow_revision_mismatch=allow_revision_mismatch)
    except DuplexEvalError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    if json_out:
        write_all({json_out: dumps(result)})
    click.echo(render(result), nl=False)



@main.command("mtr")
@click.option("--tree", type=click.Path(path_type=Path), required=True,
              help="MTR scoring tree: <subset>/<dialogue_id>/ with encoding.json and transcript.json "
                   "or judgements.jsonl (docs/mtr.md).")
@click.option("--out", type=click.Path(path_type=Path), required=True,
              help="Folder for metrics.json (mtr-metrics), rounds.jsonl (mtr-round) and report.md.")
@click.option("--strict", is_flag=True,
              help="Stop at the first invalid dialogue (exit 2, nothing written). Default: list each "
                   "invalid dialogue on stderr, score the rest, record them and exit 1.")
@one_line_errors
def mtr_cmd(tree: Path, out: Path, strict: bool) -> None:
    """Score an MTR-DuplexBench tree (paper and released-code columns, per round and over rounds)."""
    from duplexeval_common.jsonio import atomic_write_many as write_all
    from .mtr.score import score_outputs
    _check_out(tree, out)
    try:
        metrics, files = score_outputs(tree, strict=strict)
    except InputError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    for bad in metrics["invalid"]:
        click.echo(f"invalid: {bad['dialogue']}: {bad['problem']}", err=True)
    write_all({out / name: text for name, text in files.items()})
    if metrics["invalid"]:
        sys.exit(1)


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
