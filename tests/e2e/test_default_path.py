"""The default path end to end: `duplexeval eval` with its defaults (the real cascade runner and the
embedding judge) on one sample per subset. Slow-ish (SmolLM2 loads once), but it is what
`make eval` runs."""

import subprocess

from duplexeval_common.jsonio import read_json

from ..conftest import command


def test_default_cascade_and_embedding_judge(tmp_path):
    r = subprocess.run([command("duplexeval"), "--home", str(tmp_path), "eval", "--limit", "1"],
                       capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    run = read_json(tmp_path / "runs" / "latest" / "run.json")
    assert run["model"] == "cascade" and run["judge"] == "embedding-relevance" and run["status"] == "ok"
    assert [s["status"] for s in run["stages"]] == ["ok"] * 5 and run["missing"] == {}
    store = tmp_path / "store"
    metrics = read_json(store / run["stages"][-1]["key"] / "metrics.json")
    assert set(metrics["subsets"]) == {"synthetic_backchannel", "synthetic_pause_handling", "synthetic_turn_taking",
                                       "synthetic_user_interruption"}   # all four tasks
    assert all(m["n"] == 1 for m in metrics["subsets"].values())
    bc = metrics["subsets"]["synthetic_backchannel"]["official"]   # scored against the dataset's ground truth
    assert set(bc) >= {"tor", "freq", "jsd"} and 0 <= bc["jsd"] <= 1   # (1: the official value without segments)
    runner = read_json(next((store / run["stages"][1]["key"] / "samples").glob("*/*/runner.json")))
    assert runner["runner"] == "cascade" and set(runner["models"]) >= {"silero-vad", "piper-voice"}
    judge = read_json(store / run["stages"][3]["key"] / "judge.json")
    assert judge["judge"] == "embedding-relevance" and judge["official"] is False
    assert "rating[" in r.stdout  # the interruption row names its judge
