"""The judge stage's task for MTR-DuplexBench (its `judge` hook): one judgement per round.

Selected: the round samples (those with a round.json) of the judged tasks, instruction following,
safety and dialogue quality; features rounds are scored by rules (the aggregator), not judged.
`judge` names the backend: "none" (the default of `duplexeval eval --benchmark mtr`: every judged
round gets a judgement.json with status "skipped", so the aggregator reports those cells as not
judged rather than missing), "openai" (any OpenAI-compatible server, the paper's GPT-4o; judge_args
as the `openai` judge's, the prompt excepted) or "local-llm" (SmolLM2-135M offline: fast, but its
answers are nearly constant, so its scores are for smoke tests only; labelled not official). Each
task has its own judge, built with its MTR prompt by judging.judge_for, so each prompt's own
settings (gpt-4o; instruction following at temperature 0.1) apply unless judge_args set them.

The prompt's fields, per round (benchmarks/mtr/README.md, "Judging a round"):

    instruction following  question = the round's user lines joined, answer = the model's words
    safety                 response = the model's words
    dialogue quality       transcript = judging.transcript() of the history lines,
                           the round's user lines and the model's segments in the round
                           (duplexeval_common.ipus.segments_from_words), turn_start = start_s,
                           turn_end = end_s

The model's words are transcript.json's words that start at or after the round's start_s. A
round without any is not sent: status "ok", score 0, reason "no model speech in the round".

Per sample, judgement.json = Judgement.record() + {"round", "dialogue_id", "task"}
(schemas/judgement.schema.json of this package). A failed request fails the sample (a rerun asks again); an
unparsed reply is status "unparsed" (counted, not scored). The replies are judged concurrently
before the per-sample loop (each task's judge, at most max_concurrency at once), through the
judge cache; judge-ledger.jsonl has one row per LLM judgement, judge.json a summary per task.
What this invocation asked of the backend (calls, cache hits, tokens spent) is in stage.json's
invocation_notes, so judge.json is the same bytes whether the judgements were made or cached.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from duplexeval_common.cli import check_kwargs
from duplexeval_common.errors import DuplexEvalError, SampleError
from duplexeval_common.ipus import segments_from_words
from duplexeval_common.jsonio import atomic_write_text, jsonl_text
from duplexeval_common.progress import log
from duplexeval_common.samples import SAMPLES, Inputs, Sample
from duplexeval_common.llm import ledger
from duplexeval_common.llm.engine import Judgement, cost
from duplexeval_common.llm.judges import LLMJudge
from duplexeval_common.llm.prompts import Parsed
from duplexeval_common.schemas import validate
from duplexeval_common.secrets import redact
from duplexeval_common.stage import SampleContext, StageContext

from . import judging as mtr
from .prompts import PROMPTS as prompts
from .schemas import SCHEMAS

BENCHMARK = "mtr"
LEDGER = ledger.LEDGER
DEFAULT_JUDGE = "none"
NOT_JUDGED = "not judged: the run's judge is none (JUDGE=openai for the paper's GPT-4o judge)"
BACKENDS = ("local-llm", "openai")  # and "none"
PROMPTS = {"instruction_following": mtr.IF, "safety": mtr.SAFETY, "dialogue_quality": mtr.DQ}
NO_SPEECH = "no model speech in the round"
ROUND = "round.json"
REFUSED = {
    "official-gpt": "judge 'official-gpt' is the FDB preset (gpt-4-turbo, the FDB prompt); in mtr mode use "
                    "'openai' (its defaults are each MTR prompt's official settings: gpt-4o), 'local-llm' or 'none'",
    "embedding-relevance": "judge 'embedding-relevance' rates FDB interruption replies only; in mtr mode use "
                           "'local-llm' (offline), 'openai' or 'none'",
}
EPS = 1e-6


# --- settings --------------------------------------------------------------------------------

def check(judge: str, judge_args: dict, registry) -> None:
    """One line for a judge or judge_args that the mtr mode cannot use (no network, no model)."""
    if judge in REFUSED:
        raise DuplexEvalError(REFUSED[judge])
    registry.entry(judge)  # an unknown name: one line listing the known ones
    if judge == "none":
        if judge_args:
            raise DuplexEvalError(f"judge 'none' takes no judge_args, got {', '.join(sorted(judge_args))}")
        return
    if judge not in BACKENDS:
        raise DuplexEvalError(f"judge {judge!r} cannot judge MTR rounds; in mtr mode use "
                              f"{', '.join(BACKENDS)} or none")
    if "prompt" in judge_args:
        raise DuplexEvalError("judge_args: prompt is not a setting in mtr mode (each task has its own: "
                              f"{', '.join(PROMPTS.values())}); remove it")
    cls = registry.load(judge)
    check_kwargs(f"judge {judge!r}", cls, {"prompt": None, **judge_args}, "judge_args")
    for prompt_id in PROMPTS.values():
        cls.check(prompt=prompts.get(prompt_id), **judge_args)


class _TaskBackend:
    """One task's view of a shared backend (the local model, loaded once): its own call count."""

    def __init__(self, shared):
        self._shared = shared
        self.calls = 0

    def __getattr__(self, name):
        return getattr(self._shared, name)

    def complete(self, *args, **kwargs):
        self.calls += 1
        return self._shared.complete(*args, **kwargs)


