"""The judge stage's task for Full-Duplex-Bench v1.0 (its `judge` hook): the reply after each user
interruption, rated 0-5 on the official scale.

Selected: the user_interruption samples; one judgement each (duplexeval_common.llm.judging says
how the stage judges, caches, and writes judgement.json, judge.json and the ledger). Beside
judgement.json, a rated reply gets the official rating.json ({"analysis", "rating": int 0-5}); an
unparsed one none (the scorer counts it as unrated). A sample without a reply is not sent. An LLM
judge's prompt: `prompt` in judge_args, default fdb-v1-interruption.
"""

from __future__ import annotations

import math

from duplexeval_common.llm.judging import PerSampleJudging
from duplexeval_common.secrets import redact
from duplexeval_common.stage import SampleContext

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


class InterruptionJudging(PerSampleJudging):
    default_judge = DEFAULT_JUDGE
    prompts = PROMPTS
    default_prompt = INTERRUPTION
    fields = FIELDS
    tasks = ("user_interruption",)
    judgement_schema = SCHEMAS["judgement"]
    scale = [0, 5]
    no_item = NO_REPLY
    what = "reply"

    def sample_fields(self, ctx: SampleContext) -> dict | None:
        return sample_fields(ctx)

    def no_item_record(self) -> dict:
        return {"rating": None, "reason": NO_REPLY}

    def judge_plain(self, ctx: SampleContext, fields: dict, record: dict) -> None:
        r = self.judge.rate(fields["interrupt"], fields["reply"])
        ctx.write_json("judgement.json", redact({**record, "rating": r.rating, "reason": r.analysis, "raw": r.raw}),
                       SCHEMAS["judgement"])
        if r.rating is not None:
            ctx.write_json("rating.json", {"analysis": r.analysis, "rating": int(math.floor(r.rating + 0.5))},
                           SCHEMAS["rating"])

    def write_llm(self, ctx: SampleContext, record: dict, j) -> None:
        ok = j.status == "ok"
        reason = (j.parsed.analysis or "") if ok else \
            f"unparsed: no reply in the expected format after {j.attempts} attempt(s); excluded from the mean"
        ctx.write_json("judgement.json", redact({**record, "rating": j.score if ok else None, "reason": reason,
                                                 "raw": {"answer": j.raw}, "llm": j.record()}),
                       SCHEMAS["judgement"])
        if ok:
            ctx.write_json("rating.json", {"analysis": j.parsed.analysis or "", "rating": int(j.score)},
                           SCHEMAS["rating"])

    def plain_summary(self, records: dict[str, dict]) -> dict:
        rated = [r["rating"] for r in records.values() if r.get("rating") is not None]
        return {"judged": len(rated), "scored": len(rated),
                "no_reply": sum(1 for r in records.values() if r.get("reason") == NO_REPLY),
                "mean": round(sum(rated) / len(rated), 6) if rated else None}


def task(config: dict, judges) -> InterruptionJudging:
    """The hook: the task for this stage's settings, given the judge component's registry."""
    return InterruptionJudging(config, judges)
