"""`asr-aligner` command: the standard `run` stage plus `list`, `check` and `convert-ct2`.

Settings (schemas/config-asr-aligner.schema.json): backend and backend_args (checked against
the backend class's SETTINGS: names, types and ranges, before anything loads), channel ("mix",
"left" or "right": what a stereo output.wav gives the ASR and the VAD), vad (Silero get_speech_timestamps settings for vad.json), benchmark
(whose `asr` hook says what of each sample is transcribed and from where: align.py) and source:
"output" (default: each sample's output.wav -> output.json, transcript.json, vad.json, or the
benchmark's targets) or "dialogue" (the samples with a stereo dialogue.wav -> user.json and
model.json, see dialogue.py).
"""

from __future__ import annotations

from pathlib import Path

import click

from duplexeval_common import benchmarks
from duplexeval_common.cli import build, check_kwargs, component_group, one_line_errors
from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.stage import Stage

from . import __version__
from .align import check_channel, transcribe_sample
from .backends import BACKENDS
from .dialogue import dialogue_samples, transcribe_dialogue
from .vad import SileroVad, settings as vad_settings

DEFAULTS = {"backend": "faster-whisper", "backend_args": {}, "channel": "mix", "vad": {}, "source": "output"}
SOURCES = ("output", "dialogue")


def check_source(config: dict, backend_cls) -> None:
    source = config.get("source", DEFAULTS["source"])
    if source not in SOURCES:
        raise DuplexEvalError(f"asr-aligner: source must be one of {', '.join(SOURCES)}, not {source!r}")
    if source != "dialogue":
        return
    if getattr(backend_cls, "from_inputs", False):
        raise DuplexEvalError(f"asr-aligner: backend {config.get('backend')!r} passes imported transcripts "
                              "through and cannot transcribe the channels of dialogue.wav (source dialogue)")
    if "channel" in config:
        raise DuplexEvalError("asr-aligner: channel does not apply to source dialogue (both channels are "
                              "transcribed: left the user, right the model)")


def make_stage(config: dict) -> Stage:
    cfg = {**DEFAULTS, **config}
    state: dict = {}
    what = f"ASR backend {cfg['backend']!r}"

    dialogue = cfg["source"] == "dialogue"

    def check(_cfg: dict) -> None:
        if cfg.get("benchmark"):
            benchmarks.get(cfg["benchmark"])
        cls = BACKENDS.load(cfg["backend"])
        check_kwargs(what, cls, cfg["backend_args"], "backend_args")
        check_channel(cfg["channel"])
        check_source({**config, "backend": cfg["backend"]}, cls)
        vad_settings(cfg["vad"])

    def setup(_cfg: dict) -> None:
        check_channel(cfg["channel"])
        cls = BACKENDS.load(cfg["backend"])
        check_source({**config, "backend": cfg["backend"]}, cls)
        state["backend"] = build(what, cls, cfg["backend_args"], "backend_args")
        state["vad"] = SileroVad(cfg["vad"])

    def process(ctx) -> None:
        if dialogue:
            transcribe_dialogue(ctx, state["backend"], state["vad"])
        else:
            transcribe_sample(ctx, state["backend"], state["vad"], cfg["channel"])

    return Stage("asr-aligner", __version__, process, setup=setup, check=check,
                 select=dialogue_samples if dialogue else None)


main = component_group("asr-aligner", "Word-timestamped transcripts of model output, in the official output.json format.",
                       __version__, make_stage, BACKENDS)


@main.command("convert-ct2")
@click.argument("ct2_dir", type=click.Path(path_type=Path, file_okay=False, exists=True))
@click.argument("out", type=click.Path(path_type=Path, dir_okay=False))
@one_line_errors
def convert_ct2(ct2_dir: Path, out: Path) -> None:
    """Convert a CTranslate2 Whisper folder (e.g. faster-whisper tiny.en) to an openai-whisper
    checkpoint OUT (.pt) that whisper-timestamped and stable-ts load. The backends do this by
    themselves into the per-user cache; this command writes a copy where you want it."""
    from .convert import convert
    dims = convert(ct2_dir, out)
    click.echo(f"wrote {out} ({dims['n_audio_layer']}+{dims['n_text_layer']} layers, "
               f"width {dims['n_audio_state']}, vocabulary {dims['n_vocab']})")
