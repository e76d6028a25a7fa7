"""`duplexeval capacity`: the sweep of concurrent realtime sessions against one server.

The server is tests/duplex_runner/freeze_omni_server.py on 127.0.0.1 over HTTPS: a Freeze-Omni
protocol test double, NOT the model. It answers each end of user speech E with a Piper sentence
due at E + 0.5 s, so the official turn-taking latency is 0.5 s plus at most one 30 ms frame, up to
the ASR's word timing. The samples are 2.5 s each (a tone from 0.1 to 0.5 s, then silence),
imported with `duplexeval import folder`, so the sweeps stay short: levels 1 and 2.

The rule (which level is the capacity), the levels and the realtime check are unit-tested on values
known by construction.
"""

from __future__ import annotations

import json
import math
import os
import subprocess

import numpy as np
import pytest

from duplexeval_common import schemas
from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.jsonio import read_json
from duplexeval_common.wavio import write_wav

from duplexeval import capacity

from ..conftest import command, exact_speech
from ..duplex_runner.test_freeze_omni import cert, server  # noqa: F401  (fixtures: the double, its TLS)
from ..html_pages import Tables

SR = 16000
SAMPLE_S = 2.5
SPEECH = (0.1, 0.5)          # the user's "speech" (a tone the double hears as loud)
FRAME_S = 0.030
ASR_TOLERANCE_S = 0.15
SUBSET = "capmini_turn_taking"
REPLY = "Sure, here is a short answer. It has a few sentences, and it keeps going for a little while."


# -- the rule, the levels, the realtime check (no server) -------------------------------------------

def row(level: int, p99: float | None, latency: float | None, failed: int = 0, limit: float = 20.0) -> dict:
    return {"level": level, "drift_p99_ms": p99, "drift_limit_ms": limit, "latency_s": latency, "failed": failed,
            "status": "ok" if not failed else "failed"}


def test_best_level_is_the_last_of_the_levels_that_all_pass():
    rows = [row(1, 5.0, 0.50), row(2, 8.0, 0.60), row(4, 19.9, 0.45), row(8, 25.0, 0.52), row(16, 10.0, 0.50)]
    assert capacity.apply_rule(rows, 0.1) == 4           # level 8 drifts; 16 passing after it does not count
    assert [r["passes"] for r in rows] == [True, True, True, False, True]
    assert rows[3]["checks"] == {"drift": False, "failures": True, "latency": True}
    assert rows[1]["latency_delta_s"] == pytest.approx(0.1) and rows[1]["checks"]["latency"]  # at the tolerance
    assert rows[2]["latency_delta_s"] == pytest.approx(-0.05)


def test_latency_failed_sessions_and_a_failing_first_level():
    rows = [row(1, 5.0, 0.50), row(2, 5.0, 0.62), row(4, 5.0, 0.50)]
    assert capacity.apply_rule(rows, 0.1) == 1 and rows[1]["checks"]["latency"] is False
    assert capacity.apply_rule([row(1, 5.0, 0.5), row(2, 5.0, None)], 0.1) == 1   # no latency at 2: fails
    rows = [row(1, 5.0, 0.5), row(2, 3.0, 0.5, failed=1)]
    assert capacity.apply_rule(rows, 0.1) == 1 and rows[1]["checks"]["failures"] is False
    assert capacity.apply_rule([row(1, 20.0, 0.5), row(2, 1.0, 0.5)], 0.1) is None  # p99 must be under the limit
    assert capacity.apply_rule([row(1, None, None, failed=2)], 0.1) is None         # nothing sent
    # level 1 without a latency: the latency check does not apply, drift and failures decide
    rows = [row(1, 5.0, None), row(2, 5.0, 0.9), row(4, 30.0, 0.5, limit=40.0)]
    assert capacity.apply_rule(rows, 0.1) == 4 and [r["checks"]["latency"] for r in rows] == [None, None, None]


