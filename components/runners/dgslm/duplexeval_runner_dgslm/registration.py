"""The runners this package registers (entry point `duplexeval.runners`; nothing heavy imported)."""

_PIP = "scripts/setup-runner-venv.sh dgslm (its own environment: .venvs/runner-dgslm)"
HINTS = {"fairseq": _PIP, "torch": _PIP, "omegaconf": _PIP, "hydra": _PIP, "sklearn": _PIP, "joblib": _PIP}

RUNNERS = [
    {"name": "dgslm", "target": "duplexeval_runner_dgslm.runner:DGSLMRunner",
     "summary": "dGSLM in process (fairseq: Fisher HuBERT + k-means units, SpeechDLM, unit HiFi-GAN), lockstep "
                "on 20 ms frames at 16 kHz, the user stream teacher-forced per Full-Duplex-Bench task; weights "
                "from model_dir / MODEL_DIR (the public dGSLM checkpoints) or tiny:<seed> (random-weight test model)",
     "requires": ["torch", "fairseq", "omegaconf", "sklearn"], "hints": HINTS},
]
