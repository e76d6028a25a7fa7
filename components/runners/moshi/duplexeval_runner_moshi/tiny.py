"""A tiny random-weight Moshi: the real Mimi and LMModel classes, shrunk, for tests and benchmarks.

Shared by the `moshi` runner (`model_dir: "tiny:<seed>"`) and the protocol test double
tests/duplex_runner/moshi_server.py. The topology is moshi.models.loaders' (_mimi_config and
_lm_kwargs of moshi 0.2.13 = kyutai-labs/moshi @ e6a55d2) with small widths: Mimi keeps 24 kHz,
12.5 Hz (1920-sample frames) and 8 codebooks; the LM keeps n_q=16 (8 model + 8 user streams),
dep_q=8 and the `delays`, so LMGen.step returns None exactly once and then tokens of shape
[1, 9, 1], as the 7B model does. Weights come from torch's default initialisation under
`torch.manual_seed(seed)` (the global RNG is left as it was), so one seed gives one model.
Nothing is downloaded; there is no text tokenizer (text events carry token ids).

Import moshi only after the NO_TORCH_COMPILE / NO_CUDA_GRAPH choice is made (`cpu_env`): moshi
reads NO_TORCH_COMPILE when its modules are imported.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
from typing import Any


# The shrunk widths (everything else is moshi's own config).
MIMI_SEANET = {"n_filters": 8, "dimension": 32}
MIMI_QUANTIZER = {"dimension": 16, "input_dimension": 32, "output_dimension": 32, "n_q": 8, "bins": 64}
MIMI_TRANSFORMER = {"d_model": 32, "num_heads": 2, "num_layers": 1, "dim_feedforward": 64,
                    "input_dimension": 32, "output_dimensions": [32]}
MIMI_CODEBOOKS = 8
LM = {"dim": 32, "num_heads": 2, "num_layers": 2, "hidden_scale": 2, "context": 100, "card": 64,
      "text_card": 100, "depformer_dim": 32, "depformer_dim_feedforward": 64, "depformer_num_heads": 2,
      "depformer_num_layers": 1, "depformer_context": 8}


def cpu_env() -> None:
    """moshi on CPU: no torch.compile (read at import) and no CUDA graphs."""
    os.environ.setdefault("NO_TORCH_COMPILE", "1")
    os.environ.setdefault("NO_CUDA_GRAPH", "1")



def mimi_config() -> dict:
    from moshi.models import loaders
    cfg = copy.deepcopy(loaders._mimi_config)
    cfg["seanet"].update(MIMI_SEANET)
    cfg["quantizer"].update(MIMI_QUANTIZER)
    cfg["transformer"].update(MIMI_TRANSFORMER)
    return cfg


def lm_kwargs() -> dict:
    from moshi.models import loaders
    kw = copy.deepcopy(loaders._lm_kwargs)
    kw.update(LM)
    assert kw["n_q"] == 16 and kw["dep_q"] == 8, "the tiny LM keeps moshi's stream layout"
    return kw


def record(seed: int) -> dict[str, Any]:
    """What identifies a tiny model (runner.json `models`): its config and seed."""
    cfg = {"mimi": {"seanet": MIMI_SEANET, "quantizer": MIMI_QUANTIZER, "transformer": MIMI_TRANSFORMER,
                    "num_codebooks": MIMI_CODEBOOKS}, "lm": LM}
    blob = json.dumps(cfg, sort_keys=True).encode()
    return {"kind": "tiny random-weight Mimi + LM (tests and benchmarks only, not Moshi)", "seed": seed,
            "config": cfg, "config_sha256": hashlib.sha256(blob).hexdigest()}


def build(seed: int, device: str = "cpu", dtype=None):
    """(mimi, lm): random-weight tiny models in eval mode on `device`; Mimi in float32 (as
    loaders.get_mimi makes it), the LM in `dtype` (default float32). The weights are drawn on the
    CPU, so one seed gives the same model on every device."""
    import torch
    from moshi.models import loaders
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        mimi = loaders.get_mimi(None, mimi_config=mimi_config(), device="cpu", num_codebooks=MIMI_CODEBOOKS)
        lm = loaders.get_moshi_lm(None, lm_kwargs=lm_kwargs(), device="cpu", dtype=dtype or torch.float32)
    return mimi.to(device), lm.to(device)
