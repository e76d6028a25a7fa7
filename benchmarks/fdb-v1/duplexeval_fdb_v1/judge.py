"""The judge stage's task for Full-Duplex-Bench v1.0 (its `judge` hook): the reply after each user
interruption, rated 0-5 on the official scale.

Selected: the user_interruption samples. Per sample: judgement.json (our record: judge, model,
whether official, the rating and, for an LLM judge, the prompt id and sha256, the request hash,
status, attempts, tokens and the raw reply) and, when the reply was rated, the official
rating.json ({"analysis", "rating": int 0-5}). An unparsed reply gets judgement.json with status
"unparsed" and no rating.json (the scorer counts it as unrated); a failed request fails the sample
(nothing cached, a rerun asks again). A sample without a reply is not sent.

An LLM judge (the prompt: `prompt` in judge_args, default fdb-v1-interruption) rates the stage's
replies concurrently in a pre-pass (`prefetch`, at most max_concurrency at once) before the
per-sample loop, which then writes each sample's files through the stage contract from the
prefetched judgement. Samples already complete in the output are not judged again. At the end
(finalize): judge.json (the judge, its settings, the prompt, scores with the unparsed and failed
counts, usage) and, for an LLM judge, judge-ledger.jsonl, one row per judgement in sample order.
"""

from __future__ import annotations

import math
from pathlib import Path

from duplexeval_common.cli import build, check_kwargs
from duplexeval_common.errors import DuplexEvalError, SampleError
from duplexeval_common.jsonio import atomic_write_text, jsonl_text
from duplexeval_common.llm import ledger
from duplexeval_common.llm.engine import Judgement, cost
from duplexeval_common.progress import log
from duplexeval_common.samples import SAMPLES, Inputs, Sample
from duplexeval_common.schemas import validate
from duplexeval_common.secrets import redact
from duplexeval_common.stage import SampleContext, StageContext

from .prompts import INTERRUPTION, PROMPTS
from .schemas import SCHEMAS

DEFAULT_JUDGE = "embedding-relevance"
FIELDS = ("context", "interrupt", "reply")  # what an interruption sample gives a prompt
NO_REPLY = "no reply after the interruption"


def sample_fields(ctx: SampleContext) -> dict | None:
    """The prompt's fields for one sample; None when there is no reply to rate."""
    ann = ctx.read_json("interrupt.json", SCHEMAS["interrupt"])[0]
    reply = ctx.read_json("output.json", "output")["text"].strip()
    if not reply:
        return None
    return {"context": ann["context"], "interrupt": ann["interrupt"], "reply": reply}


