"""The aggregate stage on hand-built stage folders: Piper speech placed at known times in
output.wav (the Silero VAD detects it; a tone it does not), examiner turns at known times.

The VAD hears speech a window or two (32 ms each) after the first audible sample, so onsets,
latencies and overlaps are asserted to 0.1 s."""

from __future__ import annotations

import json

import pytest

from duplexeval_fdb_v2 import plan
from duplexeval_fdb_v2.score.report_md import render

from .conftest import build_stages, continuous, examiner_doc, output_wav, score_stages, speech, turn, SR

D = 30.0
TOL = 0.1


def turns():
    return [turn(0, "opening", 0.5, 2.5, "T1", answered=True), turn(1, "follow_up", 10.0, 12.0, "T2"),
            turn(2, "scripted", 18.0, 20.0, "T3"), turn(3, "end", 27.0, 28.0)]


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    root = tmp_path_factory.mktemp("v2score")
    n = len(speech()) / SR
    sessions = {
        # answers turn 0 after 1.0 s and turn 1 after 2.0 s; silent after turn 2
        "daily/answers": {"duration_s": D, "audio": output_wav(D, [3.5, 14.0]),
                          "examiner": examiner_doc(turns(), ["T1", "T2"])},
        "daily/silent": {"duration_s": D, "audio": output_wav(D, []), "examiner": examiner_doc(turns())},
        "daily/talker": {"duration_s": D, "audio": continuous(D), "examiner": examiner_doc(turns())},
        "daily/failed": {"duration_s": D, "failed": "the model server closed the connection"},
        "daily/no-examiner": {"duration_s": D, "audio": output_wav(D, []), "examiner": None},
        "safety/ineligible": {"duration_s": D, "audio": output_wav(D, []), "examiner": examiner_doc(turns()),
                              "runner": {"runner": "x", "clock": "lockstep", "input_sr": SR, "output_sr": SR,
                                         "duration_s": D, "settings": {}, "status": "ineligible",
                                         "ineligible": {"code": "drift", "reason": "pacing drifted"}}},
    }
    out = root / "out"
    metrics = score_stages(build_stages(root, sessions), out, response_window_s=5.0)
    rows = {r["sample_id"]: r for r in map(json.loads, (out / "samples.jsonl").read_text().splitlines())}
    return metrics, rows, out, n


def test_a_session_that_answers(scored):
    _, rows, _, n = scored
    r = rows["daily/answers"]
    assert [t["answered"] for t in r["turns"]] == [True, True, False]
    assert r["response_rate"] == pytest.approx(2 / 3)
    assert r["latencies_s"][0] == pytest.approx(1.0, abs=TOL) and r["latencies_s"][1] == pytest.approx(2.0, abs=TOL)
    assert r["overlap_rate"] == pytest.approx(0.0)
    assert r["model_speech"][0][0] == pytest.approx(3.5, abs=TOL)


def test_silence_answers_nothing(scored):
    r = scored[1]["daily/silent"]
    assert r["response_rate"] == 0 and r["response_latency_s"] is None and r["overlap_rate"] == 0


def test_talking_all_the_time_overlaps_everything(scored):
    r = scored[1]["daily/talker"]
    assert r["overlap_rate"] == pytest.approx(1.0, abs=0.02)
    assert r["response_rate"] == 0   # never a new start after a turn: it never stopped


def test_unscored_sessions_count_in_coverage(scored):
    metrics, rows, _, _ = scored
    assert metrics["missing"] == {
        "daily/failed": "failed: failed upstream in duplex-runner: the model server closed the connection",
        "daily/no-examiner": "missing: examiner.json",
        "safety/ineligible": "ineligible: drift: pacing drifted"}
    cov = metrics["subsets"]["daily"]["coverage"]
    assert (cov["sessions"], cov["scored"], cov["missing"]) == (5, 3, 2)
    assert metrics["subsets"]["safety"]["coverage"]["scored"] == 0
    assert metrics["subsets"]["safety"]["unified"]["response_rate"]["value"] is None
    assert not rows["daily/failed"]["eligible"]
    assert plan.missing(scored[2]) == {k: f"aggregate: {v}" for k, v in metrics["missing"].items()}


def test_pooled_subset(scored):
    metrics = scored[0]
    d = metrics["subsets"]["daily"]
    assert d["task"] == "daily" and d["n"] == 5
    rr = d["unified"]["response_rate"]
    assert (rr["count"], rr["n"]) == (2, 9) and rr["value"] == pytest.approx(2 / 9)
    lo, hi = rr["interval"]
    assert 0 <= lo <= rr["value"] <= hi <= 1
    assert d["unified"]["response_latency_s"]["value"] == pytest.approx(1.5, abs=TOL)
    # the talker covers all 7 s of one session's 21 s of examiner speech
    assert d["unified"]["overlap_rate"]["value"] == pytest.approx(1 / 3, abs=0.01)
    assert d["unified"]["goals_reached"]["value"] == pytest.approx(2 / 9)
    assert d["examiner"]["ended_early"]["value"] == 0 and d["examiner"]["ended_reasons"] == {"end_phrase": 3}
    s = plan.summary(metrics)["daily"]
    assert s["scored"] == 3 and s["response_rate"] == pytest.approx(2 / 9)


def test_headline_paths_and_report(scored):
    from duplexeval_fdb_v2 import BENCHMARK
    metrics, _, out, _ = scored
    for h in BENCHMARK.headline_of("daily"):
        assert h.read(metrics["subsets"]["daily"])["value"] is not None
    text = (out / "report.md").read_text()
    assert text == render(metrics) and "not official" in text and "daily/failed" in text


def test_a_bad_window_setting_is_one_line():
    from duplexeval_common.errors import DuplexEvalError
    from duplexeval_fdb_v2.score import stage
    with pytest.raises(DuplexEvalError, match="response_window_s must lie in"):
        stage.check({"benchmark": "fdb-v2", "response_window_s": -1})
    with pytest.raises(DuplexEvalError, match="no setting preset"):
        stage.check({"benchmark": "fdb-v2", "preset": "fast"})
