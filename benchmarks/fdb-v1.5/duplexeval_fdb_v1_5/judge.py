"""The judge stage's task for Full-Duplex-Bench v1.5 (its `judge` hook): the behaviour label of
every sample, from its four transcripts (clean and overlapped input, clean and overlapped
output), as upstream's eval_behavior.py asks it (score/behavior.py: the request, the parser, the
seed + 1 re-ask).

One judgement per sample (duplexeval_common.llm.judging: concurrency, the cache, judgement.json,
judge.json, the ledger). Beside judgement.json a parsed reply gets content_tag.json, the object
upstream writes (the reply's first JSON object holding "behaviour"); an unparsed one none (the
scorer counts the sample as not labelled). The official judge is `official-gpt` (the prompt's
official settings: gpt-4o-2024-08-06, seed 1); `local-llm` (SmolLM2, offline, its answer
constrained to one of the four labels) and any OpenAI-compatible endpoint (`openai`) are
labelled not official; `none` labels nothing.
"""

from __future__ import annotations

from duplexeval_common.errors import SampleError
from duplexeval_common.llm.judging import PerSampleJudging
from duplexeval_common.secrets import redact
from duplexeval_common.stage import SampleContext

from .prompts import BEHAVIOR, PROMPTS
from .schemas import SCHEMAS
from .score import behavior
from .tasks import TASKS

DEFAULT_JUDGE = "local-llm"


class BehaviorJudging(PerSampleJudging):
    default_judge = DEFAULT_JUDGE
    prompts = PROMPTS
    default_prompt = BEHAVIOR
    fields = tuple(behavior.FILES)
    tasks = tuple(TASKS)
    judgement_schema = SCHEMAS["judgement"]
    no_item = "no transcripts to judge"
    what = "sample"

    def sample_fields(self, ctx: SampleContext) -> dict | None:
        docs = {}
        for name in behavior.FILES.values():
            doc = ctx.read_json(name, "output")
            docs[name] = doc
        return behavior.prompt_fields(docs)

    def judge_plain(self, ctx: SampleContext, fields: dict, record: dict) -> None:
        if self.name != "none":
            raise SampleError(ctx.id, f"judge {self.name!r} gives no behaviour labels (use an LLM judge: "
                                      "official-gpt, openai or local-llm, or none)")
        ctx.write_json("judgement.json", redact({**record, "behaviour": None, "reason": "not judged (judge none)"}),
                       SCHEMAS["judgement"])

    def write_llm(self, ctx: SampleContext, record: dict, j) -> None:
        ok = j.status == "ok"
        tag = j.parsed.extra["content_tag"] if ok else None
        reason = "" if ok else f"unparsed: no reply in the expected format after {j.attempts} attempt(s)"
        ctx.write_json("judgement.json", redact({**record, "behaviour": behavior.label(tag) if ok else None,
                                                 "reason": reason, "raw": {"answer": j.raw}, "llm": j.record()}),
                       SCHEMAS["judgement"])
        if ok:
            ctx.write_json("content_tag.json", tag)

    def plain_summary(self, records: dict[str, dict]) -> dict:
        return {"judged": 0, "scored": 0, "note": "judge none: no sample labelled"}


def task(config: dict, judges) -> BehaviorJudging:
    """The hook: the task for this stage's settings, given the judge component's registry."""
    return BehaviorJudging(config, judges)
