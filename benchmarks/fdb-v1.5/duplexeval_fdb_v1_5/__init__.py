"""Full-Duplex-Bench v1.5 as a duplexeval benchmark package: what a model does when something
overlaps the user's turn (user interruption, user backchannel, talking to others, background
speech; arXiv 2507.23159; DanielLin94144/Full-Duplex-Bench `v1_v1.5/`).

Every sample is run twice, on its input with the overlap event and on its clean twin without it
(the runner core's paired sessions), and scored in two columns: upstream's scripts' numbers
(behaviour labels, latency lists, speech adaptation, t-tests) and unified metrics measured from
the overlap window, each checked against the clean run. This module is the declaration the
`duplexeval.benchmarks` entry point names; it imports nothing heavy (README.md beside this
package describes the benchmark).
"""

from duplexeval_common.benchmarks import Benchmark, Headline, Option, datasets_beside, tasks_of

from .tasks import SUBSET_TASKS, SUMMARIES, TASKS

NAME = "fdb-v1.5"

BENCHMARK = Benchmark(
    name=NAME,
    title="Full-Duplex-Bench v1.5",
    summary="overlap handling: user interruption, user backchannel, talking to others, background speech; "
            "each sample run with and without the overlap event",
    package=__name__,
    datasets=datasets_beside(
        __file__,
        ("fdb-v1.5-mini", "embedded Full-Duplex-Bench v1.5-style set synthesized offline (2 samples per task)"),
        ("fdb-v1.5-synth", "synthetic Full-Duplex-Bench v1.5 at the official sizes (499 samples: 200 interruption, "
                           "99 backchannel, 100 talking to others, 100 background speech), several voices"),
    ),
    default_dataset="fdb-v1.5-mini",
    tasks=tasks_of(TASKS, SUMMARIES),
    subset_tasks=SUBSET_TASKS,
    default_judge="local-llm",
    judges=("local-llm", "official-gpt", "openai", "none"),
    options=(
        Option("adaptation", bool, True, "compute the speech-adaptation features (pitch, intensity, speaking "
               "rate before and after the overlap) and the paired t-tests"),
    ),
    headline=(
        Headline("user_interruption", "unified", "credited_stop_rate", True,
                 ("unified", "metrics", "credited_stop_rate")),
        Headline("user_interruption", "unified", "response_latency_s", False,
                 ("unified", "metrics", "response_latency_s")),
        Headline("user_interruption", "official", "stop_latency_s", False,
                 ("official", "timing", "stop_latency_s", "mean")),
        Headline("user_backchannel", "unified", "credited_stop_rate", False,
                 ("unified", "metrics", "credited_stop_rate")),
        Headline("talking_to_other", "unified", "credited_response_rate", False,
                 ("unified", "metrics", "credited_response_rate")),
        Headline("background_speech", "unified", "credited_stop_rate", False,
                 ("unified", "metrics", "credited_stop_rate")),
    ),
    components=("tts-synth", "asr-aligner", "judge", "aggregator"),
    hooks={
        "plan": ".plan:plan",
        "summary": ".plan:summary",
        "missing": ".plan:missing",
        "dataset": ".dataset.stage:make_stage",
        "importers": ".importers:IMPORTERS",
        "imported": ".imported:sample_fields",
        "asr": ".asr:targets",
        "judge": ".judge:task",
        "prompts": ".prompts:PROMPTS",
        "score": ".score.stage",
        "score_tree": ".score.tree_cli",
        "report": ".report",
    },
)
