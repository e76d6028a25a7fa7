"""The turn-segmenter stage: per dialogue segmentation.json, then the stage-level files.

`turn-segmenter run --input DIR... --output DIR --config FILE` (the stage contract of
duplexeval_common.stage). Config "mode": "samples" makes the benchmark's samples from the
segmentations instead (its `segment` hook's samples_stage, e.g. MTR-DuplexBench's dialogue-quality
round samples). In the default mode "segment", every sample of the inputs is a dialogue with user.json and
model.json. A dialogue whose inputs are bad, or whose LLM runs fail, fails alone with one line
naming it; the others are kept. A missing API key or a bad setting stops the stage (exit 2)
before any dialogue is read.

At the end (finalize), over the dialogues that are ok, in sample order:
  semantic_turned_time.jsonl   the released data's format, one line per dialogue
                               (schemas/turn-segmenter-release-row.schema.json)
  turn-segmenter-ledger.jsonl  the LLM segmenter's ledger: one judge-ledger row per run
                               (schemas/judge-ledger.schema.json, plus `run`); latency_s is the
                               wall time of runs made by this invocation, else null
"""

from __future__ import annotations

from duplexeval_common.jsonio import atomic_write_text, jsonl_text, read_json
from duplexeval_common.schemas import validate
from duplexeval_common.stage import Stage, StageContext

from . import __version__, llm, settings
from .segment import FILE, State, process, release_row

RELEASE = "semantic_turned_time.jsonl"
LEDGER = "turn-segmenter-ledger.jsonl"


def make_stage(config: dict) -> Stage:
    resolved = settings.resolve(config)
    if resolved["mode"] == "samples":
        hooks = llm.hook(config).samples_stage(resolved)
        return Stage("turn-segmenter", __version__, hooks.process, finalize=hooks.finalize, select=hooks.select,
                     workers=hooks.workers)
    state = State(resolved, hook=llm.hook(config) if resolved["segmenter"] == "llm" else None)

    def check(_c: dict) -> None:
        if state.settings["segmenter"] == "llm":
            llm.check(state.settings["llm"], state.hook)

    def setup(_c: dict) -> None:
        if state.settings["segmenter"] == "llm":
            state.judge = llm.build(state.settings["llm"], state.hook)
            state.llm_record = llm.settings(state.judge, state.settings["llm"])

    def finalize(sctx: StageContext) -> None:
        release, ledger = [], []
        for s in sctx.ok_samples():
            path = sctx.output / "samples" / s.subset / s.id / FILE
            rec = read_json(path)
            release.append(validate("turn-segmenter-release-row", release_row(s.id, s.key, rec), s.key))
            made = {j.request_hash: j for j in state.ledger.get(s.key, [])}
            for r in (rec.get("llm") or {}).get("runs", []):
                j = made.get(r["request_hash"])
                row = {"sample": s.key, "run": r["run"],
                       **{k: v for k, v in r.items() if k != "run"},
                       "latency_s": j.latency_s if j is not None else None}
                ledger.append(validate("judge-ledger", row, s.key))
        atomic_write_text(sctx.output / RELEASE, jsonl_text(release))
        if state.settings["segmenter"] == "llm":
            atomic_write_text(sctx.output / LEDGER, jsonl_text(ledger))
            if state.judge is not None:
                sctx.invocation["llm_usage"] = state.judge.engine.usage()

    return Stage("turn-segmenter", __version__, lambda ctx: process(ctx, state), finalize=finalize,
                 setup=setup, check=check, workers=state.settings["workers"])
