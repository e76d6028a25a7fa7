"""`duplex-runner` command: the standard `run` stage plus `list`."""

from __future__ import annotations

from duplexeval_common.cli import component_group

from . import __version__
from .registry import RUNNERS, availability
from .stage import make_stage


def _missing(entry) -> str | None:
    ok, note = availability(entry.name)
    return None if ok else note


main = component_group("duplex-runner", "Run a spoken dialogue model over each sample's input.wav (output.wav, events.jsonl, "
                       "runner.json).", __version__, make_stage, RUNNERS, note=_missing)
