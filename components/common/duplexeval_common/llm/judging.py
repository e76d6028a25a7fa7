"""A judge stage's task that judges one prompt per selected sample: what a benchmark's `judge` hook
returns when each sample is one judgement (Full-Duplex-Bench v1.0's interruption rating, v1.5's
behaviour label). A benchmark subclasses `PerSampleJudging`, saying which samples, which prompt and
judges, each sample's prompt fields, and what files a judgement writes; the rest is here.

An LLM judge (the prompt: `prompt` in judge_args, else the task's `default_prompt`) judges the
stage's samples concurrently in a pre-pass (`prefetch`, at most max_concurrency at once) before the
per-sample loop, which then writes each sample's files through the stage contract from the
prefetched judgement. Samples already complete in the output are not judged again. Per sample:
judgement.json (the judge, model, whether official, the result and, for an LLM judge, the prompt id
and sha256, the request hash, status, attempts, tokens and the raw reply) and what the subclass
writes beside it. An unparsed reply gets judgement.json with status "unparsed" (the scorer counts
it); a failed request fails the sample (nothing cached, a rerun asks again). A sample without
anything to judge gets judgement.json saying why and is not sent. At the end (finalize):
judge.json (the judge, its settings, the prompt, the parser's summary with the unparsed and failed
counts, usage) and, for an LLM judge, judge-ledger.jsonl, one row per judgement in sample order.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from duplexeval_common.cli import build, check_kwargs
from duplexeval_common.errors import DuplexEvalError, SampleError
from duplexeval_common.jsonio import atomic_write_text, jsonl_text
from duplexeval_common.progress import log
from duplexeval_common.samples import SAMPLES, Inputs, Sample
from duplexeval_common.schemas import validate
from duplexeval_common.secrets import redact
from duplexeval_common.stage import SampleContext, StageContext

from . import ledger
from .engine import Judgement, cost
from .prompts import PromptSet


class PerSampleJudging:
    """The stage's task (module docstring): check, select, setup, prefetch, process, finalize.

    A subclass sets `default_judge`, `prompts` (the benchmark's PromptSet), `default_prompt`,
    `fields` (what each sample gives the prompt), `tasks` (the sample tasks it judges),
    `judgement_schema`, `scale`, `no_item` (the reason of a sample with nothing to judge), and
    defines `sample_fields`, `write_llm` and, for judges that are not LLMs, `judge_plain` and
    `plain_summary`."""

    default_judge: str = "none"
    prompts: PromptSet
    default_prompt: str
    fields: tuple[str, ...]
    tasks: tuple[str, ...]
    judgement_schema: Any = None
    scale: list | None = None
    no_item: str = "nothing to judge"
    what: str = "sample"  # what is judged, in messages ("reply", "sample")

    def __init__(self, config: dict, judges):
        self.name = config.get("judge") or self.default_judge
        self.args = dict(config.get("judge_args") or {})
        self.registry = judges
        self.judge = None
        self.llm = False
        self.prefetched: dict[str, Judgement] = {}
        self.made: dict[str, Judgement] = {}  # judged in this run, by sample

    # -- what a subclass says -------------------------------------------------------------------

    def sample_fields(self, ctx: SampleContext) -> dict | None:
        """The prompt's fields for one sample; None when there is nothing to judge."""
        raise NotImplementedError

    def write_llm(self, ctx: SampleContext, record: dict, j: Judgement) -> None:
        """judgement.json and the benchmark's own files of an LLM judgement (status ok or unparsed)."""
        raise NotImplementedError

    def judge_plain(self, ctx: SampleContext, fields: dict, record: dict) -> None:
        """A judgement by a judge that is not an LLM (an embedding, the none judge)."""
        raise DuplexEvalError(f"judge {self.name!r} is not an LLM judge; this benchmark's judge takes LLM judges")

    def plain_summary(self, records: dict[str, dict]) -> dict:
        return {}

    # -- settings ------------------------------------------------------------------------------

    def _kwargs(self) -> dict:
        """The judge's arguments, the prompt resolved to the versioned prompt it names."""
        args = dict(self.args)
        if self.registry.entry(self.name).extra.get("llm"):
            prompt = self.prompts.get(args.pop("prompt", self.default_prompt))
            if tuple(sorted(prompt.fields)) != tuple(sorted(self.fields)):
                raise DuplexEvalError(f"prompt {prompt.id} takes {', '.join(prompt.fields)}; the judge stage "
                                      f"gives each {self.what} {', '.join(self.fields)}: use {self.default_prompt}")
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
        return [s for s in inputs.samples() if s.task in self.tasks]

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
                fields = self.sample_fields(SampleContext(s, inputs, config, final))
            except (SampleError, DuplexEvalError):
                continue  # the sample's own step reports it
            if fields is not None:
                keys.append(s.key)
                items.append(fields)
        if not items:
            return
        j = self.judge
        log(f"[judge] judging {len(items)} {self.what}{'' if len(items) == 1 else 's'} with {j.name} "
            f"({j.model}), up to {j.engine.max_concurrency} at once")
        self.prefetched.update(zip(keys, j.judge_all(items)))

    def record(self) -> dict:
        judge = self.judge
        return {"judge": judge.name, "model": judge.model, "official": judge.official,
                **({"scale": self.scale} if self.scale is not None else {}), "settings": judge.settings}

    def process(self, ctx: SampleContext) -> None:
        fields = self.sample_fields(ctx)
        record = self.record()
        if fields is None:
            ctx.write_json("judgement.json", redact({**record, **self.no_item_record()}), self.judgement_schema)
            return
        if not self.llm:
            self.judge_plain(ctx, fields, record)
            return
        j = self.prefetched.pop(ctx.id, None)
        if j is None:  # not prefetched (e.g. its files changed since): judge it now
            try:
                j = self.judge.judge(fields)
            except DuplexEvalError as exc:  # a fatal request error fails this sample with its reason
                raise SampleError(ctx.id, f"judge: {exc}") from None
        self.made[ctx.id] = j
        if j.status == "error":
            raise SampleError(ctx.id, f"judge: {j.error}")
        self.write_llm(ctx, record, j)

    def no_item_record(self) -> dict:
        return {"reason": self.no_item}

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
        ok_keys = sorted(s.key for s in sctx.ok_samples() if s.task in self.tasks)
        records = ledger.records(sctx.output, ok_keys)
        if self.llm:
            rows = self._ledger_rows(records)
            for row in rows:
                validate("judge-ledger", row, ledger.LEDGER)
            atomic_write_text(sctx.output / ledger.LEDGER, jsonl_text(rows))
            summary.update(self._llm_summary(rows, records))
            sctx.invocation["judge_usage"] = ledger.invocation_usage(judge)
        else:
            summary["scores"] = self.plain_summary(records)
        sctx.write_json("judge.json", redact(summary), "judge")

    def _llm_summary(self, rows: list[dict], records: dict[str, dict]) -> dict:
        judge = self.judge
        p = judge.prompt
        parsed = [p.parse(r["raw"]) for r in rows if r["status"] == "ok"]
        parsed = [x for x in parsed if x is not None]
        scores = {"judged": len(rows), "scored": len(parsed),
                  "unparsed": sum(1 for r in rows if r["status"] == "unparsed"),
                  "errors": sum(1 for r in rows if r["status"] == "error"),
                  "no_reply": sum(1 for r in records.values() if r.get("reason") == self.no_item),
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
