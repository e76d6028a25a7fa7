"""Scoring a Full-Duplex-Bench v1.5 tree made elsewhere: `aggregator score --benchmark fdb-v1.5`
(`make score BENCHMARK=fdb-v1.5 TREE=... OUT=...`).

The tree is upstream's layout (scorer.py): `<subset>/<id>/` with input.wav, clean_input.wav,
metadata.json, output.wav, clean_output.wav, output.json, clean_output.json and, when judged,
content_tag.json. A subset's task is its manifest's, the user's `--task SUBSET=TASK`, or its
official name. Settings (`--option NAME=VALUE` or the flags): OPTIONS below. Exit codes: 0
scored; 2 bad input (one line naming the sample and the problem; nothing written) or a bad
setting.
"""

from __future__ import annotations

import sys
from pathlib import Path

from duplexeval_common.benchmarks import Option
from duplexeval_common.errors import InputError

OPTIONS = (
    Option("cache_dir", str, None, "root of the VAD probability cache (default: the user cache)"),
    Option("jobs", int, None, "VAD worker processes (default: all cores)", low=1),
    Option("vad_backend", str, "onnx", "Silero model file: onnx or jit (the model upstream's torch.hub "
           "load gives)", choices=("onnx", "jit")),
    Option("exclude_invalid", bool, False, "score the rest when a sample fails a check (each listed on "
           "stderr, ineligible with invalid:<code>); default: the first problem stops with exit code 2"),
    Option("adaptation", bool, True, "the speech-adaptation features and t-tests (pitch, intensity, "
           "speaking rate; the slow part)"),
    Option("quiet", bool, False, "no report and no progress"),
)


def score_tree(tree: Path, out: Path, tasks: dict[str, str], options: dict) -> int:
    from .report import invalid_lines, render
    from .scorer import score_tree as score
    try:
        metrics = score(tree, out, options["cache_dir"] and Path(options["cache_dir"]), quiet=options["quiet"],
                        exclude_invalid=options["exclude_invalid"], tasks=tasks,
                        adaptation_on=options["adaptation"], vad_backend=options["vad_backend"],
                        jobs=options["jobs"])
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for line in invalid_lines(metrics):
        print(line, file=sys.stderr)
    if not options["quiet"]:
        sys.stdout.write(render(metrics))
    return 0
