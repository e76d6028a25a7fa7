"""The aggregate stage of Full-Duplex-Bench v1.5: the stage's samples scored as a tree.

The input stages (dataset, runner, asr, judge) are merged into a temporary tree in upstream's
layout (links, no copies: duplexeval_common.trees) and scored by scorer.score_tree with
exclude_invalid, so a sample that fails a check is listed and left out and the others are
scored; samples an upstream stage failed are ineligible with "failed:<component>". It writes
metrics.json, samples.jsonl and report.md. Setting (beside "benchmark"): `adaptation` (default
true: the speech-adaptation features and t-tests).
"""

from __future__ import annotations

import contextlib
import sys

from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.stage import StageContext
from duplexeval_common.trees import merged_tree

from .scorer import SAMPLE_FILES

ROOT_FILES = ("manifest.json", "judge.json")
SETTINGS = ("adaptation",)


def check(config: dict) -> None:
    unknown = sorted(set(config) - {"benchmark", *SETTINGS})
    if unknown:
        raise DuplexEvalError(f"aggregator: fdb-v1.5 scoring has no setting {', '.join(unknown)} "
                              f"(known: {', '.join(SETTINGS)})")
    if not isinstance(config.get("adaptation", True), bool):
        raise DuplexEvalError("aggregator: adaptation must be true or false")


def score(sctx: StageContext) -> None:
    from .report import invalid_lines
    from .scorer import score_tree
    with contextlib.ExitStack() as stack:
        tree, failures = merged_tree(sctx.inputs, stack, SAMPLE_FILES, ROOT_FILES)
        metrics = score_tree(tree, sctx.output, None, failures=failures, exclude_invalid=True,
                             link_roots=tuple(d.resolve() for d in sctx.inputs.dirs),
                             adaptation_on=sctx.config.get("adaptation", True))
    for line in invalid_lines(metrics):
        print(f"[aggregator] {line}", file=sys.stderr, flush=True)