def synthetic_doc() -> dict:
    """A capacity.json as the sweep writes it, its numbers made up (levels 1 and 2 ran; 2 died)."""
    levels = []
    for level, p99, latency, failures in ((1, 4.5, 0.52, {}), (2, None, None, {"s_turn_taking/1": "boom",
                                                                          "s_turn_taking/1-r2": "boom"})):
        levels.append({
            "level": level, "sessions": level, "status": "failed" if failures else "ok",
            "reason": "2 of 2 sessions failed (first: s_turn_taking/1: boom)" if failures else None,
            "frames": 0 if failures else 84, "drift_p50_ms": None if failures else 1.0, "drift_p99_ms": p99,
            "drift_max_ms": None if failures else 7.25, "late_frames": 0, "drift_limit_ms": 20.0,
            "failed": len(failures), "failures": failures, "ineligible": 0, "ineligible_sessions": {},
            "tor": None if failures else 1.0, "latency_s": latency, "eligible": None if failures else 1,
            "wall_s": 3.0, "sessions_span_s": 2.6, "stages": {"runner": {"key": "k", "status": "ok", "seconds": 3.0}}})
    doc = {"format": "duplexeval-capacity/1", "duplexeval": "0", "command": ["duplexeval", "capacity"],
           "started": "2026-01-01T00:00:00Z", "seconds": 9.0, "model": "freeze-omni", "runner": "freeze-omni",
           "clock": "realtime", "kind": "stream", "benchmark": "b", "dataset": "d", "subset": "s_turn_taking",
           "task": "smooth_turn_taking", "asr": "faster-whisper", "judge": "none", "runtime": "local",
           "runner_args": {"url": "https://user:hunter2-secret@127.0.0.1:1", "grace_s": 0},
           "settings": {"levels": [1, 2, 4], "samples": 1, "samples_requested": 1, "sessions": {"1": 1, "2": 2, "4": 4},
                        "drift_limit_ms": 20.0, "drift_retries": 0, "latency_tolerance_s": 0.1,
                        "latency_rule": "absolute", "rule": capacity.RULE},
           "samples": ["s_turn_taking/1"], "dataset_stage": "k",
           "environment": {"python": "3", "git": {}, "packages_sha256": "x",
                           "machine": {"cores": 2, "load_average_start": [1.0, 1.0, 1.0], "load_average_end": None}},
           "levels": levels, "reference_latency_s": 0.52, "reference_note": None, "best_level": None,
           "status": "stopped", "stopped": {"level": 2, "reason": levels[1]["reason"]}}
    doc["best_level"] = capacity.apply_rule(doc["levels"], 0.1)
    return doc


def test_the_files_of_a_sweep(tmp_path):
    """capacity.json valid, the credential of the endpoint in no file, the table and figure by construction."""
    doc = synthetic_doc()
    assert doc["best_level"] == 1
    text, summary = capacity.write(tmp_path, doc)
    for name in ("capacity.json", "capacity.md", "capacity.html"):
        assert "hunter2-secret" not in (tmp_path / name).read_text(), name
    schemas.validate("capacity", read_json(tmp_path / "capacity.json"), "capacity.json")
    assert "1 concurrent session(s)" in summary and text == (tmp_path / "capacity.md").read_text()
    assert "| 1 | 1 | 0 | 0 | 84 | 4.50 | 7.25 | 1.000 | 0.520 | 0.000 | 3.0 | yes |" in text
    assert "| 2 | 2 | 2 | 0 | 0 | - | - | - | - | - | 3.0 | no (stopped) |" in text
    assert "Stopped at level 2: 2 of 2 sessions failed (first: s_turn_taking/1: boom)" in text
    html = (tmp_path / "capacity.html").read_text()
    t = Tables()
    t.feed(html)
    tables = [rows for _, rows in t.tables]
    assert tables[0][0] == capacity.HEADERS and [r[0] for r in tables[0][1:]] == ["1", "2"]
    assert tables[1][1:] == [["s_turn_taking/1", "failed: boom"], ["s_turn_taking/1-r2", "failed: boom"]]
    svg = html[html.index("<svg"):html.index("</svg>")]
    assert svg.count("<circle") == 3                             # level 1's p99, max and latency; level 2 sent nothing
    assert 'class="limit"' in svg and 'class="tolerance"' in svg
    bad = dict(doc, status="weird")
    with pytest.raises(DuplexEvalError, match="capacity schema"):
        capacity.write(tmp_path, bad)


