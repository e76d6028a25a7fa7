"""Full-Duplex-Bench v1.5 as a duplexeval benchmark package: overlap handling (user interruption,
user backchannel, talking to others, background speech; arXiv 2507.23159; DanielLin94144/
Full-Duplex-Bench `v1_v1.5/`).

A temporary declaration: the datasets, the tasks and the dataset, importers and imported hooks.
The plan, ASR, judge, scoring and report hooks are declared with the rest of the package.
"""

from pathlib import Path

from duplexeval_common.benchmarks import Benchmark, Dataset, Task

from .tasks import SUBSET_TASKS, SUMMARIES, TASKS

NAME = "fdb-v1.5"
_DATA = Path(__file__).resolve().parent.parent / "datasets"

BENCHMARK = Benchmark(
    name=NAME,
    title="Full-Duplex-Bench v1.5",
    summary="overlap handling: user interruption, user backchannel, talking to others, background speech; "
            "each sample run with and without the overlap event",
    package=__name__,
    datasets=(
        Dataset("fdb-v1.5-mini", _DATA / "fdb-v1.5-mini",
                "embedded Full-Duplex-Bench v1.5-style set synthesized offline (2 samples per task; Piper and "
                "flite voices)"),
        Dataset("fdb-v1.5-synth", _DATA / "fdb-v1.5-synth",
                "synthetic Full-Duplex-Bench v1.5 at the official sizes (499 samples: 200 interruption, 99 "
                "backchannel, 100 talking to others, 100 background speech), several voices"),
    ),
    default_dataset="fdb-v1.5-mini",
    tasks=tuple(Task(t, SUMMARIES[t]) for t in TASKS),
    subset_tasks=SUBSET_TASKS,
    default_judge="none",
    judges=("none",),
    components=("tts-synth",),
    hooks={
        "dataset": ".dataset.stage:make_stage",
        "importers": ".importers:IMPORTERS",
        "imported": ".imported:sample_fields",
    },
)
