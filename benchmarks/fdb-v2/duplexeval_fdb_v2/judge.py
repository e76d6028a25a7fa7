"""The judge stage of fdb-v2 (its `judge` hook): the judged column, one judgement.json per session.

Judges (`--judge`):
- `local-llm` (SmolLM2 offline) and `openai` (any OpenAI-compatible endpoint): duplexeval's own
  prompts (prompts.py): per examinee segment a turn-taking fluency and an instruction-following
  score, per session a task score (correction, entity tracking, safety; none for daily), each
  one number 1-5. A segment is a run of the model's ASR words (transcript.json) split where a gap
  exceeds 1.2 s, as upstream's asr_batch.py segments, in the first 120 s. Not official.
- `official`: upstream's one consolidated prompt per session (official.py), built from the user's
  eval_prompts.json (the plan embeds its sections and sha256 in this stage's judge_args,
  `official_prompts`), sent as one user message to gemini-2.5-pro (temperature 0.2) through an
  OpenAI-compatible endpoint (Gemini's, by default); labelled official only with that model.

judgement.json: {judge, model, official, status (ok | unparsed), events [[[start, end], fluency,
instruction], ...], task_score, segments, requests: [Judgement.record(), ...]}. A failed request
fails the session (a rerun asks again); an unparsed reply makes the session `unparsed` (the scorer
counts it, never averages it).
"""

from __future__ import annotations

from duplexeval_common.errors import DuplexEvalError, SampleError
from duplexeval_common.hashing import sha256_bytes
from duplexeval_common.ipus import segments_from_words
from duplexeval_common.llm.judges import OpenAIJudge
from duplexeval_common.llm.prompts import Parsed, Parser, Prompt
from duplexeval_common.secrets import redact
from duplexeval_common.stage import SampleContext

from . import official as off
from .prompts import FLUENCY, INSTRUCTION, PROMPTS, TASK_PROMPTS

GAP_S = 1.2
JUDGES = ("local-llm", "openai", "official")


def official_prompt(op: dict) -> Prompt:
    """The official request as a Prompt: one user message, the whole consolidated text."""
    def parse(text):
        got = off.parse(text)
        return None if got is None else Parsed(got["task_score"], extra=got)
    parser = Parser(parse, lambda ps: {}, "upstream's output format (official.parse)")
    settings = {"model": off.MODEL, "seed": None, "temperature": off.TEMPERATURE}
    return Prompt(id="fdb-v2-official", version=1, sha256=op["sha256"], template=op.get("file", "eval_prompts.json"),
                  fields=("prompt",), strip=(), parser_name="fdb-v2-official", scale=(1, 5), defaults=settings,
                  official=settings, source="the user's copy of Full-Duplex-Bench v2/eval/eval_prompts.json "
                  "(sha256 recorded), in upstream's consolidated layout", description="fdb-v2 official judge",
                  local={}, messages_template=(("user", "{prompt}"),), parser=parser)


def words_of(ctx: SampleContext, name: str) -> list[dict]:
    doc = ctx.read_json(name)
    words = doc.get("words") if isinstance(doc, dict) else None
    if not isinstance(words, list):
        raise SampleError(ctx.id, f"{name}: no words list")
    return [{"start": float(w["start"]), "end": float(w.get("end", w["start"])), "text": str(w["text"]).strip()}
            for w in words if str(w.get("text", "")).strip() and float(w.get("end", w["start"])) <= off.MAX_TIME_S]


def segments(words: list[dict]) -> list[dict]:
    return [{"start": s["start"], "end": s["end"], "text": s["text"]} for s in segments_from_words(words, GAP_S)]


def conversation(a: list[dict], b: list[dict]) -> str:
    rows = sorted([(s["start"], "Examiner", s) for s in a] + [(s["start"], "Examinee", s) for s in b],
                  key=lambda r: (r[0], r[1]))
    return "\n".join(f"[{s['start']:.2f}-{s['end']:.2f}] {who}: {s['text']}" for _, who, s in rows) or "(nothing said)"


def session(ctx: SampleContext) -> dict:
    live = ctx.read_json("live.json")
    goals = [str(g.get("goal", "")) for g in (live.get("examiner") or {}).get("goals") or [] if isinstance(g, dict)]
    a_words, b_words = words_of(ctx, "input_transcript.json"), words_of(ctx, "transcript.json")
    return {"task": ctx.sample.task or ctx.sample.subset, "goals": goals, "a_words": a_words, "b_words": b_words,
            "a": segments(a_words), "b": segments(b_words)}


