"""How to get VocalNet (not on PyPI): one line, importable without anything heavy."""

UPSTREAM = "SJTU-OmniAgent/VocalNet @ bdf01d2"
HINT = ("VocalNet is not on PyPI: git clone https://github.com/SJTU-OmniAgent/VocalNet (bdf01d2), "
        "pip install -e . in its own environment (torch, CUDA; its pyproject.toml), put the checkout on "
        "PYTHONPATH (or runner_args code_dir); weights: VocalNet/VocalNet-1B or -8B in MODEL_DIR, "
        "FunAudioLLM/CosyVoice2-0.5B in runner_args cosyvoice_dir")
