"""The `duplexeval` command: eval, runs, show, models."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import click

from duplexeval_common import schemas
from duplexeval_common.cache import cache_for_run
from duplexeval_common.cli import one_line_errors
from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.jsonio import read_json
from duplexeval_common.secrets import redact, scrub

from . import __version__, catalog, provenance
from . import benchmarks
from .engine import Engine, missing_samples
from .plan import Planner, plan_of
from .report import print_missing, print_report, print_timing
from .runtime import Limits, exit_code, interrupt_on_signals, interrupted_by
from .runtime_local import LocalRuntime
from .store import Store


def _runtime(name: str, images: dict[str, str]):
    if name == "local":
        return LocalRuntime()
    from .runtime_docker_stage import DockerRuntime
    return DockerRuntime(images)


def _parse_pairs(values: tuple[str, ...], what: str) -> dict:
    from duplexeval_common.cli import parse_pairs
    return parse_pairs(values, what)


@click.group(help="Evaluate full-duplex spoken dialogue models on the installed benchmarks (`duplexeval benchmarks`).")
@click.version_option(__version__)
@click.option("--home", type=click.Path(path_type=Path), default=None,
              help="Folder holding store/ and runs/ (default $DUPLEXEVAL_HOME or the current folder).")
@click.pass_context
def main(ctx, home):
    if home:  # one home for everything that looks it up: the store, the runs, imported datasets
        os.environ["DUPLEXEVAL_HOME"] = str(home.resolve())
    ctx.obj = Store(home.resolve() if home else None)


@main.command("eval")
@click.option("--benchmark", default=None,
              help="A benchmark of `duplexeval benchmarks` (default: the dataset's, else the default benchmark).")
@click.option("--model", default="cascade", show_default=True, help="Model to evaluate (see `duplexeval models`).")
@click.option("--dataset", default=None, help="Dataset (default: the benchmark's).")
@click.option("--asr", default="faster-whisper", show_default=True, help="ASR backend of asr-aligner.")
@click.option("--judge", default=None, help="Judge (default: the benchmark's).")
@click.option("--limit", type=int, default=None,
              help="At most N samples per subset (N >= 1); where samples belong together (the rounds of a "
                   "dialogue), N groups with all their samples.")
@click.option("--subset", "subsets", multiple=True,
              help="Only this subset of the dataset (repeatable; default: every subset).")
@click.option("--runtime", type=click.Choice(["local", "docker"]), default="local", show_default=True)
@click.option("--image", "images", multiple=True, help="COMPONENT=IMAGE: use this image (docker runtime).")
@click.option("--runner-arg", "runner_args", multiple=True, help="NAME=VALUE passed to the runner.")
@click.option("--runner-args", "runner_args_line", default=None,
              help="Several NAME=VALUE in one string, split as a shell would: 'concurrency=4 "
                   "system_prompt=\"You are brief.\"' (make's RUNNER_ARGS).")
@click.option("--asr-arg", "asr_args", multiple=True, help="NAME=VALUE passed to the ASR backend.")
@click.option("--judge-arg", "judge_args", multiple=True, help="NAME=VALUE passed to the judge.")
@click.option("--segmenter-arg", "segmenter_args", multiple=True,
              help="NAME=VALUE passed to the turn-segmenter (benchmarks with a segment stage), e.g. "
                   "llm='{\"backend\": \"openai\", \"args\": {\"model\": \"gpt-4o\"}}'.")
@click.option("--benchmark-arg", "benchmark_args", multiple=True,
              help="NAME=VALUE: one of the benchmark's own settings (`duplexeval benchmarks` lists them), e.g. "
                   "official_revision=bb59575.")
@click.option("--stage-timeout", type=float, default=None,
              help="Seconds a stage may run before it is killed (default 21600).")
@click.option("--memory-gb", type=float, default=None,
              help="Memory a stage may use, GiB (default 3/4 of the machine's).")
@click.option("--cpus", type=float, default=None, help="CPUs a stage may use (default all).")
@click.option("--executor", type=click.Choice(["local", "slurm"]), default="local", show_default=True,
              help="Where stages run: this machine, or Slurm job arrays (docs/scale.md).")
@click.option("--slurm-shards", "slurm_shards", multiple=True,
              help="N or STAGE=N: shards per stage under slurm (default 2; the aggregate stage is one job).")
@click.option("--slurm-partition", "slurm_partition", multiple=True, help="PARTITION or STAGE=PARTITION.")
@click.option("--slurm-time", "slurm_time", multiple=True,
              help="TIME or STAGE=TIME: sbatch --time (default: the stage timeout).")
@click.option("--slurm-gpus-runner", type=int, default=0, show_default=True,
              help="GPUs per runner shard (sbatch --gres=gpu:N).")
@click.option("--slurm-sbatch-arg", "slurm_sbatch_args", multiple=True,
              help="An extra sbatch option, e.g. --slurm-sbatch-arg=--mem=8G, or STAGE=OPTION (repeatable).")
@click.option("--slurm-retries", type=int, default=2, show_default=True,
              help="Times a cancelled, preempted or crashed shard is resubmitted.")
@click.option("--html/--no-html", "html", default=True, show_default=True, envvar="DUPLEXEVAL_HTML",
              help="Build the HTML report at the end ($DUPLEXEVAL_HTML=0: --no-html). Without it the run "
                   "folder links metrics.json and report.md, and `duplexeval report RUN` builds the HTML later.")
@click.pass_obj
@one_line_errors
def eval_cmd(store: Store, benchmark, model, dataset, asr, judge, limit, subsets, runtime, images, runner_args,
             runner_args_line, asr_args, judge_args, segmenter_args, benchmark_args, stage_timeout, memory_gb, cpus,
             executor="local", slurm_shards=(),
             slurm_partition=(), slurm_time=(), slurm_gpus_runner=0, slurm_sbatch_args=(), slurm_retries=2,
             html=True):
    """Run the whole pipeline and print the metrics.

    Exit code: 0 when every sample is in the metrics, 1 when the run is partial (the missing
    samples and why are listed), 2 when a stage failed or a setting is wrong, 3 on a crash."""
    t0 = time.monotonic()
    limits = Limits.make(stage_timeout, memory_gb, cpus)
    if runner_args_line:
        import shlex
        try:
            runner_args = (*shlex.split(runner_args_line), *runner_args)
        except ValueError as exc:
            raise DuplexEvalError(f"--runner-args {runner_args_line!r}: {exc}") from None
    bench, dataset = benchmarks.resolve(benchmark, dataset)
    judge = judge or bench.default_judge
    planner = Planner(bench.name, model, dataset, asr, judge, limit, list(subsets) or None,
                      _parse_pairs(runner_args, "--runner-arg"), _parse_pairs(asr_args, "--asr-arg"),
                      _parse_pairs(judge_args, "--judge-arg"), _parse_pairs(segmenter_args, "--segmenter-arg"))
    plan = plan_of(bench, planner, _parse_pairs(benchmark_args, "--benchmark-arg"))
    if images and runtime != "docker":
        raise DuplexEvalError("--image applies to the docker runtime: add --runtime docker")
    rt = _runtime(runtime, _parse_pairs(images, "--image"))
    executor_record = {"name": "local"}
    if executor == "slurm":
        from .executor_slurm import SlurmExecutor, settings_from_options
        settings = settings_from_options(plan, slurm_shards, slurm_partition, slurm_time, slurm_gpus_runner,
                                         slurm_sbatch_args, slurm_retries)
        rt = SlurmExecutor(rt, settings)
        executor_record = settings.record()
    run_id = store.new_run()
    run_dir = store.run_dir(run_id)
    pk_sha, pk_list = provenance.packages()
    store.write_packages(run_id, pk_list)
    record = {
        "run_id": run_id, "command": [scrub(a) for a in ["duplexeval", *sys.argv[1:]]], "runtime": runtime,
        "benchmark": bench.name, "dataset": dataset, "model": model, "asr": asr, "judge": judge, "limit": limit, "status": "running",
        "stages": [], "limits": limits.record(), "environment": {**provenance.environment(),
                                                              "duplexeval": __version__},
        "summary": None, "missing": {}, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "seconds": 0.0, "executor": executor_record,
    }
    store.write_run(run_id, redact(record), latest=False)
    cache, note = cache_for_run()
    if note:
        click.echo(note, err=True)
    engine = Engine(store, rt, limits, run_dir, cache)
    try:
        with interrupt_on_signals():  # SIGTERM and SIGHUP as Ctrl-C: the stages stopped, run.json interrupted
            engine.check(plan)
            results = engine.run(plan)
    except DuplexEvalError as exc:
        record.update(status="failed", reason=str(exc), seconds=round(time.monotonic() - t0, 2))
        store.write_run(run_id, redact(record))
        raise
    except KeyboardInterrupt as exc:
        record.update(status="interrupted", reason=f"interrupted {interrupted_by(exc)} (the stages it completed "
                      "stay in the store; `eval` again resumes)", seconds=round(time.monotonic() - t0, 2))
        store.write_run(run_id, redact(record), latest=False)
        click.echo("\ninterrupted: the next `duplexeval eval` resumes from the store", err=True)
        sys.exit(exit_code(exc))
    last = results[-1]
    agg_dir = store.stage_dir(last.key)
    metrics_path = agg_dir / "metrics.json"
    summary = bench.hook("summary")(read_json(metrics_path)) if last.name == "aggregate" \
        and last.status != "failed" and metrics_path.is_file() else None
    missing = missing_samples(results)
    if summary is not None:
        missing.update({k: v for k, v in bench.hook("missing")(agg_dir).items() if k not in missing})
    failed = [r for r in results if r.status == "failed"]
    status = "failed" if failed or len(results) < len(plan) else ("partial" if missing else "ok")
    record["environment"]["machine"]["load_average_end"] = provenance.load_average()
    record["judge_usage"] = judge_usage(store, results)
    record.update(status=status, stages=[r.record() for r in results], summary=summary, missing=missing,
                  seconds=round(time.monotonic() - t0, 2))
    if failed:
        record["reason"] = f"stage {failed[0].name}: {failed[0].reason}"
    record = redact(record)
    schemas.validate("run", record, "run.json")
    store.write_run(run_id, record)
    if summary is not None:
        print_report(agg_dir / "report.md")
        if judge in bench.judge_notes:
            click.echo(bench.judge_notes[judge])
    print_timing(results)
    print_missing(missing)
    click.echo(f"\nrun {run_id} ({status}) in {record['seconds']:.1f}s: {store.runs / run_id / 'run.json'}")
    if summary is not None:
        click.echo(f"report: {agg_dir / 'report.md'}")
        _html_report(store, run_id, record, build=html)
    if failed:
        raise DuplexEvalError(f"stage {failed[0].name} ({failed[0].component}) failed: {failed[0].reason}")
    if status == "partial":
        sys.exit(1)


def _html_report(store: Store, run_id: str, record: dict, build: bool = True) -> None:
    """The run folder's links (metrics.json, report.md) and the HTML report, built or found in
    the store (reports.py); a report that cannot be built is named, and the run stands. Not
    `build` (--no-html): the links alone."""
    from . import reports
    reports.link_aggregate(store, run_id, record)
    if not build:
        click.echo(f"html: not built (--no-html); `duplexeval report {run_id}` builds it")
        return
    try:
        folder, _ = reports.ensure(store, record)
        click.echo(f"html: {reports.link_report(store, run_id, folder)}")
    except (DuplexEvalError, OSError, ValueError, RuntimeError) as exc:
        click.echo(scrub(f"html: not built ({exc}); `duplexeval report {run_id}` tries again"), err=True)


@main.command("runs")
@click.pass_obj
def runs_cmd(store: Store):
    """List the runs (a run folder whose run.json cannot be read is named, not fatal)."""
    for r in store.list_runs():
        if "unreadable" in r:
            click.echo(f"{r['run_id']:28} (unreadable run.json: {r['unreadable']})")
            continue
        cached = sum(s["cached"] for s in r["stages"])
        click.echo(f"{r['run_id']:28} {r['model']:14} {r['dataset']:10} {r['runtime']:7} {r['status']:8} "
                   f"{r['seconds']:8.1f}s  {cached}/{len(r['stages'])} cached")


@main.command("show")
@click.argument("run", default="latest")
@click.pass_obj
@one_line_errors
def show_cmd(store: Store, run):
    """Show one run (default: the latest)."""
    rec = store.read_run(run)
    click.echo(f"run {rec['run_id']}: model {rec['model']}, dataset {rec['dataset']}, "
               f"runtime {rec['runtime']}, status {rec['status']}")
    stages = rec.get("stages", [])
    if stages and stages[-1]["name"] == "aggregate":
        print_report(store.stage_dir(stages[-1]["key"]) / "report.md")
    from types import SimpleNamespace
    print_timing([SimpleNamespace(**s) for s in stages])
    print_missing(rec.get("missing") or {})
    if rec.get("reason"):
        click.echo(f"\nreason: {rec['reason']}")
    from .reports import paths
    click.echo("")
    for name, path in paths(store, rec).items():
        none = f"(not built: duplexeval report {rec['run_id']})" if name == "report.html" else "(none)"
        click.echo(f"{name:12} {path if path is not None else none}")


@main.command("models")
def models_cmd():
    """List the models and datasets that `eval` knows."""
    for name, m in sorted(catalog.MODELS.items()):
        click.echo(f"model   {name:16} {m.summary} [{m.component}]")
    for name, (_, _, summary) in sorted(catalog.datasets().items()):
        owner = benchmarks.of_dataset(name)
        click.echo(f"dataset {name:16} {summary}" + (f" [{owner}]" if owner else ""))


@main.command("benchmarks")
@one_line_errors
def benchmarks_cmd():
    """List the benchmarks: their datasets, tasks, default judge, settings and stages."""
    for b in benchmarks.all_benchmarks():
        planner = Planner(b.name, "silence", b.default_dataset, "faster-whisper", b.default_judge, environ={})
        stages = " -> ".join(s.name for s in plan_of(b, planner)) if b.has("plan") else "(no plan hook: not runnable)"
        default = " (the default)" if b is benchmarks.default() else ""
        click.echo(f"{b.name}{default}: {b.title} ({b.folder})")
        click.echo(f"  datasets {', '.join(d.name for d in b.datasets)} (default {b.default_dataset}); "
                   f"tasks {', '.join(t.name for t in b.tasks)}")
        others = [j for j in b.judges if j != b.default_judge]
        click.echo(f"  judge {b.default_judge}" + (f" (also {', '.join(others)})" if others else ""))
        if b.has("prompts"):
            prompts = b.hook("prompts")
            click.echo("  prompts " + ", ".join(f"{n}@v{prompts.get(n).version} ({prompts.get(n).sha256[:12]})"
                                                for n in prompts.names()))
        for o in b.options:
            click.echo(f"  --benchmark-arg {o.name}=...  {o.help}")
        click.echo(f"  stages {stages}; `make score BENCHMARK={b.name} TREE=... OUT=...` scores a tree made elsewhere")


def judge_usage(store: Store, results: list) -> dict | None:
    """Tokens, judgements and cost of the run's judge (from its judge.json), and the API calls and
    cache hits of the invocation that made them (its stage.json)."""
    stage = next((r for r in results if r.name == "judge" and r.status != "failed"), None)
    if stage is None:
        return None
    d = store.stage_dir(stage.key)
    summary = read_json(d / "judge.json") if (d / "judge.json").is_file() else {}
    rec = store.record(stage.key) or {}
    return {"judge": summary.get("judge"), "model": summary.get("model"), **(summary.get("usage") or {}),
            "invocation": (rec.get("invocation_notes") or {}).get("judge_usage"), "cached": stage.cached}


def _csv(value: str | None, cast, what: str) -> list:
    if not value:
        return []
    try:
        return [cast(v.strip()) for v in value.split(",") if v.strip()]
    except ValueError:
        raise DuplexEvalError(f"{what}: expected a comma-separated list, got {value!r}") from None


@main.command("sensitivity")
@click.argument("run")
@click.option("--asr", "asrs", required=True, help="Comma-separated ASR backends, e.g. faster-whisper,stable-ts.")
@click.option("--vad-threshold", default=None, help="Comma-separated VAD thresholds (e.g. 0.3,0.5,0.7).")
@click.option("--vad-min-silence-ms", default=None, help="Comma-separated VAD minimum silences in ms.")
@click.option("--against", default=None, help="A second run: does the ranking of the two runs change?")
@click.pass_obj
@one_line_errors
def sensitivity_cmd(store: Store, run, asrs, vad_threshold, vad_min_silence_ms, against):
    """Re-transcribe and re-score RUN under each ASR setting; how each headline metric moves.

    The run's dataset and runner stages are reused (the model is not run again), and so is every
    stage already in the store. Writes runs/<RUN>/sensitivity.json and sensitivity.md."""
    from . import sensitivity as sens
    settings = sens.grid(_csv(asrs, str, "--asr"), _csv(vad_threshold, float, "--vad-threshold"),
                         _csv(vad_min_silence_ms, int, "--vad-min-silence-ms"))
    if not settings:
        raise DuplexEvalError("--asr names no backend")
    run_dir = store.resolve_run(run)
    rec = read_json(run_dir / "run.json")
    cache, note = cache_for_run()
    if note:
        click.echo(note, err=True)
    engine = Engine(store, _runtime(rec["runtime"], {}), Limits(), run_dir / "sensitivity", cache)
    result = sens.rescore(engine, store, run, settings)
    doc = {"settings": settings, "result": result, "spread": sens.spread(result)}
    ranks = None
    if against:
        other = sens.rescore(engine, store, against, settings)
        ranks = sens.ranking(result, other)
        doc.update(against=other, ranking=ranks)
    text = sens.render(result, doc["spread"], ranks)
    path = sens.write(store, run, doc, text)
    click.echo("")
    click.echo(text.rstrip())
    click.echo(f"\nwritten: {path}")


@main.command("capacity")
@click.option("--model", required=True, help="A realtime model of `duplexeval models` (e.g. freeze-omni).")
@click.option("--dataset", default=None, help="The dataset (default: the default benchmark's, fdb-mini).")
@click.option("--subset", default=None,
              help="The subset to run (default: the dataset's first of a task with an official latency: turn-taking).")
@click.option("--samples", type=int, default=8, show_default=True,
              help="K samples of the subset, the same at every level (level N runs K x ceil(N / K) sessions).")
@click.option("--levels", default=None, help="Comma-separated levels, rising from 1 (default 1, 2, 4, ... --max-level).")
@click.option("--max-level", type=int, default=16, show_default=True, help="The last level of the default ramp.")
@click.option("--latency-tolerance", type=float, default=0.1, show_default=True,
              help="Seconds a level's official latency may differ from level 1's (absolute).")
@click.option("--asr", default="faster-whisper", show_default=True, help="ASR backend of asr-aligner.")
@click.option("--asr-arg", "asr_args", multiple=True, help="NAME=VALUE passed to the ASR backend.")
@click.option("--judge", default="none", show_default=True, help="Judge (turn-taking needs none).")
@click.option("--runner-arg", "runner_args", multiple=True, help="NAME=VALUE passed to the runner.")
@click.option("--runtime", type=click.Choice(["local", "docker"]), default="local", show_default=True)
@click.option("--image", "images", multiple=True, help="COMPONENT=IMAGE: use this image (docker runtime).")
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="An empty or new folder (default <home>/capacity/<id>/).")
@click.pass_obj
@one_line_errors
def capacity_cmd(store: Store, model, dataset, subset, samples, levels, max_level, latency_tolerance, asr,
                 asr_args, judge, runner_args, runtime, images, out):
    """Ramp concurrent realtime sessions against one model server; per level the send drift, failed and
    ineligible sessions, the official latency and the wall time, and the highest level that holds.

    Writes capacity.json, capacity.md and capacity.html (docs/runners.md, Concurrency). Exit code: 0
    when every level ran, 1 when a level had failed sessions (the sweep stopped there), 2 on a bad
    setting or a model that is not realtime."""
    from . import capacity
    lv = capacity.parse_levels(levels, max_level)
    if images and runtime != "docker":
        raise DuplexEvalError("--image applies to the docker runtime: add --runtime docker")
    cache, note = cache_for_run()
    if note:
        click.echo(note, err=True)
    try:
        with interrupt_on_signals():  # SIGTERM and SIGHUP as Ctrl-C: the level's stages are stopped
            doc, folder, code = capacity.sweep(
                store, _runtime(runtime, _parse_pairs(images, "--image")), Limits(), cache, model=model,
                dataset=dataset, subset=subset, levels=lv, samples=samples, asr=asr, judge=judge,
                runner_args=_parse_pairs(runner_args, "--runner-arg"), asr_args=_parse_pairs(asr_args, "--asr-arg"),
                tolerance_s=latency_tolerance, runtime_name=runtime, out=out)
    except KeyboardInterrupt as exc:
        click.echo(f"\ninterrupted {interrupted_by(exc)}: the sweep wrote no capacity.json", err=True)
        sys.exit(exit_code(exc))
    text, _ = capacity.write(folder, doc)
    click.echo("")
    click.echo(text.rstrip())
    click.echo(f"\nwritten: {folder / 'capacity.json'}\nhtml: {folder / 'capacity.html'}")
    if code:
        click.echo(scrub(f"error: capacity stopped at level {doc['stopped']['level']}: {doc['stopped']['reason']}; "
                         f"best level {doc['best_level'] if doc['best_level'] is not None else 'none'}"), err=True)
        sys.exit(code)


# Commands defined in modules of their own (each lists them in COMMANDS; heavy imports stay inside
# the commands): the HTML report, archives and their checks, comparisons.
def _register() -> None:
    from . import cli_archive, cli_compare, cli_import, cli_report
    for module in (cli_report, cli_archive, cli_compare, cli_import):
        for command in module.COMMANDS:
            if command.name in main.commands:
                raise RuntimeError(f"duplexeval: command {command.name!r} defined twice")
            main.add_command(command)


_register()
