"""Fixtures of the fdb-v2 tests: the user cache kept in a temporary folder, and hand-built stage
folders of live sessions (a dataset stage with live.json, a runner stage with examiner.json,
runner.json and an output.wav of Piper speech placed at known times)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from duplexeval_common.samples import Inputs
from duplexeval_common.wavio import write_wav

from tests.conftest import exact_speech, isolated_user_cache  # noqa: F401  (the fixture used below)

REPO = Path(__file__).resolve().parents[4]
DATASETS = REPO / "benchmarks" / "fdb-v2" / "datasets"
MINI, BUILTIN = DATASETS / "fdb-v2-mini", DATASETS / "fdb-v2-builtin"
SR = 16000
SENTENCE = "Sure I can help you with that right away"   # no comma: one VAD segment


@pytest.fixture(scope="package", autouse=True)
def _isolated_user_cache(isolated_user_cache):
    yield


def speech() -> np.ndarray:
    return exact_speech(SENTENCE, SR)


def continuous(seconds: float) -> np.ndarray:
    """Speech with no pause at all: two copies of the sentence looped and offset by half its length."""
    s = speech()
    n = int(seconds * SR)
    a = np.resize(s, n)
    b = np.roll(a, len(s) // 2)
    return (0.5 * (a + b)).astype(np.float32)


def output_wav(duration_s: float, at: list[float]) -> np.ndarray:
    """duration_s of silence with the sentence starting at each time of `at`."""
    out = np.zeros(int(round(duration_s * SR)), np.float32)
    s = speech()
    for t in at:
        i = int(round(t * SR))
        out[i:i + len(s)] = s[:len(out) - i]
    return out


def turn(index, kind, start, end, goal=None, yielded=False, answered=False):
    return {"index": index, "goal": goal, "kind": kind, "text": f"turn {index}", "start_s": start, "end_s": end,
            "planned_end_s": end, "yielded": yielded, "answered": answered, "reply_text": None}


def examiner_doc(turns, goals_reached=(), reason="end_phrase", talked_over=0):
    return {"format": "duplexeval-examiner/1", "engine": "cascade", "preset": "slow", "turns": turns,
            "model_turns": [], "goals": ["T1", "T2", "T3"], "goals_reached": list(goals_reached),
            "ended": {"reason": reason, "t": max([t["end_s"] for t in turns] or [0])},
            "talked_over_model": talked_over, "yielded": sum(t["yielded"] for t in turns)}


def live_doc(duration_s, goals=("T1", "T2", "T3")):
    return {"format": "duplexeval-live/1", "duration_s": duration_s, "sample_rate": SR,
            "examiner": {"system_prompt": "p", "opening": "Hello.", "end_phrase": "The conversation is over.",
                         "turn_limit": 5, "goals": [{"id": g, "goal": "g", "say": "s"} for g in goals]}}


def build_stages(root: Path, sessions: dict) -> SimpleNamespace:
    """A dataset and a runner stage folder from {key: {"task", "duration_s", "audio", "examiner",
    "runner" (runner.json or None), "failed" (a runner failure reason, or absent)}}."""
    ds, rn = root / "dataset", root / "runner"
    rows, statuses = [], {}
    for key, s in sessions.items():
        subset, sid = key.split("/")
        d = ds / "samples" / subset / sid
        d.mkdir(parents=True)
        (d / "live.json").write_text(json.dumps(live_doc(s["duration_s"])))
        rows.append({"subset": subset, "id": sid, "task": s.get("task", subset), "duration_s": s["duration_s"]})
        if s.get("failed"):
            statuses[key] = {"status": "failed", "reason": s["failed"]}
            continue
        statuses[key] = {"status": "ok"}
        r = rn / "samples" / subset / sid
        r.mkdir(parents=True)
        write_wav(r / "output.wav", s["audio"], SR)
        if s.get("examiner") is not None:
            (r / "examiner.json").write_text(json.dumps(s["examiner"]))
        runner = s.get("runner", {"runner": "x", "clock": "lockstep", "input_sr": SR, "output_sr": SR,
                                  "duration_s": s["duration_s"], "settings": {}})
        if runner is not None:
            (r / "runner.json").write_text(json.dumps(runner))
    (ds / "manifest.json").write_text(json.dumps({"dataset": "t", "samples": rows}))
    (rn / "stage.json").write_text(json.dumps({"component": "duplex-runner", "samples": statuses}))
    return SimpleNamespace(dataset=ds, runner=rn)


def score_stages(stages: SimpleNamespace, out: Path, **config) -> dict:
    """The aggregate stage's score hook on the two folders; metrics.json parsed."""
    from duplexeval_fdb_v2.score import stage
    out.mkdir(parents=True, exist_ok=True)
    config = {"benchmark": "fdb-v2", **config}
    stage.check(config)
    stage.score(SimpleNamespace(config=config, output=out, inputs=Inputs([stages.dataset, stages.runner])))
    return json.loads((out / "metrics.json").read_text())


# ---- real runs through the orchestrator (test_eval_controls.py, test_report.py) ----

EVAL_DURATION_S = 20.0   # --benchmark-arg duration_s: short sessions, the examiner's 3 first turns


def evaluate(home: Path, model: str, *args: str) -> SimpleNamespace:
    """`duplexeval eval --benchmark fdb-v2 --model MODEL` (the mini set, 20 s sessions) in `home`
    (DUPLEXEVAL_HOME too): its run folder (resolved: later runs move `latest`), run.json, each
    stage's store folder, metrics.json, samples.jsonl rows by session key and the process."""
    from duplexeval_common.jsonio import read_json, read_jsonl

    from tests.conftest import dx
    r = dx(home, "eval", "--benchmark", "fdb-v2", "--model", model,
           "--benchmark-arg", f"duration_s={EVAL_DURATION_S:g}", *args)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    run_dir = (home / "runs" / "latest").resolve()
    run = read_json(run_dir / "run.json")
    stages = {s["name"]: home / "store" / s["key"] for s in run["stages"]}
    metrics = read_json(stages["aggregate"] / "metrics.json")
    rows = {x["sample_id"]: x for x in read_jsonl(stages["aggregate"] / "samples.jsonl")}
    return SimpleNamespace(dir=run_dir, run=run, stages=stages, metrics=metrics, rows=rows, proc=r)


@pytest.fixture(scope="package")
def eval_home(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fdb-v2-home")


@pytest.fixture(scope="package")
def silence_run(eval_home) -> SimpleNamespace:
    """The `silence` control's run (one per test process: shared by the files run in it)."""
    return evaluate(eval_home, "silence")
