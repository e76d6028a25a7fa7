"""Full-Duplex-Bench v2-style live sessions as a duplexeval benchmark package: an automated
examiner converses with the model for a fixed session length, stage by stage through a task's
goals (daily requests, corrections, entity tracking, safety), and the recording is scored for
turn-taking: how often and how fast the model answers the examiner, and how much the two talk
over each other (arXiv 2510.07838; DanielLin94144/Full-Duplex-Bench `v2/`).

Ours is not upstream's protocol: the examiner is an engine the runner core drives on the model's
own clock (in lockstep with an in-process model, so such a session is deterministic; in real time
with a server), and its numbers are not official (README.md beside this package). This module is the declaration the `duplexeval.benchmarks`
entry point names; it imports nothing heavy.
"""

from duplexeval_common.benchmarks import Benchmark, Headline, Option, datasets_beside, tasks_of

from .tasks import SUMMARIES, TASKS

NAME = "fdb-v2"

BENCHMARK = Benchmark(
    name=NAME,
    title="Full-Duplex-Bench v2 (live sessions, not official)",
    summary="live sessions with an automated examiner (daily, correction, entity tracking, safety): "
            "response rate and latency, overlap, talk-over, goals reached",
    package=__name__,
    datasets=datasets_beside(
        __file__,
        ("fdb-v2-mini", "4 tasks written for duplexeval, one per kind"),
        ("fdb-v2-builtin", "24 tasks written for duplexeval, 6 per kind"),
    ),
    default_dataset="fdb-v2-mini",
    tasks=tasks_of(TASKS, SUMMARIES),
    subset_tasks=tuple((t, t) for t in TASKS),
    default_judge="none",
    judges=("none", "local-llm", "openai", "official"),
    judge_notes={
        "local-llm": "note: judge local-llm (SmolLM2-135M) scores the judged column with duplexeval's own prompts: "
                     "a smoke test, not official",
        "openai": "note: judge openai scores the judged column with duplexeval's own prompts: not official "
                  "(JUDGE=official with your eval_prompts.json for upstream's)",
    },
    options=(
        Option("response_window_s", float, 5.0, "an examiner turn counts as answered when the model starts "
               "speaking within this many seconds after it ends", low=0.1, high=60.0),
        Option("preset", str, "slow", "the examiner's preset: slow (waits for the model and yields when it "
               "talks) or fast (keeps its own pace)", choices=("slow", "fast")),
        Option("duration_s", float, 45.0, "the session length in seconds (both channels)", low=5.0, high=600.0),
        Option("epochs", int, 1, "each task run this many times, the k-th with seed k - 1 added to the run's "
               "(the examiner's and the model's); the spread over epochs is reported beside the numbers",
               low=1, high=20),
        Option("examiner_llm", str, "local", "the examiner's LLM: local (SmolLM2-135M, offline) or openai (any "
               "OpenAI-compatible chat endpoint: examiner_llm_url, examiner_llm_model, its key in "
               "examiner_api_key_env)", choices=("local", "openai")),
        Option("examiner_llm_url", str, "", "examiner_llm openai: the endpoint's base URL (empty: "
               "$OPENAI_BASE_URL or OpenAI's)"),
        Option("examiner_llm_model", str, "gpt-4o-mini", "examiner_llm openai: the model"),
        Option("examiner_api_key_env", str, "OPENAI_API_KEY", "examiner_llm openai: the environment variable "
               "holding its key (passed to the runner stage by name, never written)"),
    ),
    headline=tuple(h for t in TASKS for h in (
        Headline(t, "unified", "response_rate", True),
        Headline(t, "unified", "response_latency_s", False),
        Headline(t, "unified", "overlap_rate", False),
    )),
    components=("tts-synth", "asr-aligner", "judge", "aggregator"),
    dataset_options=("epochs",),
    hooks={
        "plan": ".plan:plan",
        "summary": ".plan:summary",
        "missing": ".plan:missing",
        "dataset": ".dataset:make_stage",
        "importers": ".importers:IMPORTERS",
        "asr": ".asr:targets",
        "judge": ".judge:task",
        "prompts": ".prompts:PROMPTS",
        "score": ".score.stage",
        "report": ".report",
    },
)