def build_judges(judge: str, judge_args: dict, registry) -> dict[str, LLMJudge]:
    """{task: its LLM judge}; the local backends share one model."""
    check(judge, judge_args, registry)
    if judge == "none":
        return {}
    judges = {task: mtr.judge_for(pid, judge, **judge_args) for task, pid in PROMPTS.items()}
    if judge == "local-llm":
        shared = judges["instruction_following"].engine.backend
        for j in judges.values():
            j.engine.backend = _TaskBackend(shared)
    return judges


# --- rounds ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Round:
    dialogue_id: str
    round: int
    task: str
    start_s: float
    end_s: float
    history: list
    user_lines: list


def _num(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _lines(key: str, where: str, rows, roles: bool) -> list[dict]:
    if not isinstance(rows, list):
        raise SampleError(key, f"{ROUND}: {where} must be a list")
    for i, r in enumerate(rows):
        ok = isinstance(r, dict) and _num(r.get("start")) and _num(r.get("end")) and isinstance(r.get("text"), str)
        if not ok or (roles and r.get("role") not in ("user", "assistant")):
            raise SampleError(key, f"{ROUND}: {where}[{i}] must be {{{'role, ' if roles else ''}start, end, text}}"
                                   + (" with role user or assistant" if roles else ""))
    return rows


def read_round(ctx: SampleContext) -> Round:
    """round.json, checked (its schema when there is one, and every field used here)."""
    obj = ctx.read_json(ROUND)
    bad = SCHEMAS.problem("round-sample", obj)
    if bad:
        raise SampleError(ctx.id, f"{ROUND}: {bad}")
    if not isinstance(obj, dict):
        raise SampleError(ctx.id, f"{ROUND} must be an object")
    k = obj.get("round")
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise SampleError(ctx.id, f"{ROUND}: round must be an integer of at least 1, got {k!r}")
    if not isinstance(obj.get("dialogue_id"), str) or not obj["dialogue_id"]:
        raise SampleError(ctx.id, f"{ROUND}: dialogue_id must be a name")
    if obj.get("task") != ctx.sample.task:
        raise SampleError(ctx.id, f"{ROUND}: task {obj.get('task')!r} is not the sample's ({ctx.sample.task})")
    s, e = obj.get("start_s"), obj.get("end_s")
    if not (_num(s) and _num(e) and 0 <= s < e):
        raise SampleError(ctx.id, f"{ROUND}: start_s and end_s must be times with 0 <= start_s < end_s, "
                                  f"got {s!r}, {e!r}")
    return Round(obj["dialogue_id"], k, obj["task"], float(s), float(e),
                 _lines(ctx.id, "history", obj.get("history"), True),
                 _lines(ctx.id, "user_lines", obj.get("user_lines"), False))


def model_words(ctx: SampleContext, start_s: float) -> list[dict]:
    """The round's model words: transcript.json's words at or after start_s, with text."""
    tr = ctx.read_json("transcript.json", "transcript")
    return [w for w in tr["words"] if float(w["start"]) >= start_s - EPS and str(w["text"]).strip()]


def fields_for(ctx: SampleContext) -> tuple[Round, dict | None]:
    """The round and its prompt's fields; None when the model said nothing in the round."""
    r = read_round(ctx)
    words = model_words(ctx, r.start_s)
    if not words:
        return r, None
    if r.task == "instruction_following":
        question = " ".join(t for t in (str(u["text"]).strip() for u in r.user_lines) if t)
        return r, {"question": question, "answer": " ".join(str(w["text"]).strip() for w in words)}
    if r.task == "safety":
        return r, {"response": " ".join(str(w["text"]).strip() for w in words)}
    segs = [{"speaker": "user" if h["role"] == "user" else "model", "start": h["start"], "end": h["end"],
             "text": str(h["text"]).strip()} for h in r.history]
    segs += [{"speaker": "user", "start": u["start"], "end": u["end"], "text": str(u["text"]).strip()}
             for u in r.user_lines]
    segs += [{"speaker": "model", "start": s["start"], "end": s["end"], "text": s["text"]}
             for s in segments_from_words(words)]
    return r, {"transcript": mtr.transcript(segs), "turn_start": r.start_s, "turn_end": r.end_s}


# --- the stage -------------------------------------------------------------------------------

@dataclass
class MTRJudging:
    """The task's state between check, select, setup, the samples and finalize."""
    judge_name: str
    judge_args: dict
    registry: object = None
    judges: dict[str, LLMJudge] = field(default_factory=dict)
    prefetched: dict[str, Judgement] = field(default_factory=dict)
    made: dict[str, Judgement] = field(default_factory=dict)
    ready: bool = False

    def check(self) -> None:
        check(self.judge_name, self.judge_args, self.registry)

    def select(self, inputs: Inputs) -> list[Sample]:
        return [s for s in inputs.samples() if s.task in PROMPTS and inputs.find(s, ROUND) is not None]

    def setup(self) -> None:
        if not self.ready:
            self.judges = build_judges(self.judge_name, self.judge_args, self.registry)
            self.ready = True

    def prefetch(self, inputs: Inputs, samples: list[Sample], output: Path, config: dict) -> None:
        """Judge, concurrently and task by task, every round of this run that needs it."""
        for task, judge in self.judges.items():
            keys, items = [], []
            for s in samples:
                if s.task != task:
                    continue
                final = Path(output) / SAMPLES / s.subset / s.id
                if ledger.complete(final) or inputs.upstream_failure(s):
                    continue
                try:
                    _, fields = fields_for(SampleContext(s, inputs, config, final))
                except (SampleError, DuplexEvalError):
                    continue  # the sample's own step reports it
                if fields is not None:
                    keys.append(s.key)
                    items.append(fields)
            if items:
                log(f"[judge] {task}: judging {len(items)} round{'' if len(items) == 1 else 's'} with "
                    f"{judge.name} ({judge.model}), up to {judge.engine.max_concurrency} at once")
                self.prefetched.update(zip(keys, judge.judge_all(items)))

    def process(self, ctx: SampleContext) -> None:
        if self.judge_name == "none":
            r = read_round(ctx)
            ctx.write_json("judgement.json", skipped_record(r), SCHEMAS["judgement"])
            return
        r, fields = fields_for(ctx)
        judge = self.judges[r.task]
        extra = {"round": r.round, "dialogue_id": r.dialogue_id, "task": r.task}
        if fields is None:
            ctx.write_json("judgement.json", redact({**silent_record(judge), **extra, "reason": NO_SPEECH}),
                           SCHEMAS["judgement"])
            return
        j = self.prefetched.pop(ctx.id, None)
        if j is None:  # not prefetched (its files changed since, or a sharded run): judge it now
            try:
                j = judge.judge(fields)
            except DuplexEvalError as exc:  # a fatal request error fails this sample with its reason
                raise SampleError(ctx.id, f"judge: {exc}") from None
        self.made[ctx.id] = j
        if j.status == "error":
            raise SampleError(ctx.id, f"judge: {j.error}")
        ctx.write_json("judgement.json", redact({**j.record(), **extra}), SCHEMAS["judgement"])

    # --- finalize ----------------------------------------------------------------------------

    def finalize(self, sctx: StageContext) -> None:
        if self.judge_name == "none":
            sctx.write_json("judge.json", {
                "benchmark": BENCHMARK, "judge": "none", "model": None, "official": False,
                "label": "judge: none", "settings": {},
                "note": "nothing judged: each instruction-following, safety and dialogue-quality round has a "
                        "judgement.json with status skipped (reported as not judged)"}, "judge")
            return
        ok = sorted(s.key for s in sctx.ok_samples() if s.task in PROMPTS)
        records = ledger.records(sctx.output, ok)
        rows_all: list[dict] = []
        tasks, usage = {}, {}
        for task, judge in self.judges.items():
            recs = {k: v for k, v in records.items() if v.get("task") == task}
            rows = self._ledger_rows(judge, task, recs)
            rows_all += rows
            tasks[task] = _task_summary(judge, rows, recs)
            usage[task] = ledger.invocation_usage(judge)
        rows_all.sort(key=lambda row: row["sample"])
        for row in rows_all:
            validate("judge-ledger", row, LEDGER)
        atomic_write_text(sctx.output / LEDGER, jsonl_text(rows_all))
        first = next(iter(self.judges.values()))
        official = all(j.official for j in self.judges.values())
        label = "official" if official else f"judge: {first.name} ({first.model})"
        sctx.write_json("judge.json", redact({
            "benchmark": BENCHMARK, "judge": first.name, "model": first.model, "official": official,
            "settings": {t: j.settings for t, j in self.judges.items()}, "label": label,
            "run_settings": first.run_settings, "ledger": LEDGER, "tasks": tasks}), "judge")
        sctx.invocation["judge_usage"] = {
            **{k: sum(u[k] for u in usage.values()) for k in ("calls", "cache_hits", "tokens_in", "tokens_out")},
            "cost": ledger.sum_cost([u["cost"] for u in usage.values()]), "tasks": usage}

    def _ledger_rows(self, judge: LLMJudge, task: str, records: dict[str, dict]) -> list[dict]:
        """One row per LLM judgement of the task: the ok samples' records that were sent (this
        run's or earlier ones') and this run's failed requests. Latency: this run's, else the
        cached one."""
        names = set(ledger.FIELDS)
        rows = {}
        for key, rec in records.items():
            if rec.get("request_hash") is None:  # a silent round: nothing was sent
                continue
            latency = ledger.cached_latency(judge, rec["request_hash"], self.made.get(key))
            rows[key] = {"sample": key, **{k: v for k, v in rec.items() if k in names}, "latency_s": latency}
        for key, j in self.made.items():
            if j.status == "error" and key not in rows and j.prompt["id"] == judge.prompt.id:
                rows[key] = redact(j.ledger_row(key))
        return [rows[k] for k in sorted(rows)]


def skipped_record(r) -> dict:
    """The judgement.json of a round the judge `none` does not judge: status "skipped", no score
    (the aggregator counts it as observed but not judged)."""
    return {"request_hash": None, "prompt": prompts.get(PROMPTS[r.task]).identity(), "model": None,
            "status": "skipped", "score": None, "reason": NOT_JUDGED,
            "round": r.round, "dialogue_id": r.dialogue_id, "task": r.task}


def silent_record(judge: LLMJudge) -> dict:
    """Judgement.record()'s fields for a round whose model said nothing: not sent, scored 0
    (instruction following: does not follow; safety: not harmful; dialogue quality: meaningless)."""
    p = judge.prompt
    detail = {"rescaled": 0.0} if p.id == mtr.DQ else None
    return {"request_hash": None, "prompt": p.identity(), "model": judge.model, "returned_model": None,
            "seed": judge.engine.seed, "temperature": judge.engine.temperature,
            "base_url": judge.engine.backend.base_url, "status": "ok", "attempts": 0, "requests": 0,
            "tokens_in": None, "tokens_out": None, "raw": None, "score": 0, "score_detail": detail, "error": None}


def _task_summary(judge: LLMJudge, rows: list[dict], records: dict[str, dict]) -> dict:
    p = judge.prompt
    silent = [r for r in records.values() if r.get("reason") == NO_SPEECH]
    parsed = [p.parse(r["raw"]) for r in rows if r["status"] == "ok"]
    parsed = [x for x in parsed if x is not None] + [Parsed(0, extra=r.get("score_detail") or {})
                                                    for r in silent]
    scores = {"rounds": len(records), "judged": len(rows), "scored": len(parsed),
              "unparsed": sum(1 for r in rows if r["status"] == "unparsed"),
              "errors": sum(1 for r in rows if r["status"] == "error"),
              "no_reply": len(silent), **p.parser.summarize(parsed),
              "note": "rounds without model speech score 0 without a request (no_reply); unparsed and "
                      "failed judgements are excluded from the mean and counted here"}
    t_in = sum(r["tokens_in"] or 0 for r in rows)
    t_out = sum(r["tokens_out"] or 0 for r in rows)
    return {"prompt": {**p.identity(), "source": p.source, "parser": p.parser_name},
            "official": judge.official, "scores": scores,
            "usage": {"judgements": len(rows), "tokens_in": t_in, "tokens_out": t_out,
                      "cost": cost(t_in, t_out, judge.price), "price": judge.price}}


def task(config: dict, judges) -> MTRJudging:
    """The hook: the task for this stage's settings, given the judge component's registry."""
    return MTRJudging(config.get("judge", DEFAULT_JUDGE), dict(config.get("judge_args") or {}), judges)
