"""End to end: `duplexeval eval --benchmark fdb-v2` on the mini set (one session per task, 20 s
sessions: --benchmark-arg duration_s=20) with the control runners, whose numbers are known by
construction:

- `silence` never speaks: every examiner turn goes unanswered (response_rate 0, no latency) and
  nothing overlaps the examiner (overlap_rate 0);
- `always-talk` talks from the first frame to the last: the examiner's every line is spoken over
  (overlap_rate near 1) and the examiner starts lines while the model speaks (talked_over_model).

The runs also show what the run record keeps (the runner stage's `examiner` setting), the stage
cache (a second eval reuses every stage), and that the examiner's preset is a runner setting only
(the dataset stage's key does not move).
"""

import pytest

from duplexeval_common.jsonio import read_json

from .conftest import EVAL_DURATION_S, evaluate

TASKS = ("correction", "daily", "entity_tracking", "safety")
STAGES = ["dataset", "runner", "aggregate"]


def keys(run: dict) -> dict:
    return {s["name"]: s["key"] for s in run["stages"]}


def test_silence_answers_no_turn_and_overlaps_nothing(silence_run):
    m = silence_run.metrics
    assert [s["name"] for s in silence_run.run["stages"]] == STAGES
    assert m["benchmark"] == "fdb-v2" and m["official"] is False and m["missing"] == {}
    assert sorted(m["subsets"]) == list(TASKS)
    for sub, s in m["subsets"].items():
        u = s["unified"]
        assert s["task"] == sub and s["n"] == 1, sub
        assert s["coverage"] == {"sessions": 1, "scored": 1, "missing": 0, "share": 1.0, "reasons": {}}, sub
        assert u["response_rate"]["value"] == 0 and u["response_rate"]["n"] > 0, (sub, u["response_rate"])
        assert u["response_latency_s"]["value"] is None and u["response_latency_s"]["n"] == 0, sub
        assert u["overlap_rate"]["value"] == 0 and u["overlap_rate"]["n"] > 0, sub
        assert u["model_talk_over"]["value"] == 0 and u["goals_reached"]["value"] == 0, sub
        assert s["examiner"]["talked_over_model"]["value"] == 0 and s["examiner"]["yielded"]["value"] == 0
        assert s["examiner"]["llm_lines"] == 0   # no reply heard: every line after the opening is scripted
    # what run.json keeps of the scores (plan.summary)
    for sub, row in silence_run.run["summary"].items():
        assert (row["n"], row["scored"], row["response_rate"], row["response_latency_s"], row["overlap_rate"]) \
            == (1, 1, 0.0, None, 0.0), sub
    # per session: no model speech found, no latency, the examiner's turns all unanswered
    assert len(silence_run.rows) == 4
    for key, row in silence_run.rows.items():
        assert row["eligible"] and row["model_speech"] == [] and row["latencies_s"] == [], key
        assert row["response_latency_s"] is None and row["answered"] == 0, key
        d = silence_run.stages["runner"] / "samples" / key
        exam, rec = read_json(d / "examiner.json"), read_json(d / "runner.json")
        assert exam["turns"] and not any(t["answered"] for t in exam["turns"]) and exam["goals_reached"] == []
        assert rec["duration_s"] == pytest.approx(EVAL_DURATION_S) and rec["live"]["examiner"] == "cascade"
        assert {"input.wav", "output.wav", "mix.wav", "examiner.json"} <= {p.name for p in d.iterdir()}


def test_run_json_records_the_examiner(silence_run):
    runner = next(s for s in silence_run.run["stages"] if s["name"] == "runner")
    assert runner["config"]["runner"] == "silence"
    assert runner["config"]["examiner"] == {"engine": "cascade", "args": {"preset": "slow"},
                                            "duration_s": EVAL_DURATION_S}
    agg = next(s for s in silence_run.run["stages"] if s["name"] == "aggregate")
    assert agg["config"] == {"benchmark": "fdb-v2", "response_window_s": 5.0}


def test_always_talk_overlaps_the_examiner_throughout(eval_home, silence_run):
    r = evaluate(eval_home, "always-talk")
    assert keys(r.run)["dataset"] == keys(silence_run.run)["dataset"]   # the dataset stage is shared
    assert next(s for s in r.run["stages"] if s["name"] == "dataset")["cached"] is True
    for sub, s in r.metrics["subsets"].items():
        u, ex = s["unified"], s["examiner"]
        assert s["coverage"]["scored"] == s["coverage"]["sessions"] == 1, sub
        assert u["overlap_rate"]["value"] > 0.85, (sub, u["overlap_rate"])
        assert ex["talked_over_model"]["value"] > 0, (sub, ex["talked_over_model"])
        # its speech never starts after the examiner's turns end: nothing answers them
        assert u["response_rate"]["value"] == 0 and u["response_latency_s"]["value"] is None, sub
    for key, row in r.rows.items():
        exam = read_json(r.stages["runner"] / "samples" / key / "examiner.json")
        assert exam["talked_over_model"] > 0 and exam["talked_over_model"] == row["examiner_talk_over"], key


def test_second_eval_reuses_every_stage(eval_home, silence_run):
    again = evaluate(eval_home, "silence")
    assert all(s["cached"] for s in again.run["stages"]), [(s["name"], s["cached"]) for s in again.run["stages"]]
    assert keys(again.run) == keys(silence_run.run)
    assert again.metrics == silence_run.metrics
    assert "cached" in again.proc.stdout + again.proc.stderr


def test_fast_preset_changes_only_the_runner_and_aggregate_keys(eval_home, silence_run):
    fast = evaluate(eval_home, "silence", "--benchmark-arg", "preset=fast")
    a, b = keys(silence_run.run), keys(fast.run)
    assert a["dataset"] == b["dataset"] and a["runner"] != b["runner"] and a["aggregate"] != b["aggregate"]
    cached = {s["name"]: s["cached"] for s in fast.run["stages"]}
    assert cached["dataset"] is True and cached["runner"] is False
    runner = next(s for s in fast.run["stages"] if s["name"] == "runner")
    assert runner["config"]["examiner"]["args"] == {"preset": "fast"}
    exam = read_json(fast.stages["runner"] / "samples" / "daily" / "daily-01" / "examiner.json")
    assert exam["preset"] == "fast"


def test_epochs_run_each_task_k_times_with_their_seeds_and_report_the_spread(eval_home):
    """epochs=2: two sessions per task (`<id>` and `<id>.e2`, live.json seed 0 and 1, runner.json
    seed 0 and 1); the fixed-latency control is deterministic and takes no seed, so both epochs
    give the same numbers and the spread is 0."""
    got = evaluate(eval_home, "fixed-latency", "--subset", "daily", "--benchmark-arg", "epochs=2")
    daily = got.metrics["subsets"]["daily"]
    assert daily["coverage"]["sessions"] == 2
    keys = sorted(got.rows)
    assert len(keys) == 2 and keys[1] == keys[0] + ".e2"
    seeds = [read_json(got.stages["runner"] / "samples" / k / "runner.json")["seed"] for k in keys]
    assert seeds == [0, 1]
    e = daily["epochs"]
    assert e["k"] == 2 and e["epochs"] == [1, 2]
    rr = e["metrics"]["response_rate"]
    assert rr["by_epoch"][0] == rr["by_epoch"][1] and rr["sd"] == 0.0 and rr["by_epoch"][0] > 0
    assert "epochs response_rate" in (got.stages["aggregate"] / "report.md").read_text()
