"""MTR per-round and cumulative tables, intervals, observed counts, judged tasks, bad encodings,
and the `aggregator score --benchmark mtr` command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from duplexeval_aggregator.cli import main
from duplexeval_mtr.score import score_tree
from duplexeval_mtr.score.judged import DQ_RESCALE
from duplexeval_common.stats import wilson
from duplexeval_mtr.schemas import SCHEMAS


def words(start, n, dur=0.3, gap=0.1):
    out, t = [], start
    for _ in range(n):
        out.append({"start": round(t, 3), "end": round(t + dur, 3), "text": "word"})
        t += dur + gap
    return out


def smooth_round(k: int, good: bool) -> tuple[dict, dict]:
    """Round k at 20k s: user 20k+1..20k+5; a reply after it (good) or talking over the user."""
    o = 20.0 * k
    enc = {"round": k, "scenario": "smooth-turntaking",
           "timestamps": {"user_start": o + 1, "user_end": o + 5, "model_start": o + 5, "model_end": o + 15}}
    start = o + 5.5 if good else o + 3.0
    ws = words(start, 10)
    return enc, {"round": k, "segments": [{"start": start, "end": ws[-1]["end"], "text": "w " * 10,
                                           "words": ws}]}


def write_dialogue(root: Path, subset: str, did: str, task: str, rounds: list, tr_rounds=None,
                   judgements=None, set_=None):
    d = root / subset / did
    d.mkdir(parents=True)
    enc = {"dialogue_id": did, "task": task, "rounds": rounds}
    if set_:
        enc["set"] = set_
    (d / "encoding.json").write_text(json.dumps(enc))
    if tr_rounds is not None:
        (d / "transcript.json").write_text(json.dumps({"dialogue_id": did, "rounds": tr_rounds}))
    if judgements is not None:
        (d / "judgements.jsonl").write_text("".join(json.dumps(j) + "\n" for j in judgements))
    return d


def features_tree(root: Path, outcomes: dict, missing=()) -> None:
    """outcomes: dialogue id -> list of 10 booleans; `missing`: (id, round) not transcribed."""
    for did, oks in outcomes.items():
        enc, tr = [], []
        for k, good in enumerate(oks, 1):
            e, t = smooth_round(k, good)
            enc.append(e)
            if (did, k) not in missing:
                tr.append(t)
        write_dialogue(root, "single_smooth", did, "features", enc, tr, set_="smooth")


def judgement(k, prompt, status="ok", score=1):
    return {"round": k, "prompt": {"id": prompt, "version": 1, "sha256": "0" * 64}, "status": status,
            "score": score if status == "ok" else None, "raw": "x", "model": "gpt-4o"}


OUTCOMES = {"1": [True] * 10, "2": [True, False] * 5, "3": [False] * 3 + [True] * 7}


@pytest.fixture()
def tree(tmp_path):
    root = tmp_path / "tree"
    features_tree(root, OUTCOMES, missing={("3", 10), ("2", 2)})
    # instruction following: 2 dialogues x 3 rounds
    ifr = [{"round": k, "scenario": "interruption"} for k in (1, 2, 3)]
    write_dialogue(root, "if_interruption", "1", "instruction_following", ifr, judgements=[
        judgement(1, "mtr-instruction-following", score=1), judgement(2, "mtr-instruction-following", score=0),
        judgement(3, "mtr-instruction-following", status="unparsed")])
    write_dialogue(root, "if_interruption", "2", "instruction_following", ifr, judgements=[
        judgement(1, "mtr-instruction-following", score=1), judgement(2, "mtr-instruction-following", score=1)])
    sr = [{"round": k, "scenario": "smooth-turntaking"} for k in (1, 2)]
    write_dialogue(root, "safety_smooth", "1", "safety", sr, judgements=[
        judgement(1, "mtr-safety", score=0), judgement(2, "mtr-safety", score=1)])
    write_dialogue(root, "safety_smooth", "2", "safety", sr, judgements=[
        judgement(1, "mtr-safety", score=0), judgement(2, "mtr-safety", status="error")])
    dq = [{"round": k, "scenario": "turn"} for k in (1, 2)]
    write_dialogue(root, "dq", "1", "dialogue_quality", dq, judgements=[
        judgement(1, "mtr-dialogue-quality", score=2.5), judgement(2, "mtr-dialogue-quality", score=3.0)])
    write_dialogue(root, "dq", "2", "dialogue_quality", dq, judgements=[
        judgement(1, "mtr-dialogue-quality", score=1.5)])
    return root


def test_feature_tables(tree):
    metrics, rows = score_tree(tree)
    assert SCHEMAS.problem("metrics", metrics) is None
    assert all(SCHEMAS.problem("round", r) is None for r in rows)
    s = metrics["subsets"]["single_smooth"]
    assert (s["task"], s["set"], s["dialogues"], s["rounds_declared"], s["rounds_observed"]) == (
        "features", "smooth", 3, 30, 28)
    pr = {c["round"]: c for c in s["per_round"]}
    assert [c["round"] for c in s["per_round"]] == list(range(1, 11))
    # round 1: dialogues 1 and 2 succeed, 3 fails; all observed
    assert pr[1]["declared"] == 3 and pr[1]["n"] == 3
    assert pr[1]["paper"]["success"] == {"value": round(2 / 3, 6), "count": 2, "n": 3,
                                         "interval": [round(x, 6) for x in wilson(2, 3)]}
    assert pr[1]["code"]["success"]["count"] == 2
    assert pr[1]["success_rate"] == round(2 / 3, 6) and pr[1]["success_interval"] == pr[1]["paper"]["success"]["interval"]
    # round 2: dialogue 2 not observed; 1 ok, 3 fails
    assert (pr[2]["declared"], pr[2]["n"], pr[2]["paper"]["success"]["count"]) == (3, 2, 1)
    # round 10: dialogue 3 not observed; 1 ok, 2 fails
    assert (pr[10]["n"], pr[10]["paper"]["success"]["count"]) == (2, 1)
    # the paper latency is the mean over takeovers (0.5 s twice; 0 for talking through the end)
    assert pr[1]["latency_s"] == round(1 / 3, 6) and pr[1]["paper"]["latency_s"]["n"] == 3
    assert pr[1]["code"]["latency_s"] == {"value": round((0.5 + 0.5 + 0) / 3, 6), "n": 3}
    # ranges pool the observed rounds of rounds 1..N
    r = s["ranges"]
    assert sorted(r) == ["1", "1-10", "1-2", "1-5"]
    assert r["1"]["rounds"] == [1, 1] and r["1"]["paper"]["success"] == pr[1]["paper"]["success"]
    assert (r["1-2"]["declared"], r["1-2"]["n"], r["1-2"]["paper"]["success"]["count"]) == (6, 5, 3)
    ok5 = sum(1 for did, oks in OUTCOMES.items() for k in range(1, 6) if oks[k - 1] and (did, k) != ("2", 2))
    assert r["1-5"]["paper"]["success"]["count"] == ok5 and r["1-5"]["n"] == 14
    assert r["1-10"]["n"] == 28 and r["1-10"]["paper"]["success"]["interval"] == [
        round(x, 6) for x in wilson(r["1-10"]["paper"]["success"]["count"], 28)]


def test_ranges_only_where_reached(tmp_path):
    root = tmp_path / "t"
    features_tree(root, {"1": [True] * 10})
    enc = json.loads((root / "single_smooth/1/encoding.json").read_text())
    tr = json.loads((root / "single_smooth/1/transcript.json").read_text())
    enc["rounds"], tr["rounds"] = enc["rounds"][:4], tr["rounds"][:4]
    (root / "single_smooth/1/encoding.json").write_text(json.dumps(enc))
    (root / "single_smooth/1/transcript.json").write_text(json.dumps(tr))
    s = score_tree(root)[0]["subsets"]["single_smooth"]
    assert sorted(s["ranges"]) == ["1", "1-2"] and len(s["per_round"]) == 4


def test_no_transcript_means_nothing_observed(tmp_path):
    root = tmp_path / "t"
    features_tree(root, {"1": [True] * 10, "2": [True] * 10})
    (root / "single_smooth/2/transcript.json").unlink()
    s = score_tree(root)[0]["subsets"]["single_smooth"]
    assert s["rounds_declared"] == 20 and s["rounds_observed"] == 10
    assert s["per_round"][0]["n"] == 1 and s["per_round"][0]["success_rate"] == 1.0
    assert s["per_round"][0]["success_interval"] == [round(wilson(1, 1)[0], 6), 1.0]


def test_judged_tables(tree):
    metrics, _ = score_tree(tree)
    f = metrics["subsets"]["if_interruption"]
    r1, r2, r3 = f["per_round"]
    assert r1["success"]["value"] == 1.0 and r1["n"] == 2
    assert (r2["success"]["count"], r2["success"]["n"]) == (1, 2)
    assert r3["judgements"] == {"ok": 0, "unparsed": 1, "error": 0} and r3["success_rate"] is None
    assert r3["success_interval"] is None and r3["n"] == 1 and r3["declared"] == 2
    assert f["ranges"]["1-2"]["success"] == {"value": 0.75, "count": 3, "n": 4,
                                             "interval": [round(x, 6) for x in wilson(3, 4)]}
    s = metrics["subsets"]["safety_smooth"]
    assert s["per_round"][0]["refusal"]["value"] == 1.0 and s["per_round"][0]["harmful_rate"] == 0.0
    assert s["per_round"][1]["refusal"]["value"] == 0.0 and s["per_round"][1]["judgements"]["error"] == 1
    assert s["ranges"]["1-2"]["refusal"]["count"] == 2 and s["ranges"]["1-2"]["refusal"]["n"] == 3
    dq = metrics["subsets"]["dq"]
    assert dq["per_round"][0]["score"] == {"value": 2.0, "n": 2}
    assert dq["per_round"][0]["score_rescaled"] == round(2.0 * 5 / 2.97, 6)
    assert dq["ranges"]["1-2"]["score"] == {"value": round(7 / 3, 6), "n": 3}
    assert "success_rate" not in dq["per_round"][0]   # no rate: the round plot skips it


def test_rescale_matches_judge():
    from duplexeval_mtr import judging, prompts
    assert DQ_RESCALE == prompts.MTR_DQ_RESCALE == judging.MTR_DQ_RESCALE == 5 / 2.97


def test_round_plot_shape(tree):
    plots = pytest.importorskip("duplexeval_common.html.plots")
    metrics, _ = score_tree(tree)
    rows = plots.per_round_rows(metrics)
    smooth = [r for r in rows if r["subset"] == "single_smooth"]
    assert [r["round"] for r in smooth] == list(range(1, 11))
    assert all({"round", "n", "success_rate", "success_interval", "latency_s"} <= set(r) for r in smooth)
    pytest.importorskip("matplotlib")
    assert plots.round_plot(rows) is not None


# -- bad input: one line naming the dialogue, the others kept

def _enc(root, did="9"):
    return root / "single_smooth" / did / "encoding.json"


BAD = [
    ("not-json", lambda e: "{", "encoding.json: not readable JSON"),
    ("round-numbering", lambda e: {**e, "rounds": e["rounds"][1:]}, "round must be 1"),
    ("unknown-timestamp", lambda e: {**e, "rounds": [{**e["rounds"][0], "timestamps": {**e["rounds"][0]["timestamps"], "user_begin": 1}}] + e["rounds"][1:]}, "unknown timestamp key(s) user_begin"),
    ("end-before-start", lambda e: {**e, "rounds": [{**e["rounds"][0], "timestamps": {**e["rounds"][0]["timestamps"], "user_end": 0.5}}] + e["rounds"][1:]}, "user_end (0.5) is before user_start"),
    ("missing-required", lambda e: {**e, "rounds": [{**e["rounds"][0], "timestamps": {"user_start": 1, "user_end": 5}}] + e["rounds"][1:]}, "S needs timestamp model_start"),
    ("features-disagree", lambda e: {**e, "rounds": [{**e["rounds"][0], "features": ["I"]}] + e["rounds"][1:]}, "disagree with scenario"),
    ("no-feature", lambda e: {**e, "rounds": [{**e["rounds"][0], "scenario": "chat"}] + e["rounds"][1:]}, "names no feature"),
    ("s-and-i", lambda e: {**e, "rounds": [{**e["rounds"][0], "scenario": "smooth-turntaking_interruption"}] + e["rounds"][1:]}, "exactly one of S and I"),
    ("id-mismatch", lambda e: {**e, "dialogue_id": "8"}, "dialogue_id '8' is not the folder name '9'"),
    ("bad-task", lambda e: {**e, "task": "fun"}, "task must be one of"),
    ("negative-time", lambda e: {**e, "rounds": [{**e["rounds"][0], "timestamps": {**e["rounds"][0]["timestamps"], "user_start": -1}}] + e["rounds"][1:]}, "user_start is negative"),
    ("nan-time", lambda e: {**e, "rounds": [{**e["rounds"][0], "timestamps": {**e["rounds"][0]["timestamps"], "user_start": "1.0"}}] + e["rounds"][1:]}, "must be a finite number"),
    ("set-differs", lambda e: {**e, "set": "S+I"}, "differs from the subset's features/smooth"),
]


@pytest.mark.parametrize("name,mutate,message", BAD, ids=[b[0] for b in BAD])
def test_bad_encoding_rejected_one_line(tmp_path, name, mutate, message):
    root = tmp_path / "t"
    features_tree(root, {"1": [True] * 10, "9": [True] * 10})
    enc = json.loads(_enc(root).read_text())
    new = mutate(enc)
    _enc(root).write_text(new if isinstance(new, str) else json.dumps(new))
    metrics, rows = score_tree(root)
    assert len(metrics["invalid"]) == 1
    bad = metrics["invalid"][0]
    assert bad["dialogue"] == "single_smooth/9" and message in bad["problem"], bad
    assert "\n" not in bad["problem"]
    assert metrics["subsets"]["single_smooth"]["dialogues"] == 1   # dialogue 1 kept
    assert {r["dialogue"] for r in rows} == {"single_smooth/1"}


def test_bad_transcript_and_judgements(tmp_path):
    root = tmp_path / "t"
    features_tree(root, {"1": [True] * 10, "2": [True] * 10, "3": [True] * 10})
    p = root / "single_smooth/2/transcript.json"
    tr = json.loads(p.read_text())
    tr["rounds"][0]["segments"][0]["words"][0]["end"] = 0.1
    p.write_text(json.dumps(tr))
    p = root / "single_smooth/3/transcript.json"
    tr = json.loads(p.read_text())
    tr["rounds"].append(dict(tr["rounds"][0], round=11))
    p.write_text(json.dumps(tr))
    write_dialogue(root, "if_smooth", "1", "instruction_following", [{"round": 1, "scenario": "smooth-turntaking"}],
                   judgements=[judgement(1, "mtr-safety")])
    write_dialogue(root, "if_smooth", "2", "instruction_following", [{"round": 1, "scenario": "smooth-turntaking"}],
                   judgements=[judgement(1, "mtr-instruction-following", score=2)])
    write_dialogue(root, "if_smooth", "3", "instruction_following", [{"round": 1, "scenario": "smooth-turntaking"}],
                   judgements=[judgement(1, "mtr-instruction-following")] * 2)
    write_dialogue(root, "if_smooth", "4", "instruction_following", [{"round": 1, "scenario": "pause-handling"}])
    inv = dict((b["dialogue"], b["problem"]) for b in score_tree(root)[0]["invalid"])
    assert "word 0: end (0.1) is before start" in inv["single_smooth/2"]
    assert "round must be a round of the encoding (1..10), got 11" in inv["single_smooth/3"]
    assert "prompt id 'mtr-safety' is not 'mtr-instruction-following'" in inv["if_smooth/1"]
    assert "score of 0 or 1, got 2" in inv["if_smooth/2"]
    assert "round 1 is judged twice" in inv["if_smooth/3"]
    assert "smooth (S) or interruption (I)" in inv["if_smooth/4"]
    assert len(inv) == 6


# -- the command

def test_cli_writes_schema_valid_deterministic_output(tree, tmp_path):
    runner = CliRunner()
    out1, out2 = tmp_path / "o1", tmp_path / "o2"
    for out in (out1, out2):
        res = runner.invoke(main, ["score", "--benchmark", "mtr", "--tree", str(tree), "--out", str(out)])
        assert res.exit_code == 0, res.output
    for name in ("metrics.json", "rounds.jsonl"):
        assert (out1 / name).read_bytes() == (out2 / name).read_bytes()
    metrics = json.loads((out1 / "metrics.json").read_text())
    assert SCHEMAS.problem("metrics", metrics) is None
    rows = [json.loads(x) for x in (out1 / "rounds.jsonl").read_text().splitlines()]
    assert len(rows) == 30 + 6 + 4 + 4 and all(SCHEMAS.problem("round", r) is None for r in rows)


def test_cli_invalid_dialogue_listed_and_rest_scored(tree, tmp_path):
    (tree / "single_smooth" / "2" / "encoding.json").write_text("[]")
    res = CliRunner().invoke(main, ["score", "--benchmark", "mtr", "--tree", str(tree), "--out", str(tmp_path / "o")])
    assert res.exit_code == 1
    lines = [x for x in res.output.splitlines() if x]
    assert lines == ["invalid: single_smooth/2: encoding.json: expected a JSON object"]
    metrics = json.loads((tmp_path / "o" / "metrics.json").read_text())
    assert metrics["subsets"]["single_smooth"]["dialogues"] == 2


def test_cli_strict_stops_and_writes_nothing(tree, tmp_path):
    (tree / "single_smooth" / "2" / "encoding.json").write_text("[]")
    res = CliRunner().invoke(main, ["score", "--benchmark", "mtr", "--tree", str(tree), "--out", str(tmp_path / "o"), "--strict"])
    assert res.exit_code == 2
    assert res.output.strip() == "error: single_smooth/2: encoding.json: expected a JSON object"
    assert not (tmp_path / "o").exists()


def test_cli_refuses_out_inside_tree(tree):
    res = CliRunner().invoke(main, ["score", "--benchmark", "mtr", "--tree", str(tree), "--out", str(tree / "o")])
    assert res.exit_code == 2 and "inside the tree" in res.output


def test_schemas_accept_the_inputs(tree):
    d = tree / "single_smooth" / "1"
    assert SCHEMAS.problem("encoding", json.loads((d / "encoding.json").read_text())) is None
    assert SCHEMAS.problem("transcript", json.loads((d / "transcript.json").read_text())) is None
    line = (tree / "if_interruption" / "1" / "judgements.jsonl").read_text().splitlines()[0]
    assert SCHEMAS.problem("judgement", json.loads(line)) is None
    assert SCHEMAS.problem("encoding", {"dialogue_id": "1", "task": "features", "rounds": []}) is not None


def test_interruption_pause_round_without_user_times_is_one_line():
    """The round that raised KeyError 'user_start' (exit 3, nothing written): an interruption +
    pause round with no pause and no user times has no window to score its pause over."""
    from duplexeval_common.errors import InputError
    from duplexeval_mtr.score.encodings import _round
    r = {"round": 1, "scenario": "interruption_pause-handling",
         "timestamps": {"interruption_start": 10.0, "interruption_end": 12.0, "model_start": 12.5, "model_end": 15.0}}
    with pytest.raises(InputError, match=r"I\+P needs timestamp user_start \(no pause times: the pause is the user turn\)"):
        _round("mix/1", "features", r, 0)
    ok = _round("mix/1", "features", {**r, "timestamps": {**r["timestamps"], "pause_start": 10.5,
                                                             "pause_end": 11.0}}, 0)
    assert ok.features == ("I", "P")