def test_levels_and_sessions():
    assert capacity.parse_levels(None, 16) == [1, 2, 4, 8, 16]
    assert capacity.parse_levels(None, 12) == [1, 2, 4, 8, 12]
    assert capacity.parse_levels(None, 1) == [1]
    assert capacity.parse_levels(" 1, 3,5 ", 16) == [1, 3, 5]
    for bad, says in (("2,4", "must start at 1"), ("1,4,4", "must rise"), ("1,x", "comma-separated"),
                      ("1,300", "from 1 to 256"), (",", "names no level")):
        with pytest.raises(DuplexEvalError, match=says):
            capacity.parse_levels(bad, 16)
    with pytest.raises(DuplexEvalError, match="--max-level must be an integer from 1 to 256"):
        capacity.parse_levels(None, 0)
    # every sample the same number of times, at least `level` sessions in all
    assert [capacity.sessions_at(n, 8) for n in (1, 2, 4, 8, 16)] == [8, 8, 8, 8, 16]
    assert [capacity.sessions_at(n, 3) for n in (1, 2, 4, 8)] == [3, 3, 6, 9]
    with pytest.raises(DuplexEvalError, match="concurrency"):
        capacity.check_runner_args({"concurrency": 4})
    with pytest.raises(DuplexEvalError, match="--latency-tolerance must be a number above 0"):
        capacity.check_number(0.0, "--latency-tolerance", 0, 10, open_lo=True)
    with pytest.raises(DuplexEvalError, match="--samples must be an integer from 1"):
        capacity.check_number(0, "--samples", 1, 1000, integer=True)


def test_only_realtime_runners(tmp_path):
    with pytest.raises(DuplexEvalError, match="runs in process .* not as realtime sessions"):
        capacity.check_network("cascade")
    capacity.check_network("moshi-ws")          # a network runner: its clock is known once it ran
    # what level 1's runner.json says decides: moshi-ws's default lockstep is refused in one line
    keys = ["s_turn_taking/1", "s_turn_taking/2"]
    d = tmp_path / "runner" / "samples" / "s_turn_taking" / "2"
    d.mkdir(parents=True)
    (d / "runner.json").write_text(json.dumps({"runner": "moshi-ws", "clock": "lockstep", "kind": "stream"}))
    with pytest.raises(capacity.NotRealtime, match="runner 'moshi-ws' ran on the lockstep clock, not realtime"):
        capacity.runner_clock("moshi-ws", tmp_path / "runner", keys)
    (d / "runner.json").write_text(json.dumps({"runner": "freeze-omni", "clock": "realtime", "kind": "stream"}))
    assert capacity.runner_clock("freeze-omni", tmp_path / "runner", keys) == \
        {"runner": "freeze-omni", "clock": "realtime", "kind": "stream"}
    assert capacity.runner_clock("freeze-omni", tmp_path / "runner", keys[:1]) is None   # no session wrote one


def test_the_latency_comes_from_the_benchmarks_headlines():
    from duplexeval_common.benchmarks import default
    bench = default()
    tasks = capacity.latency_tasks(bench)
    assert tasks and all(capacity.headline(bench, t, "latency").column == "official" for t in tasks)
    subset = capacity.default_subset(bench, bench.default_dataset, tasks)
    assert capacity.dataset_subsets(bench, bench.default_dataset)[subset] == tasks[0]
    with pytest.raises(DuplexEvalError, match="has no subset of a task with an official latency"):
        capacity.default_subset(bench, bench.default_dataset, ["no_such_task"])


def test_the_cli_refuses_a_model_that_is_not_realtime(tmp_path):
    r = dx(tmp_path, "capacity", "--model", "silence")
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [r.stderr.strip()] and "runs in process" in r.stderr, r.stderr
    r = dx(tmp_path, "capacity", "--model", "freeze-omni", "--levels", "2,4")
    assert r.returncode == 2 and "must start at 1" in r.stderr
    # nothing listens there: one line before anything runs, and no output folder left behind
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"https://127.0.0.1:{sock.getsockname()[1]}"
        r = dx(tmp_path, "capacity", "--model", "freeze-omni", "--out", tmp_path / "out", env={"MODEL_URL": url})
    assert r.returncode == 2 and r.stderr.strip() == f"error: stage runner: cannot reach {url} (Connection refused)"
    assert not (tmp_path / "out").exists()
    assert not (tmp_path / "capacity").exists() or not any((tmp_path / "capacity").iterdir())


# -- against the double -------------------------------------------------------------------------------

