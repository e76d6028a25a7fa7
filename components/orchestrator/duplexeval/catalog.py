"""What `--model`, `--dataset`, `--asr` and `--judge` name.

Models map to a runner of the duplex-runner component and its settings;
datasets to the stage that produces the samples. Adding a model is one entry
here (plus its runner adapter in duplex-runner).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from duplexeval_common.errors import DuplexEvalError

from .paths import DATASETS


# Where a networked model's endpoint comes from when --runner-arg does not give it: the
# orchestrator copies these variables into runner_args, so the endpoint (never a key) is part of
# the stage key and the records. Keys stay in the environment (`keys`, passed by name).
ENDPOINT_ENV = {"url": "MODEL_URL", "insecure": "MODEL_INSECURE", "ca_file": "MODEL_CA"}


@dataclass(frozen=True)
class Model:
    runner: str
    runner_args: dict = field(default_factory=dict)
    summary: str = ""
    network: bool = False  # whether its runner container needs the network
    keys: tuple[str, ...] = ()  # environment variables holding its credentials (passed by name)


def endpoint_args(m: Model, given: dict, environ: dict) -> dict:
    """runner_args with the endpoint settings a networked model takes from the environment."""
    args = dict(given)
    if not m.network:
        return args
    for arg, var in ENDPOINT_ENV.items():
        if arg not in args and environ.get(var):
            value = environ[var]
            args[arg] = value.lower() in ("1", "true", "yes") if arg == "insecure" else value
    return args


MODELS = {
    "cascade": Model("cascade", {}, "half-duplex cascade: Silero VAD, faster-whisper tiny.en, SmolLM2-135M, Piper"),
    "silence": Model("silence", {}, "control: never speaks"),
    "fixed-latency": Model("fixed-latency", {"delay_s": 1.0},
                           "control: a fixed phrase 1.0 s after each end of user speech"),
    "freeze-omni": Model("freeze-omni", {}, "Freeze-Omni 7B served by its own bin/server.py (socket.io over "
                         "HTTPS, realtime); set MODEL_URL, and MODEL_CA or MODEL_INSECURE=1", network=True),
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
