"""What `--model`, `--dataset`, `--asr` and `--judge` name.

A model is a runner package (components/runners/<package>/: its code, pinned requirements and
Dockerfile), a runner it registers, and the settings this entry gives it; its runner stage is
the component `runner-<package>` (image duplexeval/runner-<package>:<version>; locally the
shared .venv, or .venvs/runner-<package> when the package needs an environment of its own).
Adding a model is its package plus one entry here. Datasets are declared by the benchmark
packages (benchmarks/<name>/) and map to the stage that produces the samples.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from duplexeval_common.errors import DuplexEvalError


# Where a networked model's endpoint comes from when --runner-arg does not give it: the
# orchestrator copies these variables into runner_args, so the endpoint (never a key) is part of
# the stage key and the records. Keys stay in the environment (`keys`, passed by name).
ENDPOINT_ENV = {"url": "MODEL_URL", "insecure": "MODEL_INSECURE", "ca_file": "MODEL_CA"}
# A local model's weights: a folder (a Hugging Face snapshot) named by MODEL_DIR.
WEIGHTS_ENV = {"model_dir": "MODEL_DIR"}
FLAGS = ("insecure",)  # settings given as 1/true/yes in the environment
PATHS = ("ca_file", "model_dir", "tree")  # settings naming a file or folder here: made absolute


@dataclass(frozen=True)
class Model:
    package: str  # components/runners/<package>
    runner: str   # the runner name the package registers
    runner_args: dict = field(default_factory=dict)
    summary: str = ""
    network: bool = False  # whether its runner container needs the network
    keys: tuple[str, ...] = ()  # environment variables holding its credentials (passed by name)
    # runner_arg -> the environment variable it defaults to, or a tuple of them (the first one set):
    # resolved here, so the endpoint is in the stage's key and reaches a container as a setting
    env_args: dict = field(default_factory=dict)

    @property
    def component(self) -> str:
        return f"runner-{self.package}"


def endpoint_args(m: Model, given: dict, environ: dict) -> dict:
    """runner_args with the settings a model takes from the environment when not given."""
    args = dict(given)
    for arg, names in m.env_args.items():
        var = next((v for v in ((names,) if isinstance(names, str) else names) if environ.get(v)), None)
        if arg not in args and var is not None:
            value = environ[var]
            if arg in FLAGS:
                value = value.strip().lower() in ("1", "true", "yes", "on")
            elif arg in PATHS and "://" not in value and not value.startswith("tiny:"):
                value = os.path.abspath(os.path.expanduser(value))  # the stage runs elsewhere (docker)
            args[arg] = value
    return args


def _network(package: str, runner: str, summary: str, args: dict | None = None,
             keys: tuple[str, ...] = ()) -> Model:
    return Model(package, runner, args or {}, summary, network=True, keys=keys, env_args=ENDPOINT_ENV)


MODELS = {
    "cascade": Model("cascade", "cascade", {}, "half-duplex cascade: Silero VAD, faster-whisper tiny.en, "
                     "SmolLM2-135M, Piper"),
    "bailing": Model("cascade", "cascade", {"profile": "bailing"}, "MTR-DuplexBench's cascade (Bailing): Silero "
                     "VAD, SenseVoice, GPT-4o, ChatTTS; SENSEVOICE_DIR, CHATTTS_DIR, OPENAI_API_KEY",
                     network=True, keys=("OPENAI_API_KEY",), env_args={"llm_url": "OPENAI_BASE_URL"}),
    "half-duplex": Model("half-duplex", "half-duplex", {}, "a speech-in, speech-out model answering whole turns "
                         "(an OpenAI-compatible chat endpoint with audio, e.g. gpt-4o-audio or vLLM's Qwen-Omni), "
                         "made full-duplex: Silero VAD endpointing, barge-in; MODEL_URL (VocalNet: "
                         "backend=vocalnet, MODEL_DIR)", network=True, keys=("OPENAI_API_KEY",),
                         env_args={**ENDPOINT_ENV, "url": ("MODEL_URL", "OPENAI_BASE_URL"), **WEIGHTS_ENV}),
    "silence": Model("controls", "silence", {}, "control: never speaks"),
    "fixed-latency": Model("controls", "fixed-latency", {"delay_s": 1.0},
                           "control: a fixed phrase 1.0 s after each end of user speech"),
    "always-talk": Model("controls", "always-talk", {}, "control: speaks over everything, from start to end"),
    "freeze-omni": _network("freeze-omni", "freeze-omni", "Freeze-Omni 7B served by its own bin/server.py "
                            "(socket.io over HTTPS, realtime); MODEL_URL, and MODEL_CA or MODEL_INSECURE=1"),
    "vita-1.5": _network("freeze-omni", "freeze-omni", "VITA-1.5 served by its web_demo/server.py (the "
                         "Freeze-Omni socket.io protocol, realtime); MODEL_URL, and MODEL_CA or MODEL_INSECURE=1",
                         {"system_prompt": None}),
    "moshi": Model("moshi", "moshi", {}, "Moshi in process (Mimi + LMGen, 80 ms lockstep); weights from "
                   "MODEL_DIR (a local kyutai/moshiko-pytorch-bf16 snapshot)", env_args=WEIGHTS_ENV),
    "dgslm": Model("dgslm", "dgslm", {}, "dGSLM in process (fairseq: HuBERT units, SpeechDLM, unit HiFi-GAN; 20 ms "
                   "lockstep, the user stream teacher-forced per task); weights from MODEL_DIR (the public dGSLM "
                   "checkpoints)", env_args=WEIGHTS_ENV),
    "moshi-ws": _network("moshi-ws", "moshi-ws", "a Moshi server (python -m moshi.server) over its WebSocket "
                         "byte protocol; MODEL_URL", {"profile": "moshi"}),
    "personaplex": _network("moshi-ws", "moshi-ws", "a PersonaPlex server (NVIDIA/personaplex) over the Moshi "
                            "WebSocket protocol with FDB's prompts; MODEL_URL", {"profile": "personaplex"}),
    "flm-audio": _network("moshi-ws", "moshi-ws", "an FLM-Audio server (cofe-ai/flm-audio) over the Moshi "
                          "WebSocket protocol; MODEL_URL", {"profile": "flm-audio"}),
    "openai-realtime": _network("openai-realtime", "openai-realtime", "OpenAI Realtime (GA) over WebSocket "
                                "with the openai SDK; OPENAI_API_KEY, MODEL_URL for another endpoint",
                                keys=("OPENAI_API_KEY",)),
    "gemini-live": _network("gemini-live", "gemini-live", "Gemini Live with the google-genai SDK, one session "
                            "per sample; GEMINI_API_KEY or GOOGLE_API_KEY, MODEL_URL for another endpoint",
                            keys=("GEMINI_API_KEY", "GOOGLE_API_KEY")),
    "nova-sonic": _network("nova-sonic", "nova-sonic", "Amazon Nova Sonic over Bedrock's bidirectional stream "
                           "(aws-sdk-bedrock-runtime, Python 3.12); AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, "
                           "AWS_SESSION_TOKEN, AWS_REGION, MODEL_URL for another endpoint",
                           keys=("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION",
                                 "AWS_DEFAULT_REGION")),
    "replay": Model("replay", "replay", {}, "scores outputs made elsewhere: output.wav of each sample of an "
                    "official-layout tree (REPLAY_TREE)", env_args={"tree": "REPLAY_TREE"}),
}

def builtin() -> dict[str, tuple[str, object, str]]:
    """The datasets the benchmarks declare ({name: (component, folder, summary)})."""
    from duplexeval_common.benchmarks import builtin_datasets
    return {name: (d.component, d.path, d.summary)
            for name, (_, b) in sorted(builtin_datasets().items()) for d in b.datasets if d.name == name}


def model(name: str) -> Model:
    if name not in MODELS:
        raise DuplexEvalError(f"unknown model {name!r}; known: {', '.join(sorted(MODELS))}")
    return MODELS[name]


def imported_datasets(root=None) -> dict[str, tuple[str, object, str]]:
    """The datasets `duplexeval import` wrote under <home>/datasets/ ({name: (component, folder,
    summary)}); a folder whose manifest cannot be read is listed with that problem as its summary."""
    from .importing import describe_import
    from .paths import datasets_dir
    base = datasets_dir(root)
    out = {}
    for d in sorted(base.iterdir()) if base.is_dir() else []:
        if d.name.startswith(".") or not d.is_dir() or not (d / "manifest.json").is_file():
            continue
        out[d.name] = ("tts-synth", d, describe_import(d))
    return out


def imported_benchmark(name: str, root=None) -> str | None:
    """The benchmark of a dataset imported under <home>/datasets/<name>/, as its manifest names it
    (`benchmark`, written by the benchmark's importer); None when there is no such import or its
    manifest cannot be read or names none (the dataset stage then names the problem)."""
    from duplexeval_common.jsonio import read_json
    from duplexeval_common.samples import name_problem

    from .importing import imported_folder
    if name_problem(name) is not None:
        return None
    folder = imported_folder(name, root)
    if folder is None:
        return None
    try:
        owner = read_json(folder / "manifest.json").get("benchmark")
    except (OSError, ValueError, AttributeError):
        return None
    return owner if isinstance(owner, str) and owner else None


def datasets(root=None) -> dict[str, tuple[str, object, str]]:
    """Every dataset `eval --dataset` accepts: the built-in ones and the imported ones (a built-in
    name wins over an imported dataset of the same name)."""
    return {**imported_datasets(root), **builtin()}


def dataset(name: str, root=None) -> tuple[str, object, str]:
    """(component, source folder, summary) of a dataset: a built-in one, else one imported under
    <home>/datasets/<name>/ (read by tts-synth in import mode, duplexeval_tts/imported.py)."""
    known = builtin()
    if name in known:
        return known[name]
    from duplexeval_common.samples import name_problem

    from .importing import imported_folder
    if name_problem(name) is None:
        folder = imported_folder(name, root)
        if folder is not None:
            return ("tts-synth", folder, f"imported dataset {name}")
    imported = sorted(imported_datasets(root))
    raise DuplexEvalError(f"unknown dataset {name!r}; built-in: {', '.join(sorted(known))}; "
                          f"imported: {', '.join(imported) or 'none (duplexeval import --help)'}")
