"""What `--model`, `--dataset`, `--asr` and `--judge` name.

Models map to a runner of the duplex-runner component and its settings;
datasets to the stage that produces the samples. Adding a model is one entry
here (plus its runner adapter in duplex-runner).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from duplexeval_common.errors import DuplexEvalError

from .paths import DATASETS


@dataclass(frozen=True)
class Model:
    runner: str
    runner_args: dict = field(default_factory=dict)
    summary: str = ""
    network: bool = False  # whether its runner container needs the network


MODELS = {
    "cascade": Model("cascade", {}, "half-duplex cascade: Silero VAD, faster-whisper tiny.en, SmolLM2-135M, Piper"),
    "silence": Model("silence", {}, "control: never speaks"),
    "fixed-latency": Model("fixed-latency", {"delay_s": 1.0},
                           "control: a fixed phrase 1.0 s after each end of user speech"),
}

DATASETS_KNOWN = {
    "fdb-mini": ("tts-synth", DATASETS / "fdb-mini",
                 "embedded Full-Duplex-Bench-style set synthesized with Piper (pause, turn-taking, interruption)"),
}


def model(name: str) -> Model:
    if name not in MODELS:
        raise DuplexEvalError(f"unknown model {name!r}; known: {', '.join(sorted(MODELS))}")
    return MODELS[name]


def dataset(name: str) -> tuple[str, object, str]:
    if name not in DATASETS_KNOWN:
        raise DuplexEvalError(f"unknown dataset {name!r}; known: {', '.join(sorted(DATASETS_KNOWN))}")
    return DATASETS_KNOWN[name]
