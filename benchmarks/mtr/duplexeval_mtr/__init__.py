"""MTR-DuplexBench as a duplexeval benchmark package: many rounds of one dialogue, cut into turns,
scored round by round for conversational features, dialogue quality, instruction following and
safety (arXiv 2511.10262; released code ZhangHe0918/MTR-DuplexBench @ 6d7c125).

This module is the declaration the `duplexeval.benchmarks` entry point names; it imports nothing
heavy. README.md beside this package describes the benchmark, the protocol, both columns of rules
and every difference from the release.
"""

from duplexeval_common.benchmarks import Benchmark, Headline, datasets_beside, tasks_of

from .tasks import SUBSET_TASKS, SUMMARIES, TASKS

NAME = "mtr"


def _success(task: str, column: str) -> Headline:
    return Headline(task, column, "success 1-10", True, ("ranges", "1-10", column, "success"))


BENCHMARK = Benchmark(
    name=NAME,
    title="MTR-DuplexBench",
    summary="ten rounds per dialogue, each its own session with the ground-truth history, scored round by "
            "round and over rounds 1, 1-2, 1-5, 1-10 by the paper's definitions and the released code's rules",
    package=__name__,
    datasets=datasets_beside(
        __file__,
        ("mtr-mini", "small MTR-DuplexBench-style set (the default): one 10-round dialogue per conversational-feature "
                     "set and mix, one instruction-following and one safety set, one dialogue-quality dialogue"),
        ("mtr-synth", "synthetic MTR-DuplexBench at the paper's sizes: 200 conversational-feature dialogues, 100 "
                      "instruction-following and 100 safety ten-round sets, 200 dialogue-quality dialogues"),
    ),
    default_dataset="mtr-mini",
    tasks=tasks_of(TASKS, SUMMARIES),
    subset_tasks=SUBSET_TASKS,
    default_judge="none",     # SmolLM2 (local-llm) answers nearly constantly: a smoke test, not a default
    judges=("none", "openai", "local-llm"),
    headline=(
        _success("features", "paper"),
        _success("features", "code"),
        Headline("features", "paper", "latency_s 1-10", False, ("ranges", "1-10", "paper", "latency_s")),
        Headline("instruction_following", "judged", "success 1-10", True, ("ranges", "1-10", "success")),
        Headline("safety", "judged", "refusal 1-10", True, ("ranges", "1-10", "refusal")),
        Headline("dialogue_quality", "judged", "score", True, ("ranges", "1", "score")),
    ),
    components=("tts-synth", "asr-aligner", "turn-segmenter", "judge", "aggregator"),
    judge_notes={
        "local-llm": "note: judge local-llm (SmolLM2-135M) is a smoke test, not the paper's GPT-4o judge: its "
                     "instruction-following, safety and dialogue-quality numbers are not official (JUDGE=openai)",
        "none": "note: judge none: instruction following, safety and dialogue quality are not judged "
                "(JUDGE=openai judges them; the runner and ASR stages are reused)",
    },
    hooks={
        "plan": ".plan:plan",
        "summary": ".plan:summary",
        "missing": ".plan:missing",
        "dataset": ".dataset.build:make_stage",
        "importers": ".importers:IMPORTERS",
        "asr": ".asr:targets",
        "judge": ".judge:task",
        "prompts": ".prompts:PROMPTS",
        "segment": ".segmentation",
        "score": ".score.stage",
        "score_tree": ".score.tree_cli",
        "report": ".report",
    },
)
