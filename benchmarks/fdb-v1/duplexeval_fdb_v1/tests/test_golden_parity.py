"""Official-column parity with the upstream Full-Duplex-Bench v1.0 evaluators, on fixture trees.

golden/golden.json holds the numbers the unchanged official scripts of
DanielLin94144/Full-Duplex-Bench printed on the trees of golden/ (see its
README.md and regenerate.py), at each upstream revision of revisions.REVISIONS: d7336bd (the
current backchannel rule, the default) and bb59575 (the paper era, the parent of 1d40caa,
where a take-over segment empties the backchannel list). The official column scored with
--official-revision <rev> must give that revision's numbers to 1e-9 on every tree, with
either VAD backend.
"""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest

from duplexeval_fdb_v1.score import revisions, score_tree

GOLDEN_DIR = Path(__file__).resolve().parent / "golden"
GOLDEN = json.loads((GOLDEN_DIR / "golden.json").read_text())
CURRENT = "d7336bd"
PAPER_ERA = "bb59575"
REVS = sorted(GOLDEN["revisions"])
TREES = sorted(GOLDEN["revisions"][CURRENT]["trees"])
TOL = 1e-9


def _materialize(tree: str, dest: Path) -> Path:
    """The tree with output.flac -> output.wav (PCM_16, 16 kHz), as regenerate.py ran it."""
    spec = importlib.util.spec_from_file_location("fdb_v1_regenerate", GOLDEN_DIR / "regenerate.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.materialize(GOLDEN_DIR / tree, dest / tree)


@pytest.fixture(scope="module", params=["jit", "onnx"])
def scored(request, tmp_path_factory) -> dict:
    """metrics per (revision, tree); upstream runs silero's JIT model, the aggregator's default
    is ONNX."""
    base = tmp_path_factory.mktemp(f"golden-{request.param}")
    out = {}
    for tree in TREES:
        root = _materialize(tree, base / "trees")
        for rev in REVS:
            out[rev, tree] = score_tree(root, base / "out" / rev / tree, cache_dir=base / "vad-cache",
                                        vad_backend=request.param, jobs=1, quiet=True,
                                        official_only=True, official_revision=rev)
    out["out"] = base / "out"  # <out>/<revision>/<tree>/metrics.json, unified.json, ...
    return out


def test_fixture_trees_are_what_golden_was_made_from():
    assert GOLDEN["upstream"] == "DanielLin94144/Full-Duplex-Bench" == revisions.REPOSITORY
    assert {CURRENT, PAPER_ERA} <= set(GOLDEN["revisions"])
    for name, rev in GOLDEN["revisions"].items():
        assert rev["commit"].startswith(name)
        assert sorted(rev["trees"]) == TREES
        assert all((GOLDEN_DIR / t).is_dir() for t in rev["trees"])


def test_every_revision_has_golden_numbers():
    """A revision is one entry in revisions.py plus its numbers in golden.json, both ways."""
    assert sorted(revisions.REVISIONS) == REVS
    assert revisions.DEFAULT == CURRENT
    for name, rev in revisions.REVISIONS.items():
        assert rev.name == name
        assert rev.commit == GOLDEN["revisions"][name]["commit"]
        assert rev.evaluator == GOLDEN["revisions"][name]["evaluator"]


@pytest.mark.parametrize("tree", TREES)
@pytest.mark.parametrize("rev", REVS)
def test_official_column_matches_upstream(scored, rev, tree):
    golden = GOLDEN["revisions"][rev]["trees"][tree]
    metrics = scored[rev, tree]
    assert metrics["official_revision"] == revisions.REVISIONS[rev].record()
    assert metrics["official_revision"]["commit"] == GOLDEN["revisions"][rev]["commit"]
    subsets = metrics["subsets"]
    assert sorted(subsets) == sorted(golden)
    for subset, want in golden.items():
        got = subsets[subset]["official"]
        assert sorted(got) == sorted(want), subset
        for key, value in want.items():
            assert got[key] is not None and math.isclose(got[key], value, rel_tol=0, abs_tol=TOL), \
                (rev, tree, subset, key, got[key], value)


def test_fixtures_cover_the_backchannel_rule_change():
    """Every tree's backchannel frequency and JSD differ between the two revisions (so the
    parity test above tells the rules apart); nothing else does."""
    cur, old = (GOLDEN["revisions"][r]["trees"] for r in (CURRENT, PAPER_ERA))
    assert all(cur[t][s] == old[t][s] for t in TREES for s in cur[t] if s != "icc_backchannel")
    assert all(cur[t]["icc_backchannel"]["freq"] != old[t]["icc_backchannel"]["freq"] and
               cur[t]["icc_backchannel"]["jsd"] != old[t]["icc_backchannel"]["jsd"] for t in TREES)


def test_the_two_revisions_score_differently(scored):
    for tree in TREES:
        a = scored[CURRENT, tree]["subsets"]["icc_backchannel"]["official"]
        b = scored[PAPER_ERA, tree]["subsets"]["icc_backchannel"]["official"]
        assert abs(a["freq"] - b["freq"]) > 1e-3 and abs(a["jsd"] - b["jsd"]) > 1e-3


def test_compare_across_revisions_refuses_then_labels(scored, tmp_path):
    """The same tree scored at both revisions: compare refuses; with the flag it reports the
    backchannel differences (the rule change, not a system change) labelled across revisions."""
    from click.testing import CliRunner

    from duplexeval_aggregator.cli import main
    a, b = scored["out"] / CURRENT / TREES[0], scored["out"] / PAPER_ERA / TREES[0]
    res = CliRunner().invoke(main, ["compare", str(a), str(b)])
    assert res.exit_code == 2
    assert res.output.count("\n") == 1 and CURRENT in res.output and PAPER_ERA in res.output
    res = CliRunner().invoke(main, ["compare", str(a), str(b), "--allow-revision-mismatch",
                                    "--json-out", str(tmp_path / "cmp.json")])
    assert res.exit_code == 0, res.output
    off = json.loads((tmp_path / "cmp.json").read_text())["official"]
    assert (off["revision_a"], off["revision_b"], off["across_revisions"]) == (CURRENT, PAPER_ERA, True)
    want = {k: GOLDEN["revisions"][PAPER_ERA]["trees"][TREES[0]]["icc_backchannel"][k]
            - GOLDEN["revisions"][CURRENT]["trees"][TREES[0]]["icc_backchannel"][k] for k in ("freq", "jsd")}
    for k, d in want.items():
        assert math.isclose(off["subsets"]["icc_backchannel"][k]["diff"], d, rel_tol=0, abs_tol=TOL)
    assert off["subsets"]["candor_turn_taking"]["tor"]["diff"] == 0
    line = next(x for x in res.output.splitlines() if x.split()[:2] == ["icc_backchannel", "freq"])
    assert line.endswith("(across revisions)")
    assert f"ACROSS UPSTREAM REVISIONS: A @ {CURRENT}, B @ {PAPER_ERA}" in res.output