def dx(home, *args, env=None):
    base = {k: v for k, v in os.environ.items() if k not in ("MODEL_URL", "MODEL_CA", "MODEL_INSECURE",
                                                              "OPENAI_API_KEY")}
    return subprocess.run([command("duplexeval"), "--home", str(home), *map(str, args)], capture_output=True,
                          text=True, env={**base, "DUPLEXEVAL_HOME": str(home),
                                          "DUPLEXEVAL_CACHE": str(home / "cache"), **(env or {})}, timeout=600)


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """A home with `capmini` imported: two samples of 2.5 s, the user's turn ending at 0.5 s."""
    home = tmp_path_factory.mktemp("capacity-home")
    src = tmp_path_factory.mktemp("capacity-src")
    x = np.zeros(int(SAMPLE_S * SR), np.float32)
    a, b = int(SPEECH[0] * SR), int(SPEECH[1] * SR)
    x[a:b] = 0.3 * np.sin(2 * np.pi * 300 * np.arange(b - a) / SR)
    for sid in ("1", "2"):
        write_wav(src / sid / "input.wav", x, SR)
        (src / sid / "turn_taking.json").write_text(json.dumps(
            [{"text": "[TURN-TAKING]", "timestamp": [SPEECH[1], SPEECH[1] + 0.4]}]))
    r = dx(home, "import", "folder", src, "--name", "capmini", "--subset", SUBSET)
    assert r.returncode == 0, r.stderr
    return home


@pytest.fixture(scope="module")
def reply_wav(tmp_path_factory):
    path = tmp_path_factory.mktemp("capacity-reply") / "reply.wav"
    write_wav(path, exact_speech(REPLY, 24000), 24000)
    return path


def sweep_args(levels: str, samples: int, out) -> list:
    # drift_limit_ms=250: a loaded 2-core machine delays single frames past 20 ms (at a load average
    # of 10, by up to 0.5 s), and a session with a frame past the limit loses its latency
    # (drift_retries is 0 here); the sweep's own drift numbers are not what these tests check
    return ["capacity", "--model", "freeze-omni", "--dataset", "capmini", "--levels", levels,
            "--samples", samples, "--runner-arg", "grace_s=0", "--runner-arg", "drift_limit_ms=250", "--out", out]


def frames_of(seconds: float) -> int:
    return math.ceil(seconds / FRAME_S - 1e-9)


