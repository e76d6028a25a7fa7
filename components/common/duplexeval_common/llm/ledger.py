"""What a stage that judges writes beside its per-sample records: which samples are already
judged, the ledger rows (one per LLM judgement, by sample), this invocation's API use.

Both the judge component's stage and any benchmark's judge task use these, so every ledger has
the same rows (schemas/judge-ledger.schema.json) whoever wrote it.
"""

from __future__ import annotations

from pathlib import Path

from duplexeval_common.hashing import sha256_file
from duplexeval_common.jsonio import read_json
from duplexeval_common.samples import DONE, SAMPLES

from .engine import cost

LEDGER = "judge-ledger.jsonl"
# The fields of a judgement record (Judgement.record()) a ledger row carries.
FIELDS = ("request_hash", "prompt", "model", "returned_model", "seed", "temperature", "base_url",
          "status", "attempts", "requests", "tokens_in", "tokens_out", "raw", "score", "score_detail",
          "error")


def complete(final: Path) -> bool:
    """The stage contract's test: the seal exists and every sealed file still hashes the same."""
    try:
        files = read_json(final / DONE)["files"]
        return all((final / n).is_file() and sha256_file(final / n) == h for n, h in files.items())
    except (OSError, ValueError, KeyError, TypeError):
        return False


def records(output: Path, keys: list[str], name: str = "judgement.json") -> dict[str, dict]:
    """{sample key: its judgement record} of the samples that have one in the stage's output."""
    out = {}
    for key in keys:
        subset, sid = key.split("/", 1)
        try:
            out[key] = read_json(Path(output) / SAMPLES / subset / sid / name)
        except (OSError, ValueError):
            continue
    return out


def cached_latency(judge, request_hash: str, made=None) -> float | None:
    """A judgement's latency: this run's when it made it, else the cached entry's."""
    if made is not None and made.request_hash == request_hash:
        return made.latency_s
    cache = getattr(judge.engine, "cache", None)
    entry = cache.get(request_hash) if cache is not None else None
    return entry.get("latency_s") if entry else None


def invocation_usage(judge) -> dict:
    """This invocation's API use of one LLM judge: calls, cache hits, retries, tokens, cost."""
    e = judge.engine
    return {"calls": getattr(e.backend, "calls", 0), "cache_hits": e.cache_hits, "tokens_in": e.tokens_in,
            "tokens_out": e.tokens_out, "retries": getattr(e.backend, "retries", 0),
            "cost": cost(e.tokens_in, e.tokens_out, judge.price)}


def sum_cost(values: list) -> float | None:
    vals = [v for v in values if v is not None]
    return round(sum(vals), 6) if vals else None
