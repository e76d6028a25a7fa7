"""The runners this package registers (entry point `duplexeval.runners`; nothing heavy imported)."""

_PIP = "scripts/setup-runner-venv.sh moshi (its own environment: .venvs/runner-moshi)"
HINTS = {"moshi": _PIP, "torch": _PIP, "sphn": _PIP, "sentencepiece": _PIP, "safetensors": _PIP}

RUNNERS = [
    {"name": "moshi", "target": "duplexeval_runner_moshi.runner:MoshiRunner",
     "summary": "Moshi in process (Mimi + LMGen, moshi 0.2.13), lockstep on 80 ms frames at 24 kHz; weights "
                "from model_dir / MODEL_DIR (a kyutai/moshiko-pytorch-bf16 snapshot) or tiny:<seed> "
                "(random-weight test model)",
     "requires": ["torch", "moshi", "sentencepiece", "safetensors"], "hints": HINTS},
]