@pytest.mark.serial
@pytest.mark.slow
def test_two_levels_against_the_double(home, tmp_path, cert, server, reply_wav):  # noqa: F811
    srv = server(reply_delay_s=0.5, reply_wav=str(reply_wav))
    out = tmp_path / "sweep"
    r = dx(home, *sweep_args("1,2", 1, out), env={"MODEL_URL": srv.url, "MODEL_CA": str(cert[0])})
    assert r.returncode == 0, r.stderr[-3000:]
    doc = read_json(out / "capacity.json")
    schemas.validate("capacity", doc, "capacity.json")
    assert doc["model"] == "freeze-omni" and doc["runner"] == "freeze-omni" and doc["clock"] == "realtime"
    assert doc["subset"] == SUBSET and doc["task"] == "smooth_turn_taking" and doc["asr"] == "faster-whisper"
    s = doc["settings"]
    assert s["levels"] == [1, 2] and s["samples"] == 1 and s["sessions"] == {"1": 1, "2": 2}
    assert s["drift_retries"] == 0 and s["drift_limit_ms"] == 250 and s["latency_tolerance_s"] == 0.1
    assert doc["samples"] == [f"{SUBSET}/1"] and doc["status"] == "ok" and doc["stopped"] is None
    assert doc["environment"]["machine"]["load_average_end"] is not None
    assert [lv["level"] for lv in doc["levels"]] == [1, 2]
    for lv in doc["levels"]:
        assert lv["status"] == "ok" and lv["failed"] == 0 and lv["failures"] == {}, lv
        assert lv["sessions"] == lv["level"] and lv["frames"] == lv["level"] * frames_of(SAMPLE_S)  # every frame
        assert lv["drift_max_ms"] >= lv["drift_p99_ms"] >= lv["drift_p50_ms"] >= 0
        assert lv["eligible"] == lv["level"] - lv["ineligible"], lv   # (a frame past 250 ms drops a session)
        if lv["eligible"]:
            assert lv["tor"] == 1 and 0.5 - ASR_TOLERANCE_S <= lv["latency_s"] <= 0.5 + FRAME_S + 0.01 + \
                ASR_TOLERANCE_S, lv
        # each level's runner ran fresh, at its concurrency and without drift retries
        cfg = read_json(home / "store" / "configs" / f"{lv['stages']['runner']['key']}.json")
        assert cfg["runner_args"]["concurrency"] == lv["level"] and cfg["runner_args"]["drift_retries"] == 0
    assert doc["levels"][0]["stages"]["runner"]["key"] != doc["levels"][1]["stages"]["runner"]["key"]
    assert any(lv["latency_s"] is not None for lv in doc["levels"]), doc["levels"]
    assert doc["best_level"] == (2 if all(lv["passes"] for lv in doc["levels"]) else 1 if doc["levels"][0]["passes"]
                                 else None)
    # the double saw level 2's two sessions (the sample and its copy, 1-r2) side by side, after level 1's
    ses = srv.rows("session", n=3)
    assert len(ses) == 3 and all(x["frames"] == frames_of(SAMPLE_S) for x in ses)
    spans = sorted((x["started_at"], x["arrivals"][-1]) for x in ses)
    assert spans[1][0] >= spans[0][1]
    assert spans[2][0] < spans[1][1]
    runner2 = home / "store" / doc["levels"][1]["stages"]["runner"]["key"] / "samples" / SUBSET
    assert sorted(p.name for p in runner2.iterdir() if not p.name.startswith(".")) == ["1", "1-r2"]
    # printed: the table; written: the same table in capacity.md, and the page with table and figure
    assert "| level | sessions | failed | ineligible |" in r.stdout and "capacity of freeze-omni" in r.stdout
    assert (out / "capacity.md").read_text().strip() in r.stdout
    html = (out / "capacity.html").read_text()
    t = Tables()
    t.feed(html)
    (table,) = [rows for _, rows in t.tables if rows and rows[0][:2] == ["level", "sessions"]]
    assert [line[0] for line in table[1:]] == ["1", "2"] and table[2][4] == str(2 * frames_of(SAMPLE_S))
    svg = html[html.index("<svg"):html.index("</svg>")]
    assert svg.count('class="drift-p99"') == 1 and svg.count('class="drift-max"') == 1
    assert svg.count('class="latency"') == 1 and 'class="limit"' in svg and 'class="tolerance"' in svg
    with_latency = sum(lv["latency_s"] is not None for lv in doc["levels"])
    assert svg.count("<circle") == 2 * 2 + with_latency         # p99 and max at both levels, each latency
    assert "<script" not in html.lower()


@pytest.mark.serial
@pytest.mark.slow
def test_a_server_dying_at_level_2_stops_the_sweep_cleanly(home, tmp_path, cert, server, reply_wav):  # noqa: F811
    # one sample: level 1 is one session, level 2 its two copies; the double's process dies in its
    # second session, 0.6 s in, so both sessions of level 2 fail and level 4 never runs
    srv = server(reply_delay_s=0.5, reply_wav=str(reply_wav), die_after=20, die_how="exit", die_in_session=2)
    out = tmp_path / "sweep"
    r = dx(home, *sweep_args("1,2,4", 1, out), env={"MODEL_URL": srv.url, "MODEL_CA": str(cert[0])})
    assert r.returncode == 1, r.stderr[-3000:]
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("error: capacity stopped at level 2: 2 of 2 sessions failed") and "best level" in last
    assert srv.proc.wait(10) is not None                          # the double is gone
    doc = read_json(out / "capacity.json")
    schemas.validate("capacity", doc, "capacity.json")
    assert doc["status"] == "stopped" and doc["stopped"]["level"] == 2
    one, two = doc["levels"]                                      # level 4 did not run
    assert one["status"] == "ok" and one["failed"] == 0 and one["frames"] == frames_of(SAMPLE_S)
    assert two["status"] == "failed" and two["failed"] == 2 and two["passes"] is False
    assert list(two["stages"]) == ["runner"] and two["latency_s"] is None   # a failed level is not scored
    assert sorted(two["failures"]) == [f"{SUBSET}/1", f"{SUBSET}/1-r2"]
    assert all(why for why in two["failures"].values()) and two["reason"] == doc["stopped"]["reason"]
    assert doc["best_level"] == (1 if one["passes"] else None)
    assert "Stopped at level 2" in (out / "capacity.md").read_text()
    html = (out / "capacity.html").read_text()
    assert "Stopped at level 2" in html and "1-r2" in html and "<svg" in html
