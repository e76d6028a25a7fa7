"""Per-sample judging of interruption replies.

Writes judgement.json (our record, any scale detail) and, when there is a
reply to rate, the official rating.json ({"analysis", "rating": int 0-5}).
"""

from __future__ import annotations

import math

from duplexeval_common.samples import Inputs, Sample
from duplexeval_common.stage import SampleContext, StageContext

from .judges import Judge


def interruption_samples(inputs: Inputs, config: dict) -> list[Sample]:
    return [s for s in inputs.samples() if s.task == "user_interruption"]


def judge_sample(ctx: SampleContext, judge: Judge) -> None:
    ann = ctx.read_json("interrupt.json", "interrupt")[0]
    reply = ctx.read_json("output.json", "output")["text"].strip()
    record = {"judge": judge.name, "model": judge.model, "official": judge.official,
              "scale": [0, 5], "settings": judge.settings}
    if not reply:
        ctx.write_json("judgement.json", {**record, "rating": None, "reason": "no reply after the interruption"},
                       "judgement")
        return
    r = judge.rate(ann["context"], ann["interrupt"], reply)
    ctx.write_json("judgement.json", {**record, "rating": r.rating, "reason": r.analysis, "raw": r.raw},
                   "judgement")
    if r.rating is not None:
        ctx.write_json("rating.json", {"analysis": r.analysis, "rating": int(math.floor(r.rating + 0.5))},
                       "rating")


def write_summary(sctx: StageContext, judge: Judge) -> None:
    label = "official" if judge.official else f"judge: {judge.name}" + (f" ({judge.model})" if judge.model else "")
    sctx.write_json("judge.json", {"judge": judge.name, "model": judge.model, "official": judge.official,
                                   "settings": judge.settings, "label": label}, "judge")
