"""The LLM segmentation (Algorithm 1, step 2) through the one LLM stack (duplexeval_common.llm).

The prompt, the transcript's rendering and the runs are the benchmark's (its `segment` hook, e.g.
MTR-DuplexBench's versioned prompt mtr-turn-segmentation): run k of a dialogue is sent with seed
first_seed + k, so the runs are independent requests and cache entries, through the shared client,
cache, retries and ledger rows. The transcript is the two channels' ASR segments sorted by start
time (user lines before model lines at equal starts) and rendered by the hook's `transcript`.
"""

from __future__ import annotations

import threading
from typing import Any

from duplexeval_common.cli import check_kwargs
from duplexeval_common.errors import DuplexEvalError, SampleError
from duplexeval_common.secrets import redact

BACKENDS = ("openai", "local-llm")


def hook(config: dict):
    """The benchmark's `segment` hook (a one-line error naming the benchmark when it has none)."""
    from duplexeval_common import benchmarks
    return benchmarks.of_config(config, "turn-segmenter").hook("segment")


def _cls(backend: str):
    if backend == "openai":
        from duplexeval_common.llm.judges import OpenAIJudge
        return OpenAIJudge
    if backend == "local-llm":
        from duplexeval_common.llm.local import LocalLLMJudge
        return LocalLLMJudge
    raise DuplexEvalError(f"turn-segmenter: llm.backend must be one of {', '.join(BACKENDS)}, not {backend!r}")


def check(llm: dict, seg) -> None:
    """The LLM settings, without network or model: backend, arguments, the prompt (seg: the
    benchmark's segment hook)."""
    args = dict(llm.get("args") or {})
    if "prompt" in args:
        raise DuplexEvalError(f"turn-segmenter: llm.args.prompt is not a setting (the prompt is {seg.SEGMENT})")
    backend = llm.get("backend", "openai")
    cls = _cls(backend)
    check_kwargs(f"turn-segmenter: llm backend {backend!r}", cls, {"prompt": None, **args}, "llm.args")
    cls.check(prompt=seg.PROMPTS.get(seg.SEGMENT), **args)


def build(llm: dict, seg):
    """The judge for the segmentation prompt (a missing API key is a one-line error here)."""
    check(llm, seg)
    return _cls(llm.get("backend", "openai"))(prompt=seg.PROMPTS.get(seg.SEGMENT), **dict(llm.get("args") or {}))


def settings(judge, llm: dict) -> dict:
    """What the segmentation.json records of the LLM: backend, model, the judge's settings (base
    URL without credentials, prompt identity, seed, temperature, parse attempts) and the
    arguments given, never a key."""
    args = {k: v for k, v in (llm.get("args") or {}).items() if k != "api_key"}
    out = {"backend": llm.get("backend", "openai"), "model": judge.model,
           "judge_settings": dict(getattr(judge, "settings", {}) or {}), "args": args,
           "official": bool(judge.official)}
    return redact(out)


class Fatal:
    """A fatal answer (a refused key, an unknown model) stops every later dialogue's requests:
    each then fails with the same one line, and none is sent again."""

    def __init__(self) -> None:
        self.reason: str | None = None
        self.lock = threading.Lock()


def _line(text: str | None, n: int = 80) -> str:
    t = " ".join((text or "").split())
    return repr(t[:n] + ("..." if len(t) > n else ""))


def run(seg, judge, transcript: str, span: tuple[float, float], runs: int, first_seed: int, min_parsed: int,
        key: str, fatal: Fatal) -> tuple[list[Any], list[list[tuple[float, float]]]]:
    """The `runs` segmentations of one dialogue (seg: the benchmark's segment hook): (judgements,
    each parsed run's turns). A failed request, or fewer than min_parsed parsed runs, fails the
    dialogue with one line."""
    from duplexeval_common.llm.client import CallError
    if fatal.reason:
        raise SampleError(key, fatal.reason)
    try:
        js = seg.segment_turns(judge, transcript, span[0], span[1], runs=runs, first_seed=first_seed)
    except CallError as exc:  # fatal: the same for every request
        with fatal.lock:
            fatal.reason = fatal.reason or f"LLM segmentation stopped: {exc}"
        raise SampleError(key, fatal.reason) from None
    for k, j in enumerate(js):
        if j.status == "error":
            raise SampleError(key, f"LLM segmentation run {k + 1} of {runs} failed: {j.error}")
    parsed = [j for j in js if j.status == "ok"]
    if len(parsed) < min_parsed:
        k, bad = next((k, j) for k, j in enumerate(js) if j.status != "ok")
        raise SampleError(key, f"LLM segmentation run {k + 1} of {runs}: no JSON turns in the reply after "
                               f"{bad.attempts} attempt(s) ({_line(bad.raw)}); {len(parsed)} of {runs} "
                               f"runs parsed, {min_parsed} needed")
    # one list per run, an unparsed run's empty, so that run numbers stay those of the ledger
    turns = [[(t["start"], t["end"]) for t in j.parsed.value["filtered_turn"]] if j.status == "ok" else []
             for j in js]
    return js, turns
