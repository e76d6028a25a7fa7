"""Judging the replies after each user interruption, as a stage.

Per sample: judgement.json (our record: judge, model, whether official, the rating and, for an
LLM judge, the prompt id and sha256, the request hash, status, attempts, tokens and the raw
reply) and, when the reply was rated, the official rating.json ({"analysis", "rating": int 0-5}).
An unparsed reply gets judgement.json with status "unparsed" and no rating.json (the aggregator
counts it as unrated); a failed request fails the sample (nothing cached, a rerun asks again).

An LLM judge rates the stage's replies concurrently in a pre-pass (`prefetch`, at most
max_concurrency at once) before the per-sample loop, which then writes each sample's files
through the stage contract (atomic per-sample folders) from the prefetched judgement. Samples
already complete in the output are not judged again.

At the end (finalize): judge.json (the judge, its settings, the prompt, scores with the
unparsed and failed counts, calls, cache hits, tokens and cost) and, for an LLM judge,
judge-ledger.jsonl, one row per judgement in sample order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from duplexeval_common.errors import DuplexEvalError, SampleError
from duplexeval_common.hashing import sha256_file
from duplexeval_common.jsonio import atomic_write_text, jsonl_text, read_json
from duplexeval_common.progress import log
from duplexeval_common.samples import DONE, SAMPLES, Inputs, Sample
from duplexeval_common.schemas import validate
from duplexeval_common.secrets import redact
from duplexeval_common.stage import SampleContext, StageContext

from .engine import Judgement, cost
from .judges import Judge
from .llm_judge import LLMJudge

LEDGER = "judge-ledger.jsonl"
FIELDS = ("context", "interrupt", "reply")  # what an interruption sample gives a prompt
NO_REPLY = "no reply after the interruption"


@dataclass
class Judging:
    """What the stage keeps between setup, the samples and finalize."""
    judge: Judge | None = None
    prefetched: dict[str, Judgement] = field(default_factory=dict)
    made: dict[str, Judgement] = field(default_factory=dict)  # judged in this run, by sample


def interruption_samples(inputs: Inputs, config: dict) -> list[Sample]:
    return [s for s in inputs.samples() if s.task == "user_interruption"]


def check_prompt(judge_prompt) -> None:
    """The stage rates interruption replies: the prompt must take exactly their fields."""
    if tuple(sorted(judge_prompt.fields)) != tuple(sorted(FIELDS)):
        raise DuplexEvalError(f"prompt {judge_prompt.id} takes {', '.join(judge_prompt.fields)}; the judge stage "
                              f"rates the reply after each interruption ({', '.join(FIELDS)}): use "
                              "fdb-v1-interruption (the MTR prompts are called through duplexeval_judge.mtr)")


def sample_fields(ctx: SampleContext) -> dict | None:
    """The prompt's fields for one sample; None when there is no reply to rate."""
    ann = ctx.read_json("interrupt.json", "interrupt")[0]
    reply = ctx.read_json("output.json", "output")["text"].strip()
    if not reply:
        return None
    return {"context": ann["context"], "interrupt": ann["interrupt"], "reply": reply}


def _complete(final: Path) -> bool:
    """The stage contract's test: the seal exists and every sealed file still hashes the same."""
    try:
        files = read_json(final / DONE)["files"]
        return all((final / n).is_file() and sha256_file(final / n) == h for n, h in files.items())
    except (OSError, ValueError, KeyError, TypeError):
        return False


def prefetch(state: Judging, inputs: Inputs, samples: list[Sample], output: Path, config: dict) -> None:
    """Judge, concurrently, every sample of this run that still needs its judgement."""
    judge = state.judge
    if not isinstance(judge, LLMJudge):
        return
    keys, items = [], []
    for s in samples:
        final = Path(output) / SAMPLES / s.subset / s.id
        if _complete(final) or inputs.upstream_failure(s):
            continue
        try:
            fields = sample_fields(SampleContext(s, inputs, config, final))
        except (SampleError, DuplexEvalError):
            continue  # the sample's own step reports it
        if fields is not None:
            keys.append(s.key)
            items.append(fields)
    if not items:
        return
    log(f"[judge] judging {len(items)} repl{'y' if len(items) == 1 else 'ies'} with {judge.name} "
        f"({judge.model}), up to {judge.engine.max_concurrency} at once")
    state.prefetched.update(zip(keys, judge.judge_all(items)))


def judge_sample(ctx: SampleContext, state: Judging) -> None:
    judge = state.judge
    fields = sample_fields(ctx)
    record = {"judge": judge.name, "model": judge.model, "official": judge.official,
              "scale": [0, 5], "settings": judge.settings}
    if fields is None:
        ctx.write_json("judgement.json", redact({**record, "rating": None, "reason": NO_REPLY}), "judgement")
        return
    if isinstance(judge, LLMJudge):
        _write_llm(ctx, state, judge, fields, record)
        return
    r = judge.rate(fields["context"], fields["interrupt"], fields["reply"])
    ctx.write_json("judgement.json", redact({**record, "rating": r.rating, "reason": r.analysis, "raw": r.raw}),
                   "judgement")
    if r.rating is not None:
        ctx.write_json("rating.json", {"analysis": r.analysis, "rating": int(math.floor(r.rating + 0.5))},
                       "rating")


