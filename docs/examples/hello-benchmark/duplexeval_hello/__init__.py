"""hello: the smallest benchmark worth the name (docs/adding-a-benchmark.md walks through it).

One task, `speaks_in_time`: does the model start speaking within 2 s after the user's turn ends?
Its declaration is this module, found through the `duplexeval.benchmarks` entry point of its
pyproject.toml; every other part is a hook, imported only by the component that runs it.
"""

from pathlib import Path

from duplexeval_common.benchmarks import Benchmark, Dataset, Headline, Option, Task

BENCHMARK = Benchmark(
    name="hello",
    title="hello (example benchmark)",
    summary="does the model speak within 2 s after the user's turn ends?",
    package=__name__,
    datasets=(Dataset("hello-mini", Path(__file__).resolve().parent.parent / "datasets" / "hello-mini",
                      "three synthesized user turns, each followed by 4 s of silence"),),
    default_dataset="hello-mini",
    tasks=(Task("speaks_in_time", "does the model start speaking within max_gap_s after the user's turn ends?"),),
    default_judge="none",
    judges=("none",),
    options=(Option("max_gap_s", float, 2.0, "the longest gap after the user's turn that counts as in time",
                    low=0.0, high=60.0),),
    headline=(Headline("speaks_in_time", "unified", "in_time_rate", True),),
    components=("tts-synth", "asr-aligner", "aggregator"),
    hooks={
        "plan": ".plan:plan",
        "summary": ".plan:summary",
        "missing": ".plan:missing",
        "dataset": ".dataset:make_stage",
        "score": ".score",
        "score_tree": ".score",
        "report": ".report",
    },
)
