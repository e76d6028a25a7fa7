"""The duplex-runner stage: one runner session per sample.

Config: `{"runner": name, "runner_args": {...}, "seed": 0}`. Per sample it
reads `input.wav` (any rate), renders the runner's reply and writes
`output.wav` (exactly the input's length and rate), `events.jsonl` and
`runner.json`. The runner is built once per stage (argument and dependency
checks) and loads its models on the first sample that needs them, so a
resumed stage whose samples are all done loads nothing.
"""

from __future__ import annotations

import random
import sys
from typing import Any

import numpy as np

from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.stage import SampleContext, Stage

from . import __version__, deps
from .events import EventLog
from .harness import render
from .protocol import Runner
from .registry import REQUIRES, RUNNERS

COMPONENT = "duplex-runner"
DEFAULTS: dict[str, Any] = {"runner": "silence", "runner_args": {}, "seed": 0}


def resolve_config(config: dict) -> dict:
    unknown = sorted(set(config) - set(DEFAULTS))
    if unknown:
        raise DuplexEvalError(f"config: unknown keys {', '.join(unknown)} (known: {', '.join(DEFAULTS)})")
    cfg = {**DEFAULTS, **config}
    if not isinstance(cfg["runner"], str):
        raise DuplexEvalError("config: runner must be a string")
    if not isinstance(cfg["runner_args"], dict):
        raise DuplexEvalError("config: runner_args must be an object")
    if cfg["seed"] is not None and (not isinstance(cfg["seed"], int) or isinstance(cfg["seed"], bool)):
        raise DuplexEvalError("config: seed must be an integer or null")
    return cfg


def build_runner(cfg: dict) -> Runner:
    cls = RUNNERS.load(cfg["runner"])
    deps.require(f"runner {cfg['runner']!r}", REQUIRES.get(cfg["runner"], []))  # all missing, one line
    try:
        return cls(seed=cfg["seed"], **cfg["runner_args"])
    except TypeError as exc:
        raise DuplexEvalError(f"runner {cfg['runner']!r}: bad runner_args ({exc})") from None


def seed_everything(seed: int | None) -> None:
    if seed is None:
        return
    random.seed(seed)
    np.random.seed(seed % 2**32)
    if "torch" in sys.modules:
        sys.modules["torch"].manual_seed(seed)


def run_sample(ctx: SampleContext, runner: Runner, seed: int | None) -> None:
    user, sr = ctx.read_wav("input.wav", channels=None)  # any rate; several channels are mixed down
    runner.setup()
    seed_everything(seed)
    deterministic = bool(getattr(runner, "deterministic", False))
    log = EventLog(record_wall=not deterministic)
    out = render(runner, user, sr, log)
    duration = len(user) / sr
    timing = {} if deterministic else {"wall_s": log.elapsed(), "rtf": log.elapsed() / duration}
    log.emit("stats", duration, **timing, **log.stats)
    in_sr = runner.in_sr or sr
    record = {
        "runner": runner.name,
        "clock": runner.clock,
        "input_sr": sr,
        "output_sr": sr,
        "duration_s": round(duration, 6),
        "settings": {**runner.settings(), "runner_in_sr": in_sr, "runner_out_sr": runner.out_sr or in_sr},
        "models": {k: v for k, v in runner.models().items() if v is not None},
        "stats": log.stats,
        "seed": seed,
        "deterministic": deterministic,
    }
    ctx.write_wav("output.wav", out, sr)
    ctx.write_jsonl("events.jsonl", log.rows, "runner-event")
    ctx.write_json("runner.json", record, "runner-record")


def make_stage(config: dict) -> Stage:
    cfg = resolve_config(config)
    state: dict[str, Runner] = {}

    def setup(_config: dict) -> None:
        state["runner"] = build_runner(cfg)

    def process(ctx: SampleContext) -> None:
        run_sample(ctx, state["runner"], cfg["seed"])

    return Stage(COMPONENT, __version__, process, setup=setup, check=lambda _config: build_runner(cfg))