def _write_llm(ctx: SampleContext, state: Judging, judge: LLMJudge, fields: dict, record: dict) -> None:
    j = state.prefetched.pop(ctx.id, None)
    if j is None:  # not prefetched (e.g. its files changed since): judge it now
        try:
            j = judge.judge(fields)
        except DuplexEvalError as exc:  # a fatal request error fails this sample with its reason
            raise SampleError(ctx.id, f"judge: {exc}") from None
    state.made[ctx.id] = j
    if j.status == "error":
        raise SampleError(ctx.id, f"judge: {j.error}")
    ok = j.status == "ok"
    reason = (j.parsed.analysis or "") if ok else \
        f"unparsed: no reply in the expected format after {j.attempts} attempt(s); excluded from the mean"
    ctx.write_json("judgement.json", redact({**record, "rating": j.score if ok else None, "reason": reason,
                                             "raw": {"answer": j.raw}, "llm": j.record()}), "judgement")
    if ok:
        ctx.write_json("rating.json", {"analysis": j.parsed.analysis or "", "rating": int(j.score)}, "rating")


# --- finalize -------------------------------------------------------------------------------

def _records(sctx: StageContext, keys: list[str]) -> dict[str, dict]:
    out = {}
    for key in keys:
        subset, sid = key.split("/", 1)
        p = sctx.output / SAMPLES / subset / sid / "judgement.json"
        try:
            out[key] = read_json(p)
        except (OSError, ValueError):
            continue
    return out


def ledger_rows(sctx: StageContext, state: Judging, records: dict[str, dict]) -> list[dict]:
    """One row per LLM judgement of the stage, by sample id: the ok samples' records (this run's
    or earlier ones') and this run's failed requests. Latency: this run's, else the cached one."""
    judge = state.judge
    rows = {}
    for key, rec in records.items():
        if "llm" not in rec:
            continue
        j = state.made.get(key)
        latency = j.latency_s if j is not None and j.request_hash == rec["llm"]["request_hash"] else None
        if latency is None and judge.engine.cache is not None:
            entry = judge.engine.cache.get(rec["llm"]["request_hash"])
            latency = entry.get("latency_s") if entry else None
        rows[key] = {"sample": key, **rec["llm"], "latency_s": latency}
    for key, j in state.made.items():
        if j.status == "error" and key not in rows:
            rows[key] = redact(j.ledger_row(key))
    return [rows[k] for k in sorted(rows)]


def write_summary(sctx: StageContext, state: Judging) -> None:
    judge = state.judge
    label = "official" if judge.official else f"judge: {judge.name}" + (f" ({judge.model})" if judge.model else "")
    summary = {"judge": judge.name, "model": judge.model, "official": judge.official,
               "settings": judge.settings, "label": label}
    ok_keys = sorted(s.key for s in sctx.ok_samples() if s.task == "user_interruption")
    records = _records(sctx, ok_keys)
    if isinstance(judge, LLMJudge):
        rows = ledger_rows(sctx, state, records)
        for row in rows:
            validate("judge-ledger", row, LEDGER)
        atomic_write_text(sctx.output / LEDGER, jsonl_text(rows))
        summary.update(_llm_summary(judge, rows, records))
        sctx.invocation["judge_usage"] = invocation_usage(judge)
    else:
        rated = [r["rating"] for r in records.values() if r.get("rating") is not None]
        summary["scores"] = {"judged": len(rated), "scored": len(rated),
                             "no_reply": sum(1 for r in records.values() if r.get("reason") == NO_REPLY),
                             "mean": round(sum(rated) / len(rated), 6) if rated else None}
    sctx.write_json("judge.json", redact(summary), "judge")


def _llm_summary(judge: LLMJudge, rows: list[dict], records: dict[str, dict]) -> dict:
    p = judge.prompt
    parsed = [p.parse(r["raw"]) for r in rows if r["status"] == "ok"]
    parsed = [x for x in parsed if x is not None]
    scores = {"judged": len(rows), "scored": len(parsed),
              "unparsed": sum(1 for r in rows if r["status"] == "unparsed"),
              "errors": sum(1 for r in rows if r["status"] == "error"),
              "no_reply": sum(1 for r in records.values() if r.get("reason") == NO_REPLY),
              **p.parser.summarize(parsed),
              "note": "unparsed and failed judgements are excluded from the mean and counted here"}
    t_in = sum(r["tokens_in"] or 0 for r in rows)
    t_out = sum(r["tokens_out"] or 0 for r in rows)
    # What the judgements cost, summed over the ledger: the same whether they came from the API or
    # the cache, so judge.json is the same bytes either way. What this invocation asked the API
    # (calls, cache hits, retries) is in stage.json (invocation_notes), not an output.
    usage = {"judgements": len(rows), "tokens_in": t_in, "tokens_out": t_out,
             "cost": cost(t_in, t_out, judge.price), "price": judge.price}
    return {"prompt": {**p.identity(), "source": p.source, "parser": p.parser_name},
            "run_settings": judge.run_settings, "ledger": LEDGER, "scores": scores, "usage": usage}


def invocation_usage(judge: LLMJudge) -> dict:
    """This invocation's API use: calls, cache hits, retries, tokens and cost of the calls made."""
    use = judge.engine.usage()
    return {**use, "retries": getattr(judge.engine.backend, "retries", 0),
            "cost": cost(use["tokens_in"], use["tokens_out"], judge.price)}
