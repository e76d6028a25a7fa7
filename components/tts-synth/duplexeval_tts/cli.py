"""`tts-synth` command: the dataset stage (`run`), plus `list` and `say`."""

from __future__ import annotations

from pathlib import Path

import click

from duplexeval_common.cli import component_group, one_line_errors
from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.stage import Stage

from . import __version__
from .dataset import DatasetStage
from .engines import ENGINES, load_engine, render


def make_stage(config: dict) -> Stage:
    ds = DatasetStage(config)
    return Stage("tts-synth", __version__, ds.process, finalize=ds.finalize, select=ds.select,
                 setup=ds.setup)


main = component_group("tts-synth", "Synthesizes a text-scripted dataset (fdb-mini) in the Full-Duplex-Bench layout.",
                       __version__, make_stage, ENGINES)


@main.command("say")
@click.argument("text")
@click.option("--out", required=True, type=click.Path(path_type=Path), help="WAV file to write.")
@click.option("--engine", default="piper", show_default=True)
@click.option("--voice", default=None, help="Engine voice (default: the engine's own).")
@click.option("--sample-rate", default=16000, show_default=True, type=int)
@one_line_errors
def say(text, out, engine, voice, sample_rate) -> None:
    """Synthesize one text as the dataset would (trimmed, peak 0.8)."""
    from duplexeval_common.wavio import write_wav
    if sample_rate < 8000:
        raise DuplexEvalError("--sample-rate must be at least 8000")
    audio = render(load_engine(engine, voice), text, sample_rate)
    write_wav(out, audio, sample_rate)
    click.echo(f"{out}: {len(audio) / sample_rate:.2f} s")



if __name__ == "__main__":
    main()
