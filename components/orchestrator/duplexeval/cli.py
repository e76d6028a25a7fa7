"""The `duplexeval` command: eval, runs, show, models."""

from __future__ import annotations

import platform
import sys
import time
from pathlib import Path

import click

from duplexeval_common import schemas
from duplexeval_common.cli import one_line_errors
from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.hashing import sha256_json
from duplexeval_common.jsonio import read_json

from . import __version__, catalog
from .engine import Engine, require_ok
from .plan import fdb_pipeline
from .report import print_metrics, print_timing, summary_from_metrics
from .runtime_local import LocalRuntime
from .store import Store


def _runtime(name: str, images: dict[str, str]):
    if name == "local":
        return LocalRuntime()
    from .runtime_docker_stage import DockerRuntime
    return DockerRuntime(images)


def _parse_pairs(values: tuple[str, ...], what: str) -> dict:
    out = {}
    for v in values:
        k, sep, val = v.partition("=")
        if not sep:
            raise DuplexEvalError(f"{what} {v!r}: expected NAME=VALUE")
        try:
            import json
            out[k] = json.loads(val)
        except ValueError:
            out[k] = val
    return out


@click.group(help="Evaluate full-duplex spoken dialogue models on Full-Duplex-Bench-style tasks.")
@click.version_option(__version__)
@click.option("--home", type=click.Path(path_type=Path), default=None,
              help="Folder holding store/ and runs/ (default $DUPLEXEVAL_HOME or the current folder).")
@click.pass_context
def main(ctx, home):
    ctx.obj = Store(home.resolve() if home else None)


@main.command("eval")
@click.option("--model", default="cascade", show_default=True, help="Model to evaluate (see `duplexeval models`).")
@click.option("--dataset", default="fdb-mini", show_default=True)
@click.option("--asr", default="faster-whisper", show_default=True, help="ASR backend of asr-aligner.")
@click.option("--judge", default="embedding-relevance", show_default=True)
@click.option("--limit", type=int, default=None, help="At most N samples per subset.")
@click.option("--runtime", type=click.Choice(["local", "docker"]), default="local", show_default=True)
@click.option("--image", "images", multiple=True, help="COMPONENT=IMAGE: use this image (docker runtime).")
@click.option("--runner-arg", "runner_args", multiple=True, help="NAME=VALUE passed to the runner.")
@click.pass_obj
@one_line_errors
def eval_cmd(store: Store, model, dataset, asr, judge, limit, runtime, images, runner_args):
    """Run the whole pipeline and print the metrics."""
    t0 = time.monotonic()
    plan = fdb_pipeline(model, dataset, asr, judge, limit, _parse_pairs(runner_args, "--runner-arg"))
    rt = _runtime(runtime, _parse_pairs(images, "--image"))
    results = Engine(store, rt).run(plan)
    metrics_path = store.stage_dir(results[-1].key) / "metrics.json"
    summary = summary_from_metrics(read_json(metrics_path)) if results[-1].name == "aggregate" \
        and metrics_path.is_file() else None
    status = "failed" if results[-1].status == "failed" else \
        ("partial" if any(r.status == "partial" for r in results) else "ok")
    record = {
        "run_id": "", "command": ["duplexeval", *sys.argv[1:]], "runtime": runtime, "dataset": dataset,
        "model": model, "asr": asr, "judge": judge, "limit": limit, "status": status,
        "stages": [r.record() for r in results],
        "environment": {"duplexeval": __version__, "python": platform.python_version(),
                        "platform": platform.platform()},
        "summary": summary, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "seconds": round(time.monotonic() - t0, 2),
    }
    record["run_id"] = store.new_run_id(sha256_json([r.key for r in results]))
    schemas.validate("run", record, "run.json")
    store.write_run(record["run_id"], record)
    if summary:
        print_metrics(summary)
    print_timing(results)
    click.echo(f"\nrun {record['run_id']} ({status}) in {record['seconds']:.1f}s: "
               f"{store.runs / record['run_id'] / 'run.json'}")
    if summary:
        click.echo(f"report: {store.stage_dir(results[-1].key) / 'report.md'}")
    require_ok(results)


@main.command("runs")
@click.pass_obj
def runs_cmd(store: Store):
    """List the runs."""
    for r in store.list_runs():
        cached = sum(s["cached"] for s in r["stages"])
        click.echo(f"{r['run_id']:28} {r['model']:14} {r['dataset']:10} {r['runtime']:7} {r['status']:8} "
                   f"{r['seconds']:8.1f}s  {cached}/{len(r['stages'])} cached")


@main.command("show")
@click.argument("run", default="latest")
@click.pass_obj
@one_line_errors
def show_cmd(store: Store, run):
    """Show one run (default: the latest)."""
    rec = read_json(store.resolve_run(run) / "run.json")
    click.echo(f"run {rec['run_id']}: model {rec['model']}, dataset {rec['dataset']}, "
               f"runtime {rec['runtime']}, status {rec['status']}")
    if rec.get("summary"):
        print_metrics(rec["summary"])
    from types import SimpleNamespace
    print_timing([SimpleNamespace(**s) for s in rec["stages"]])


@main.command("models")
def models_cmd():
    """List the models and datasets that `eval` knows."""
    for name, m in sorted(catalog.MODELS.items()):
        click.echo(f"model   {name:16} {m.summary}")
    for name, (_, _, summary) in sorted(catalog.DATASETS_KNOWN.items()):
        click.echo(f"dataset {name:16} {summary}")
