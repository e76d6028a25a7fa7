"""The official column on hand-computed cases (the rules of eval_*.py, quirks included)."""

import json

import numpy as np
import pytest

from duplexeval_fdb_v1.score import official

from .helpers import interrupt_ann, pause_ann, sample_dir, turn_ann


def tor(words):
    chunks = [{"text": "w", "timestamp": list(w)} for w in words]
    return official.take_turn(chunks, [], "x")


def test_take_over_rule_boundaries():
    assert tor([]) == 0
    assert tor([(1.0, 1.5), (1.6, 1.9), (1.9, 1.99)]) == 0        # < 1 s and 3 words
    assert tor([(1.0, 1.2), (1.2, 1.4), (1.4, 1.6), (1.6, 1.8)]) == 1  # 4 words
    assert tor([(1.0, 2.0)]) == 1                                  # exactly 1 s is not < 1
    assert tor([(1.0, 1.5), (1.9, None)]) == 0                     # null end: last start is used


def test_pause_tor_over_the_whole_output(tmp_path):
    sub = tmp_path / "candor_pause_handling"
    ann = pause_ann((3.0, 4.0))
    sample_dir(tmp_path, "candor_pause_handling", "0", words=[(0.1, 0.5), (0.6, 2.0)], annotation=ann)
    sample_dir(tmp_path, "candor_pause_handling", "1", words=[(5.0, 5.2)], annotation=ann)
    sample_dir(tmp_path, "candor_pause_handling", "2", words=[(3.5, 3.7), (3.7, None)], annotation=ann)
    sample_dir(tmp_path, "candor_pause_handling", "3", words=[], annotation=ann, skip=("output.json",))
    (sub / "README.md").write_text("skipped by name")
    vals, notes, per = official.pause_handling(sub)
    # sample 0 talks before the pause and still counts; 3 has no output.json: not visited
    assert per == {"0": {"tor": 1}, "1": {"tor": 0}, "2": {"tor": 0}}
    assert vals == {"tor": 1 / 3}


def test_turn_taking_latency_clipped_and_over_takeovers_only(tmp_path):
    sub = tmp_path / "candor_turn_taking"
    sample_dir(tmp_path, sub.name, "0", words=[(1.5, 3.0)], annotation=turn_ann(2.0))   # early: 0
    sample_dir(tmp_path, sub.name, "1", words=[(3.25, 4.5)], annotation=turn_ann(2.0))  # 1.25
    sample_dir(tmp_path, sub.name, "2", words=[(2.5, 2.6)], annotation=turn_ann(2.0))   # TOR 0
    sample_dir(tmp_path, sub.name, "3", words=[], annotation=turn_ann(2.0))             # TOR 0
    vals, notes, per = official.smooth_turn_taking(sub)
    assert vals["tor"] == 0.5
    assert vals["latency"] == pytest.approx((0 + 1.25) / 2, abs=1e-12)
    assert per["0"]["latency"] == pytest.approx(-0.5)


def test_turn_taking_zip_misaligns_like_the_official(tmp_path):
    sub = tmp_path / "synthetic_turn_taking"
    d0 = sample_dir(tmp_path, sub.name, "0", words=[(3.0, 4.5)], annotation=turn_ann(2.0))
    sample_dir(tmp_path, sub.name, "1", words=[(3.0, 4.5)], annotation=turn_ann(1.0))
    (d0 / "turn_taking.json").unlink()
    vals, notes, _ = official.smooth_turn_taking(sub)
    assert vals["tor"] == 1.0 and len(notes) == 1
    # the one annotation left (E = 1.0) pairs with whichever output the listing gives first
    assert vals["latency"] == pytest.approx(2.0)


