"""`tts-synth` command: the dataset stage (`run`), plus `list`, `voices` and `say`."""

from __future__ import annotations

from pathlib import Path

import click

from duplexeval_common import benchmarks
from duplexeval_common.cli import component_group, one_line_errors
from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.samples import Inputs, Sample
from duplexeval_common.stage import SampleContext, Stage, StageContext

from . import __version__
from .engines import ENGINES, load_engine, render, voices


class DatasetStage:
    """The dataset stage's hooks, chosen at `select` by the input folder: an imported dataset
    (imported.py) when it holds an import manifest, else the dataset builder of the benchmark the
    settings name (its `dataset` hook, given this component's Synth service: synth.py). With
    `options` (the benchmark's dataset options) each sample built or copied is then given to the
    benchmark's `variants` hook, which adds inputs made from the sample's own (e.g. a
    counterfactual twin) in either mode; the options the benchmark declares as `dataset_options`
    are its builder's own (it reads them from the settings: e.g. fdb-v2's `epochs`)."""

    def __init__(self, config: dict):
        self.config = config
        self.mode = None
        self.variants = None

    def _builder(self):
        from .synth import SYNTH
        bench = benchmarks.of_config(self.config, "tts-synth")
        return bench.hook("dataset")(self.config, SYNTH)

    def check(self, config: dict) -> None:
        from .synth import check_config
        check_config(config)
        benchmarks.of_config(config, "tts-synth")

    def select(self, inputs: Inputs, config: dict) -> list[Sample]:
        from .imported import ImportedStage, is_import
        self.mode = ImportedStage(self.config) if is_import(inputs.dirs) else self._builder()
        options = self.config.get("options")
        if options:
            bench = benchmarks.of_config(self.config, "tts-synth")
            rest = sorted(set(options) - set(bench.dataset_options))  # the builder reads its own
            if rest and not bench.has("variants"):
                raise DuplexEvalError(f"tts-synth: benchmark {bench.name} takes no dataset options "
                                      f"{', '.join(rest)} (it has no variants hook)")
            if bench.has("variants"):
                self.variants = bench.hook("variants")
        return self.mode.select(inputs, config)

    def setup(self, config: dict) -> None:
        if getattr(self.mode, "setup", None):
            self.mode.setup(config)

    def process(self, ctx: SampleContext) -> None:
        self.mode.process(ctx)
        if self.variants is not None:
            self.variants(ctx, self.config["options"])

    def finalize(self, sctx: StageContext) -> None:
        if getattr(self.mode, "finalize", None):
            self.mode.finalize(sctx)


def make_stage(config: dict) -> Stage:
    from .synth import check_config, default_workers
    jobs = check_config(config)["jobs"]
    ds = DatasetStage(config)
    # `jobs` given: that many; the default: the cores, but only where each worker process gets
    # enough samples to repay its start-up (synth.default_workers)
    workers = jobs if config.get("jobs") is not None else (lambda n: default_workers(jobs, n))
    return Stage("tts-synth", __version__, ds.process, finalize=ds.finalize, select=ds.select,
                 setup=ds.setup, check=ds.check, workers=workers)


main = component_group("tts-synth", "Synthesizes a benchmark's text-scripted dataset, or copies an imported one.",
                       __version__, make_stage, ENGINES)


@main.command("say")
@click.argument("text")
@click.option("--out", required=True, type=click.Path(path_type=Path), help="WAV file to write.")
@click.option("--engine", default="piper", show_default=True)
@click.option("--voice", default=None, help="Engine voice (default: the engine's own; `tts-synth voices`).")
@click.option("--rate", default=1.0, show_default=True, type=float,
              help="Speaking-rate multiplier (1.0 = the voice's normal speed, >1 faster), 0.5 to 2.0.")
@click.option("--sample-rate", default=16000, show_default=True, type=int)
@one_line_errors
def say(text, out, engine, voice, rate, sample_rate) -> None:
    """Synthesize one text as the dataset would (trimmed, peak 0.8)."""
    from duplexeval_common.wavio import write_wav
    if sample_rate < 8000:
        raise DuplexEvalError("--sample-rate must be at least 8000")
    audio = render(load_engine(engine, voice, rate), text, sample_rate)
    write_wav(out, audio, sample_rate)
    click.echo(f"{out}: {len(audio) / sample_rate:.2f} s")


@main.command("voices")
@click.argument("engine", required=False)
@one_line_errors
def list_voices(engine) -> None:
    """The engines and the voices each offers (one engine: its voices, one a line).

    Without ENGINE every engine is listed with its voices, or with the reason it has none
    here (a missing package, binary or weights folder, and the install hint). openai's voices
    are the API's (online).
    """
    if engine is not None:
        for v in voices(engine):  # an unknown or missing engine: one error line, exit 2
            click.echo(v)
        return
    width = max(len(n) for n in ENGINES.names()) + 2
    for name in ENGINES.names():
        try:
            line = ", ".join(voices(name)) or "(none)"
            if name == "openai":
                line += "  (online API)"
        except DuplexEvalError as exc:
            line = f"unavailable: {exc}"
        click.echo(f"{name:{width}}{line}")


if __name__ == "__main__":
    main()
