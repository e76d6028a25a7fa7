"""Full-Duplex-Bench v1.0 as a duplexeval benchmark package: pause handling, backchannel, smooth
turn-taking, user interruption (arXiv 2503.04721; DanielLin94144/Full-Duplex-Bench).

This module is the declaration the `duplexeval.benchmarks` entry point names; it imports nothing
heavy. Everything else is a hook, imported when a component asks for it (README.md beside this
package describes the benchmark, both columns and every difference from upstream).
"""

from duplexeval_common.benchmarks import Benchmark, Headline, Option, datasets_beside, tasks_of

from .tasks import SUBSET_TASKS, SUMMARIES, TASKS

NAME = "fdb-v1"

BENCHMARK = Benchmark(
    name=NAME,
    title="Full-Duplex-Bench v1.0",
    summary="pause handling, backchannel, smooth turn-taking, user interruption; the official evaluator's "
            "numbers beside unified metrics with intervals",
    package=__name__,
    default=True,
    datasets=datasets_beside(
        __file__,
        ("fdb-mini", "embedded Full-Duplex-Bench-style set synthesized with Piper (pause, turn-taking, "
                     "interruption, backchannel)"),
        ("fdb-synth", "synthetic Full-Duplex-Bench v1.0 at the official sizes (727 samples: pause, conversational "
                      "pause, turn-taking, interruption with 7 s + 15 s, backchannel with ground truth), several voices"),
    ),
    default_dataset="fdb-mini",
    tasks=tasks_of(TASKS, SUMMARIES),
    subset_tasks=SUBSET_TASKS,
    default_judge="embedding-relevance",
    judges=("embedding-relevance", "local-llm", "openai", "official-gpt", "none"),
    options=(
        Option("official_revision", str, None, "the upstream Full-Duplex-Bench revision the official column "
               "follows: d7336bd (alias current, the default) or bb59575 (alias paper)"),
        Option("counterfactual", bool, False, "also run each interruption sample with the interruption muted "
               "and each pause sample with its pauses cut out, and report the paired difference per sample "
               "(counterfactual.py)"),
    ),
    headline=(
        Headline("pause_handling", "official", "tor", False),
        Headline("pause_handling", "unified", "pause_intrusion_rate", False),
        Headline("smooth_turn_taking", "official", "tor", True),
        Headline("smooth_turn_taking", "official", "latency", False),
        Headline("smooth_turn_taking", "unified", "response_rate_2s", True),
        Headline("smooth_turn_taking", "unified", "response_latency_s", False),
        Headline("user_interruption", "official", "tor", True),
        Headline("user_interruption", "official", "latency", False),
        Headline("user_interruption", "unified", "exercised_rate", None),
        Headline("user_interruption", "unified", "response_latency_s", False),
        Headline("backchannel", "official", "tor", False),
        Headline("backchannel", "official", "freq", True),
        Headline("backchannel", "official", "jsd", False),
    ),
    components=("tts-synth", "asr-aligner", "judge", "aggregator"),
    hooks={
        "plan": ".plan:plan",
        "summary": ".plan:summary",
        "missing": ".plan:missing",
        "dataset": ".dataset.stage:make_stage",
        "importers": ".importers:IMPORTERS",
        "imported": ".imported:sample_fields",
        "variants": ".counterfactual:variants",
        "asr": ".asr:targets",
        "judge": ".judge:task",
        "prompts": ".prompts:PROMPTS",
        "score": ".score.stage",
        "score_tree": ".score.tree_cli",
        "compare": ".score.compare",
        "report": ".report.run_report",
    },
)