class InterruptionJudging:
    """The stage's task (module docstring): check, select, setup, prefetch, process, finalize."""

    def __init__(self, config: dict, judges):
        self.name = config.get("judge") or DEFAULT_JUDGE
        self.args = dict(config.get("judge_args") or {})
        self.registry = judges
        self.judge = None
        self.llm = False
        self.prefetched: dict[str, Judgement] = {}
        self.made: dict[str, Judgement] = {}  # judged in this run, by sample

    # -- settings ------------------------------------------------------------------------------

    def _kwargs(self) -> dict:
        """The judge's arguments, the prompt resolved to the versioned prompt it names."""
        args = dict(self.args)
        if self.registry.entry(self.name).extra.get("llm"):
            prompt = PROMPTS.get(args.pop("prompt", INTERRUPTION))
            if tuple(sorted(prompt.fields)) != tuple(sorted(FIELDS)):
                raise DuplexEvalError(f"prompt {prompt.id} takes {', '.join(prompt.fields)}; the judge stage "
                                      f"rates the reply after each interruption ({', '.join(FIELDS)}): use "
                                      f"{INTERRUPTION}")
            args["prompt"] = prompt
        return args

    def check(self) -> None:
        cls = self.registry.load(self.name)
        what = f"judge {self.name!r}: judge_args"
        kwargs = self._kwargs()
        check_kwargs(what, cls, kwargs)
        if hasattr(cls, "check"):  # LLM judges: arguments and the prompt, without network or model
            cls.check(**kwargs)

    def select(self, inputs: Inputs) -> list[Sample]:
        return [s for s in inputs.samples() if s.task == "user_interruption"]

    def setup(self) -> None:
        if self.judge is None:
            self.check()
            self.judge = build(f"judge {self.name!r}: judge_args", self.registry.load(self.name), self._kwargs())
            self.llm = hasattr(self.judge, "engine")

    # -- the samples ---------------------------------------------------------------------------

    def prefetch(self, inputs: Inputs, samples: list[Sample], output: Path, config: dict) -> None:
        """Judge, concurrently, every sample of this run that still needs its judgement."""
        if not self.llm:
            return
        keys, items = [], []
        for s in samples:
            final = Path(output) / SAMPLES / s.subset / s.id
            if ledger.complete(final) or inputs.upstream_failure(s):
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
        j = self.judge
        log(f"[judge] judging {len(items)} repl{'y' if len(items) == 1 else 'ies'} with {j.name} "
            f"({j.model}), up to {j.engine.max_concurrency} at once")
        self.prefetched.update(zip(keys, j.judge_all(items)))

    def process(self, ctx: SampleContext) -> None:
        judge = self.judge
        fields = sample_fields(ctx)
        record = {"judge": judge.name, "model": judge.model, "official": judge.official,
                  "scale": [0, 5], "settings": judge.settings}
        if fields is None:
            ctx.write_json("judgement.json", redact({**record, "rating": None, "reason": NO_REPLY}),
                           SCHEMAS["judgement"])
            return
        if self.llm:
            self._write_llm(ctx, fields, record)
            return
        r = judge.rate(fields["interrupt"], fields["reply"])
        ctx.write_json("judgement.json", redact({**record, "rating": r.rating, "reason": r.analysis, "raw": r.raw}),
                       SCHEMAS["judgement"])
        if r.rating is not None:
            ctx.write_json("rating.json", {"analysis": r.analysis, "rating": int(math.floor(r.rating + 0.5))},
                           SCHEMAS["rating"])

    def _write_llm(self, ctx: SampleContext, fields: dict, record: dict) -> None:
        judge = self.judge
        j = self.prefetched.pop(ctx.id, None)
        if j is None:  # not prefetched (e.g. its files changed since): judge it now
            try:
                j = judge.judge(fields)
            except DuplexEvalError as exc:  # a fatal request error fails this sample with its reason
                raise SampleError(ctx.id, f"judge: {exc}") from None
        self.made[ctx.id] = j
        if j.status == "error":
            raise SampleError(ctx.id, f"judge: {j.error}")
        ok = j.status == "ok"
        reason = (j.parsed.analysis or "") if ok else \
            f"unparsed: no reply in the expected format after {j.attempts} attempt(s); excluded from the mean"
        ctx.write_json("judgement.json", redact({**record, "rating": j.score if ok else None, "reason": reason,
                                                 "raw": {"answer": j.raw}, "llm": j.record()}),
                       SCHEMAS["judgement"])
        if ok:
            ctx.write_json("rating.json", {"analysis": j.parsed.analysis or "", "rating": int(j.score)},
                           SCHEMAS["rating"])

    # -- finalize ------------------------------------------------------------------------------

    def _ledger_rows(self, records: dict[str, dict]) -> list[dict]:
        """One row per LLM judgement of the stage, by sample id: the ok samples' records (this run's
        or earlier ones') and this run's failed requests. Latency: this run's, else the cached one."""
        rows = {}
        for key, rec in records.items():
            if "llm" not in rec:
                continue
            latency = ledger.cached_latency(self.judge, rec["llm"]["request_hash"], self.made.get(key))
            rows[key] = {"sample": key, **rec["llm"], "latency_s": latency}
        for key, j in self.made.items():
            if j.status == "error" and key not in rows:
                rows[key] = redact(j.ledger_row(key))
        return [rows[k] for k in sorted(rows)]

    def finalize(self, sctx: StageContext) -> None:
        judge = self.judge
        if judge is None:  # every sample was complete: build it (no model loads, nothing is asked)
            self.setup()
            judge = self.judge
        label = "official" if judge.official else f"judge: {judge.name}" + (f" ({judge.model})" if judge.model else "")
        summary = {"judge": judge.name, "model": judge.model, "official": judge.official,
                   "settings": judge.settings, "label": label}
        ok_keys = sorted(s.key for s in sctx.ok_samples() if s.task == "user_interruption")
        records = ledger.records(sctx.output, ok_keys)
        if self.llm:
            rows = self._ledger_rows(records)
            for row in rows:
                validate("judge-ledger", row, ledger.LEDGER)
            atomic_write_text(sctx.output / ledger.LEDGER, jsonl_text(rows))
            summary.update(self._llm_summary(rows, records))
            sctx.invocation["judge_usage"] = ledger.invocation_usage(judge)
        else:
            rated = [r["rating"] for r in records.values() if r.get("rating") is not None]
            summary["scores"] = {"judged": len(rated), "scored": len(rated),
                                 "no_reply": sum(1 for r in records.values() if r.get("reason") == NO_REPLY),
                                 "mean": round(sum(rated) / len(rated), 6) if rated else None}
        sctx.write_json("judge.json", redact(summary), "judge")

    def _llm_summary(self, rows: list[dict], records: dict[str, dict]) -> dict:
        judge = self.judge
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
                "run_settings": judge.run_settings, "ledger": ledger.LEDGER, "scores": scores, "usage": usage}


def task(config: dict, judges) -> InterruptionJudging:
    """The hook: the task for this stage's settings, given the judge component's registry."""
    return InterruptionJudging(config, judges)