class V2Judging:
    def __init__(self, config: dict, registry):
        self.name = config.get("judge") or "none"
        self.args = dict(config.get("judge_args") or {})
        self.official_prompts = self.args.pop("official_prompts", None)
        self.registry = registry
        self.judge = None

    def _build_args(self):
        if self.name == "official":
            if not isinstance(self.official_prompts, dict):
                raise DuplexEvalError("judge official: the stage has no official_prompts (plan it with "
                                      "--judge-arg prompts=PATH to your eval_prompts.json)")
            args = {"model": off.MODEL, "base_url": off.GEMINI_BASE_URL, "api_key_env": "GEMINI_API_KEY",
                    **self.args}
            return OpenAIJudge, {**args, "prompt": official_prompt(self.official_prompts)}
        if self.name not in ("local-llm", "openai"):
            raise DuplexEvalError(f"judge {self.name!r} cannot judge fdb-v2 sessions (use local-llm, openai, "
                                  "official or none)")
        if "prompt" in self.args:
            raise DuplexEvalError("judge_args: prompt is not a setting of fdb-v2 (each score has its own prompt)")
        return self.registry.load(self.name), {**self.args, "prompt": PROMPTS.get(FLUENCY)}

    def check(self) -> None:
        cls, args = self._build_args()
        cls.check(**args)

    def select(self, inputs):
        return list(inputs.samples())

    def setup(self) -> None:
        if self.judge is None:
            cls, args = self._build_args()
            self.judge = cls(**args)

    def prefetch(self, inputs, samples, output, config) -> None:
        pass

    def process(self, ctx: SampleContext) -> None:
        s = session(ctx)
        j = self.judge
        if self.name == "official":
            text = off.render(self.official_prompts["sections"], s["task"], s["goals"],
                              " ".join(w["text"] for w in s["a_words"]), " ".join(w["text"] for w in s["b_words"]),
                              s["b_words"])
            made = [j.engine.judge({"prompt": text})]
            self._fail(ctx, made)
            ok = made[0].status == "ok"
            got = made[0].parsed.extra if ok else {"events": [], "task_score": None}
            events, task_score = got["events"], got["task_score"]
        else:
            goals = "\n".join(f"T{i + 1}: {g}" for i, g in enumerate(s["goals"])) or "(none)"
            conv = conversation(s["a"], s["b"])
            items = [{"goals": goals, "conversation": conv,
                      "segment": f"[{b['start']:.2f}-{b['end']:.2f}] Examinee: {b['text']}"} for b in s["b"]]
            fl = j.engine.judge_all(items, PROMPTS.get(FLUENCY))
            inst = j.engine.judge_all(items, PROMPTS.get(INSTRUCTION))
            tj = ([j.engine.judge({"goals": goals, "conversation": conv}, PROMPTS.get(TASK_PROMPTS[s["task"]]))]
                  if s["task"] in TASK_PROMPTS else [])
            made = fl + inst + tj
            self._fail(ctx, made)
            ok = all(m.status == "ok" for m in made)
            events = [[[round(b["start"], 3), round(b["end"], 3)], f.score, i.score]
                      for b, f, i in zip(s["b"], fl, inst)]
            task_score = tj[0].score if tj else None
        ctx.write_json("judgement.json", redact({
            "judge": self.name, "model": j.model, "official": bool(j.official), "task": s["task"],
            "status": "ok" if ok else "unparsed", "events": events, "task_score": task_score,
            "segments": s["b"], "requests": [m.record() for m in made]}))

    @staticmethod
    def _fail(ctx, made) -> None:
        for m in made:
            if m.status == "error":
                raise SampleError(ctx.id, f"judge: {m.error}")

    def finalize(self, sctx) -> None:
        if self.judge is None:
            self.setup()
        j = self.judge
        label = "official" if j.official else f"judge: {j.name if self.name != 'official' else 'official'} ({j.model})"
        extra = {"prompts_sha256": self.official_prompts["sha256"]} if self.name == "official" else {}
        sctx.write_json("judge.json", redact({"judge": self.name, "model": j.model,
                                              "official": bool(j.official), "label": label,
                                              "settings": {**j.settings, **extra}}), "judge")


def task(config: dict, judges) -> V2Judging:
    return V2Judging(config, judges)
