"""A tree laid out otherwise than the official subset names: its tasks from `--task SUBSET=TASK`
(`make score TASKS=...`), never from a folder name, and the rating column from the tree's own
rating.json files when no judge is asked for, as upstream's example data is scored.

The example layout (`pause_handling_example/1/`, `smooth_turn_taking_example/1/`,
`user_interruption_example/1/` with rating.json, no judge.json, no manifest) is rebuilt here from
the golden fixture tree (golden/tree_a): its numbers are the ones the unchanged official scripts
printed (golden/golden.json), so the renamed folders must give the same. When
$FDB_UPSTREAM_EVALUATION names a checkout's v1_v1.5/evaluation folder, its example_data itself is
scored too and compared with what upstream's scripts print on it (golden.json "example_data").
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import command

GOLDEN = Path(__file__).resolve().parent / "golden"
REPO = Path(__file__).resolve().parents[4]
RENAMED = {"synthetic_pause_handling": ("pause_handling_example", "pause_handling"),
           "candor_turn_taking": ("smooth_turn_taking_example", "smooth_turn_taking"),
           "synthetic_user_interruption": ("user_interruption_example", "user_interruption")}


def example_tree(root: Path) -> Path:
    for src, (dst, _) in RENAMED.items():
        shutil.copytree(GOLDEN / "tree_a" / src, root / dst)
    return root


def tasks_args() -> list[str]:
    return [a for dst, task in RENAMED.values() for a in ("--task", f"{dst}={task}")]


def score(tree: Path, out: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([command("aggregator"), "score", "--benchmark", "fdb-v1", "--tree", str(tree),
                           "--out", str(out), "--quiet", *args], capture_output=True, text=True)


def test_folders_named_otherwise_need_their_task(tmp_path):
    tree = example_tree(tmp_path / "t")
    r = score(tree, tmp_path / "o")
    assert r.returncode == 2 and "no subset folder" in r.stderr and "--task SUBSET=TASK" in r.stderr
    assert r.stderr.count("\n") == 1
    r = score(tree, tmp_path / "o", "--task", "pause_handling_example=pausing")
    assert r.returncode == 2 and "'pausing' is not a Full-Duplex-Bench v1.0 task" in r.stderr


def test_tasks_given_and_ratings_from_the_tree_give_the_official_numbers(tmp_path):
    golden = json.loads((GOLDEN / "golden.json").read_text())["revisions"]["d7336bd"]["trees"]["tree_a"]
    r = score(example_tree(tmp_path / "t"), tmp_path / "o", *tasks_args())
    assert r.returncode == 0, r.stderr
    metrics = json.loads((tmp_path / "o" / "metrics.json").read_text())
    for src, (dst, _) in RENAMED.items():
        got = metrics["subsets"][dst]["official"]
        assert set(got) == set(golden[src]), dst
        for k, v in golden[src].items():
            assert got[k] == pytest.approx(v, abs=1e-9), (dst, k)
    # no judge.json: the rating column is the tree's rating.json files, and says so
    assert metrics["subsets"]["user_interruption_example"]["rating_label"] == "the tree's rating.json files"
    unified = json.loads((tmp_path / "o" / "unified.json").read_text())
    assert {s: v["task"] for s, v in unified["subsets"].items()} == {d: t for d, t in RENAMED.values()}


def test_make_score_passes_tasks(tmp_path):
    tree = example_tree(tmp_path / "t")
    tasks = " ".join(f"{dst}={task}" for dst, task in RENAMED.values())
    r = subprocess.run(["make", "-s", "-C", str(REPO), "score", f"TREE={tree}", f"OUT={tmp_path / 'o'}",
                        f"TASKS={tasks}", "SCORE_ARGS=quiet=true"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    metrics = json.loads((tmp_path / "o" / "metrics.json").read_text())
    assert sorted(metrics["subsets"]) == sorted(d for d, _ in RENAMED.values())


@pytest.mark.skipif(not os.environ.get("FDB_UPSTREAM_EVALUATION"),
                    reason="set FDB_UPSTREAM_EVALUATION to an upstream checkout's v1_v1.5/evaluation folder")
def test_upstream_example_data(tmp_path):
    data = Path(os.environ["FDB_UPSTREAM_EVALUATION"]) / "example_data"
    want = json.loads((GOLDEN / "golden.json").read_text())["example_data"]["subsets"]
    args = [a for s in want for a in ("--task", f"{s}={s.removesuffix('_example')}")]
    r = score(data, tmp_path / "o", *args)
    assert r.returncode == 0, r.stderr
    metrics = json.loads((tmp_path / "o" / "metrics.json").read_text())
    for subset, values in want.items():
        for k, v in values.items():
            assert metrics["subsets"][subset]["official"][k] == pytest.approx(v, abs=1e-9), (subset, k)
