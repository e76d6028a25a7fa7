"""The official column by upstream revision: the registry, the backchannel rule per revision,
--official-revision, the stage's official_revision setting, the recorded revision and compare's
refusal of folders scored under different (or unknown) revisions.

The numbers of both revisions on real audio are in test_golden_parity.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from duplexeval_fdb_v1.score import official, revisions
from duplexeval_aggregator.cli import main
from duplexeval_aggregator.pipeline_stage import make_stage
from duplexeval_common.cli import check_config
from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.jsonio import dumps
from duplexeval_fdb_v1.schemas import SCHEMAS

from .helpers import pause_ann, sample_dir, turn_ann



@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DUPLEXEVAL_CACHE", str(tmp_path / "user-cache"))



# ---- the registry ----

def test_registry_names_aliases_and_default():
    assert revisions.DEFAULT == "d7336bd"
    cur, paper = revisions.REVISIONS["d7336bd"], revisions.REVISIONS["bb59575"]
    assert revisions.get() is cur and revisions.get(None) is cur
    assert revisions.get("current") is cur and revisions.get("paper") is paper
    assert revisions.get("bb595759b84934f81f1522e222e3976b51c94ff0") is paper
    assert revisions.get("bb59575") is paper
    assert (cur.takeover_resets_backchannels, paper.takeover_resets_backchannels) == (False, True)
    assert cur.record() == {"name": "d7336bd", "commit": "d7336bda1385872b83b48a8d45d9c0003836a60d",
                            "date": "2026-04-15", "repository": "DanielLin94144/Full-Duplex-Bench",
                            "matches": "Full-Duplex-Bench README table (February 2026, Parakeet ASR)"}
    assert "arXiv:2503.04721" in paper.record()["matches"]
    for rev in revisions.REVISIONS.values():
        SCHEMAS.validate("metrics", {"definitions": "fdb-v1.0-unified-4", "official_revision": rev.record(),
                             "subsets": {}})


@pytest.mark.parametrize("name", ["nope", "bb5", "latest", ""])
def test_unknown_revision_is_one_line_listing_the_known_ones(name):
    with pytest.raises(revisions.UnknownRevision) as exc:
        revisions.get(name)
    msg = str(exc.value)
    assert "\n" not in msg and repr(name) in msg
    assert msg.endswith("(known: d7336bd (current, default), bb59575 (paper))")
    assert isinstance(exc.value, DuplexEvalError)


# ---- the backchannel rule per revision ----

def test_backchannel_takeover_empties_the_list_only_at_bb59575(tmp_path):
    sub = tmp_path / "icc_backchannel"
    words = {
        # a backchannel, then a 2 s take-over: the take-over empties the list at bb59575
        "0": [(1.0, 1.2), (5.0, 5.5)],
        # a take-over (4 words in 1.5 s), then a backchannel: only the backchannel is left
        "1": [(1.0, 1.3), (1.4, 1.7), (1.8, 2.1), (2.2, 2.4), (6.0, 6.2)],
        # backchannels only: both revisions agree
        "2": [(1.0, 1.2), (4.0, 4.2)],
    }
    for sid, w in words.items():
        sample_dir(tmp_path, sub.name, sid, T=10.0, words=w)
    segs = {
        "0": ([{"start": 1.0, "end": 1.4}, {"start": 5.0, "end": 7.0}], 160000, 16000),
        "1": ([{"start": 1.0, "end": 2.5}, {"start": 6.0, "end": 6.3}], 160000, 16000),
        "2": ([{"start": 1.0, "end": 1.3}, {"start": 4.0, "end": 4.3}], 160000, 16000),
    }
    gt = {k: list(np.full(50, 1 / 50)) for k in segs}
    cur_vals, _, cur = official.backchannel(sub, segs, gt, revisions.get("d7336bd"))
    old_vals, _, old = official.backchannel(sub, segs, gt, revisions.get("bb59575"))
    assert official.backchannel(sub, segs, gt)[0] == cur_vals  # the default is d7336bd
    assert [cur[k]["segments"] for k in "012"] == [2, 2, 2]
    assert [old[k]["segments"] for k in "012"] == [0, 1, 2]
    assert [cur[k]["tor"] for k in "012"] == [old[k]["tor"] for k in "012"] == [1, 0, 0]
    assert old["0"]["jsd"] == 1 and cur["0"]["jsd"] < 1
    assert old["2"] == cur["2"]
    assert cur_vals["freq"] == pytest.approx(np.mean([0.2, 0.2, 0.2]))
    assert old_vals["freq"] == pytest.approx(np.mean([0.0, 0.1, 0.2]))
    assert old_vals["tor"] == cur_vals["tor"]


# ---- aggregator score --official-revision ----

def small_tree(root: Path) -> Path:
    sample_dir(root, "candor_pause_handling", "0", words=[(1.0, 1.4), (3.0, 3.5)], annotation=pause_ann((3, 4)))
    sample_dir(root, "candor_pause_handling", "1", words=[(5.0, 5.2)], annotation=pause_ann((3, 4)))
    sample_dir(root, "candor_turn_taking", "0", words=[(2.5, 3.0), (3.1, 3.9)], annotation=turn_ann(2.0))
    return root


def score(tree: Path, out: Path, *extra: str):
    res = CliRunner().invoke(main, ["score", "--benchmark", "fdb-v1", "--tree", str(tree), "--out", str(out), "--jobs", "1",
                                    *extra])
    assert res.exit_code == 0, res.output
    return res


@pytest.mark.parametrize("given,name", [(None, "d7336bd"), ("paper", "bb59575"), ("bb59575", "bb59575"),
                                        ("current", "d7336bd")])
def test_revision_is_recorded_in_metrics_unified_and_report(tmp_path, given, name):
    t = small_tree(tmp_path / "t")
    out = tmp_path / "o"
    res = score(t, out, *(["--official-revision", given] if given else []))
    metrics = json.loads((out / "metrics.json").read_text())
    uni = json.loads((out / "unified.json").read_text())
    SCHEMAS.validate("metrics", metrics)
    SCHEMAS.validate("unified", uni)
    record = revisions.REVISIONS[name].record()
    assert metrics["official_revision"] == uni["official_revision"] == record
    lines = res.output.splitlines()
    assert (f"official column: Full-Duplex-Bench @ {name} ({record['commit']}, {record['date']}), "
            f"matches the {record['matches']}") in lines
    heads = [x for x in lines if x.startswith("   official ")]
    assert len(heads) == 2 and all(x.startswith(f"   official @ {name} | unified") for x in heads)
    from duplexeval_fdb_v1.score.report import console_rows
    assert sum(x.startswith(f"   official @ {name} ") for x in console_rows(metrics)) == 2


def test_revision_choice_keeps_metrics_deterministic(tmp_path):
    t = small_tree(tmp_path / "t")
    score(t, tmp_path / "a", "--official-revision", "paper")
    score(t, tmp_path / "b", "--official-revision", "bb59575")
    for n in ("metrics.json", "unified.json", "unified-samples.jsonl"):
        assert (tmp_path / "a" / n).read_bytes() == (tmp_path / "b" / n).read_bytes()
    text = (tmp_path / "a" / "metrics.json").read_text()
    assert text == dumps(json.loads(text))  # canonical JSON, the record included
    assert json.loads(text)["official_revision"]["name"] == "bb59575"


def test_unknown_revision_exits_2_with_one_line_and_writes_nothing(tmp_path):
    t = small_tree(tmp_path / "t")
    out = tmp_path / "o"
    res = CliRunner().invoke(main, ["score", "--benchmark", "fdb-v1", "--tree", str(t), "--out", str(out),
                                                    "--official-revision", "v2"])
    assert res.exit_code == 2
    assert res.stderr == ("error: official_revision: unknown official revision 'v2' "
                          "(known: d7336bd (current, default), bb59575 (paper))\n")
    assert not out.exists() or not any(out.iterdir())


# ---- the pipeline stage's official_revision setting ----

def test_stage_config_key_official_revision(tmp_path):
    check_config("aggregator", {"benchmark": "fdb-v1", "icc_gt": None, "official_revision": "bb59575"})
    with pytest.raises(DuplexEvalError, match="benchmark"):
        check_config("aggregator", {"official_revision": "paper"})  # which benchmark's revision?
    with pytest.raises(DuplexEvalError, match="official_revision"):
        make_stage({"benchmark": "fdb-v1", "official_revision": 7})
    stage_in = tmp_path / "asr"
    small_tree(stage_in / "samples")
    for config, name in (({"benchmark": "fdb-v1"}, "d7336bd"),
                         ({"benchmark": "fdb-v1", "official_revision": "paper"}, "bb59575")):
        out = tmp_path / f"aggregate-{name}"
        assert make_stage(config).run([stage_in], out, config) == 0
        metrics = json.loads((out / "metrics.json").read_text())
        uni = json.loads((out / "unified.json").read_text())
        assert metrics["official_revision"]["name"] == uni["official_revision"]["name"] == name
        report = (out / "report.md").read_text()
        assert f"official column: Full-Duplex-Bench @ {name} (" in report
        assert f"   official @ {name} | unified" in report


def test_stage_refuses_an_unknown_revision_before_any_work(tmp_path):
    with pytest.raises(revisions.UnknownRevision, match=r"unknown official revision 'v9' \(known: "):
        make_stage({"benchmark": "fdb-v1", "official_revision": "v9"})
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"benchmark": "fdb-v1", "official_revision": "v9"}))
    res = CliRunner().invoke(main, ["check", "--config", str(cfg)])
    assert res.exit_code == 2
    assert res.stderr.count("\n") == 1 and "unknown official revision 'v9'" in res.stderr
    cfg.write_text(json.dumps({"benchmark": "fdb-v1", "official_revision": "paper"}))
    res = CliRunner().invoke(main, ["check", "--config", str(cfg)])
    assert res.exit_code == 0 and res.output == "ok\n"


# ---- compare ----

def _strip_revision(out: Path) -> None:
    """A folder as scored before the revision was recorded."""
    for n in ("metrics.json", "unified.json"):
        obj = json.loads((out / n).read_text())
        del obj["official_revision"]
        (out / n).write_text(json.dumps(obj))


def test_compare_same_revision_names_it(tmp_path):
    t = small_tree(tmp_path / "t")
    score(t, tmp_path / "a", "--official-revision", "paper")
    score(t, tmp_path / "b", "--official-revision", "bb59575")
    res = CliRunner().invoke(main, ["compare", str(tmp_path / "a"), str(tmp_path / "b"),
                                    "--json-out", str(tmp_path / "c.json")])
    assert res.exit_code == 0, res.output
    off = json.loads((tmp_path / "c.json").read_text())["official"]
    assert (off["revision_a"], off["revision_b"], off["across_revisions"]) == ("bb59575", "bb59575", False)
    assert off["subsets"]["candor_pause_handling"]["tor"] == {"a": 0.5, "b": 0.5, "diff": 0.0}
    assert "== official column, B minus A, both @ bb59575" in res.output
    assert "across revisions" not in res.output.lower()


def test_compare_refuses_different_revisions_unless_allowed(tmp_path):
    t = small_tree(tmp_path / "t")
    a, b = tmp_path / "a", tmp_path / "b"
    score(t, a)
    score(t, b, "--official-revision", "paper")
    res = CliRunner().invoke(main, ["compare", str(a), str(b)])
    assert res.exit_code == 2 and res.stdout == ""
    assert res.stderr == (f"error: A ({a}) was scored under official revision d7336bd and B ({b}) under "
                          "bb59575: official columns of different or unknown upstream revisions do not "
                          "compare; rescore with the same --official-revision or pass "
                          "--allow-revision-mismatch\n")
    res = CliRunner().invoke(main, ["compare", str(a), str(b), "--allow-revision-mismatch",
                                    "--json-out", str(tmp_path / "c.json")])
    assert res.exit_code == 0, res.output
    c = json.loads((tmp_path / "c.json").read_text())
    assert c["official"]["across_revisions"] is True
    assert (c["official"]["revision_a"], c["official"]["revision_b"]) == ("d7336bd", "bb59575")
    assert "== official column, B minus A, ACROSS UPSTREAM REVISIONS: A @ d7336bd, B @ bb59575" in res.output
    official_lines = [x for x in res.output.splitlines() if x.split()[:1] in (["candor_pause_handling"],
                                                                             ["candor_turn_taking"])]
    assert official_lines and all(x.endswith("(across revisions)") for x in official_lines)
    assert c["subsets"]["candor_turn_taking"]["metrics"]["early_start_rate"]["diff"] == 0  # unified as ever


@pytest.mark.parametrize("which", ["a", "b", "both"])
def test_compare_counts_a_folder_without_the_record_as_unknown(tmp_path, which):
    t = small_tree(tmp_path / "t")
    a, b = tmp_path / "a", tmp_path / "b"
    score(t, a)
    score(t, b)
    for d in {"a": [a], "b": [b], "both": [a, b]}[which]:
        _strip_revision(d)
    res = CliRunner().invoke(main, ["compare", str(a), str(b)])
    assert res.exit_code == 2 and res.stderr.count("\n") == 1
    want_a = "unknown" if which in ("a", "both") else "d7336bd"
    want_b = "unknown" if which in ("b", "both") else "d7336bd"
    assert f"official revision {want_a} and B ({b}) under {want_b}:" in res.stderr
    res = CliRunner().invoke(main, ["compare", str(a), str(b), "--allow-revision-mismatch"])
    assert res.exit_code == 0, res.output
    assert f"ACROSS UPSTREAM REVISIONS: A @ {want_a}, B @ {want_b}" in res.output