def test_interruption_rating_needs_a_judge_and_takeover(tmp_path):
    sub = tmp_path / "synthetic_user_interruption"
    d0 = sample_dir(tmp_path, sub.name, "0", T=20, words=[(12.0, 14.0)], annotation=interrupt_ann(8, 11.5))
    d1 = sample_dir(tmp_path, sub.name, "1", T=20, words=[(11.0, 13.0)], annotation=interrupt_ann(8, 11.5))
    d2 = sample_dir(tmp_path, sub.name, "2", T=20, words=[(12.0, 12.1)], annotation=interrupt_ann(8, 11.5))
    for d, r in ((d0, 4), (d1, 1), (d2, 5)):
        (d / "rating.json").write_text(json.dumps({"analysis": "a", "rating": r}))
    vals, _, _ = official.user_interruption(sub, judged=False)
    assert vals["rating"] is None
    assert vals["tor"] == pytest.approx(2 / 3) and vals["latency"] == pytest.approx(0.25)
    vals, _, _ = official.user_interruption(sub, judged=True)
    assert vals["rating"] == 2.5  # sample 2 did not take the turn: its rating is not averaged


def _bc_tree(tmp_path, words_by_id):
    sub = tmp_path / "icc_backchannel"
    for sid, words in words_by_id.items():
        sample_dir(tmp_path, sub.name, sid, T=10.0, words=words)
    return sub


def test_backchannel_rules(tmp_path):
    sub = _bc_tree(tmp_path, {"0": [(1.0, 1.2)], "1": [(1.0, 1.2), (1.2, 1.4), (1.4, 1.6)],
                              "2": [(0.5, 0.7)], "3": []})
    segs = {
        # a 0.4 s backchannel then a 2 s segment with one word: TOR is overwritten by the last
        "0": ([{"start": 1.0, "end": 1.4}, {"start": 5.0, "end": 7.0}], 160000, 16000),
        # 3 words in a short segment: TOR 1, and the segment still joins the backchannels
        "1": ([{"start": 1.0, "end": 1.7}], 160000, 16000),
        # the loop stops at the first segment over 3 s: later segments are dropped
        "2": ([{"start": 0.4, "end": 0.8}, {"start": 2.0, "end": 5.1}, {"start": 7.0, "end": 7.5}],
              160000, 16000),
        "3": ([], 160000, 16000),
    }
    gt = {k: list(np.full(50, 1 / 50)) for k in segs}
    vals, notes, per = official.backchannel(sub, segs, gt)
    assert [per[k]["tor"] for k in "0123"] == [1, 1, 1, 0]
    assert [per[k]["segments"] for k in "0123"] == [2, 1, 1, 0]
    assert per["3"]["jsd"] == 1
    assert vals["freq"] == pytest.approx(np.mean([0.2, 0.1, 0.1, 0.0]))
    assert vals["tor"] == 0.75
    # JSD by hand for sample 1: bins 5..8 of int(10 / 0.2) + 1 = 51
    h = np.full(51, 1e-10)
    h[5:9] += 1
    h /= h.sum()
    g = np.interp(np.linspace(0, 1, 51), np.linspace(0, 1, 50), np.full(50, 1 / 50))
    m = (h + g / g.sum()) / 2
    js = np.sqrt((np.sum(h * np.log(h / m)) + np.sum((g / g.sum()) * np.log((g / g.sum()) / m))) / 2)
    assert per["1"]["jsd"] == pytest.approx(js, abs=1e-12)


def test_backchannel_missing_output_json_carries_tor(tmp_path):
    sub = _bc_tree(tmp_path, {"0": [(1.0, 1.2)], "1": []})
    (sub / "1" / "output.json").unlink()
    segs = {k: ([{"start": 1.0, "end": 5.0}], 160000, 16000) for k in ("0", "1")}
    vals, notes, per = official.backchannel(sub, segs, None)
    order = official.backchannel_ids(sub)
    if order[0] == "0":
        assert per["1"]["tor"] == 1  # stale flag from sample 0
    else:
        assert per["1"]["tor"] == 0 and "UnboundLocalError" in notes[0]
    assert per["1"]["jsd"] == 1 and per["1"]["freq"] == 0
    assert vals["jsd"] == 1.0  # no backchannel anywhere: no ground truth needed


def test_null_end_where_the_official_script_would_raise(tmp_path):
    sub = tmp_path / "candor_turn_taking"
    sample_dir(tmp_path, sub.name, "0", words=[(2.5, 2.6), (3.0, 3.2), (3.4, 3.6), (3.9, None)],
               annotation=turn_ann(2.0))
    vals, notes, per = official.smooth_turn_taking(sub)
    assert per["0"]["tor"] == 1 and vals["latency"] == 0.5
    assert "null end" in notes[0] and "TypeError" in notes[0]
