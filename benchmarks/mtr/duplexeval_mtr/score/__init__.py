"""MTR-DuplexBench scoring (arXiv 2511.10262; released code ZhangHe0918/MTR-DuplexBench @ 6d7c125).

    from duplexeval_mtr.score import score_tree
    metrics, rows = score_tree(Path("TREE"))          # benchmarks/mtr/README.md, duplexeval_mtr/schemas/

Modules: rules (paper and released-code success rules for one round), encodings (reading and
validating the tree), rounds (per-round and cumulative tables with Wilson intervals), judged
(dialogue quality, instruction following, safety from judgements), score (the command's glue;
score_outputs gives metrics.json, rounds.jsonl and report.md), report (report.md), pipeline (the
aggregate stage with {"benchmark": "mtr"}: round samples -> TREE -> the same outputs).
"""

from .encodings import Dialogue, Round, load_dialogue, load_tree
from .rules import Seg, code_round, paper_round, score_round, seg
from .score import BENCHMARK, DEFINITIONS, UPSTREAM, score_dialogues, score_tree

__all__ = ["BENCHMARK", "DEFINITIONS", "UPSTREAM", "Dialogue", "Round", "Seg", "code_round",
           "load_dialogue", "load_tree", "paper_round", "score_dialogues", "score_round",
           "score_tree", "seg"]
