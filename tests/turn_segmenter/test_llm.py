"""The LLM segmenter (Algorithm 1) as a stage, against a local chat-completions server started
by the test: tests/judge/chat_server.py, a protocol test double that replays six scripted
segmentations per dialogue (noisy copies of the known turns, tests/turn_segmenter/dialogues.py),
not a model. Checked: every user turn boundary within 100 ms, the requests (prompt, transcript,
seeds), the record and ledger, the cache, and the unhappy paths (a malformed answer, a server
that dies, a refused or missing key) as one line per dialogue."""

import json
import re

import pytest

from duplexeval_common.jsonio import read_jsonl
from duplexeval_common.schemas import validate
from duplexeval_mtr import judging as mtr
from duplexeval_mtr.prompts import PROMPTS as prompts

from ..judge.chat_server import error, ok
from .conftest import SECRET
from .dialogues import dialogue, scripted_runs, write
from .helpers import boundaries_within, run_cli, run_stage, segmentation


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)


def first_line(d: dict) -> str:
    """The dialogue's first transcript line, which the double uses to tell dialogues apart."""
    w = d["user"]["words"][0]
    return f"user speaker, start/end time: ({w['start']:.2f}"


def replay(scripts: dict[str, list[list[dict]]], dialogues: dict[str, dict], fence_odd: bool = True,
           override=None):
    """A script for the double: run k (seed k) of a dialogue answers scripts[key][k]."""
    by_line = {first_line(d): k for k, d in dialogues.items()}

    def answer(body, n):
        text = body["messages"][0]["content"]
        key = next(k for line, k in by_line.items() if text.startswith(line))
        seed = body["seed"]
        if override:
            a = override(key, seed)
            if a is not None:
                return a
        reply = json.dumps({"filtered_turn": scripts[key][seed], "continuation_info": []})
        return ok(f"```json\n{reply}\n```" if fence_odd and seed % 2 else reply)
    return answer


def llm_config(srv, **args) -> dict:
    """The LLM segmenter of MTR-DuplexBench (its `segment` hook and prompt) against the test server."""
    return {"benchmark": "mtr", "llm": {"backend": "openai", "args": {"base_url": srv.base_url, "max_retries": 0,
                                                  "backoff_s": 0.0, "timeout_s": 5.0, **args}}}


def test_recovers_every_user_turn_within_100_ms(server, key, tmp_path):
    ds = {f"mtr_dq/d{s}": dialogue(s) for s in range(4)}
    scripts = {k: scripted_runs(d["turns"], i) for i, (k, d) in enumerate(ds.items())}
    srv = server(replay(scripts, ds))
    inputs = write(tmp_path / "in", ds)
    cfg = llm_config(srv, max_concurrency=6)
    rc, stage = run_stage(inputs, tmp_path / "out", cfg)
    assert rc == 0, stage["samples"]
    assert len(srv.requests) == 24
    for key_, d in ds.items():
        rec = validate("segmentation", segmentation(tmp_path / "out", key_))
        assert rec["method"] == "llm" and rec["offline"] is None
        assert boundaries_within(rec["turns"], d["turns"]), (key_, rec["turns"], d["turns"])
        assert all(t["votes"] >= 2 for t in rec["turns"])
        runs = rec["llm"]["runs"]
        assert [r["run"] for r in runs] == [1, 2, 3, 4, 5, 6] and [r["seed"] for r in runs] == [0, 1, 2, 3, 4, 5]
        assert all(r["status"] == "ok" and r["prompt"]["id"] == "mtr-turn-segmentation" for r in runs)
        assert len({r["request_hash"] for r in runs}) == 6
        # the spurious turn of run 5 is a dropped one-vote candidate
        assert any(c["runs"] == [5] and not c["kept"] for c in rec["llm"]["candidates"])
        s = rec["settings"]
        assert (s["runs"], s["iou_threshold"], s["min_votes"], s["median"], s["merge_overlaps"]) == (6, 0.3, 2, "upper", True)
        assert rec["llm"]["model"] == "gpt-4o" and rec["llm"]["official"] is False
        assert rec["llm"]["judge_settings"]["base_url"] == srv.base_url
    # the request: the judge's versioned prompt over the release's transcript of both channels
    d0 = ds["mtr_dq/d0"]
    body = next(q["body"] for q in srv.requests if q["body"]["messages"][0]["content"].startswith(first_line(d0))
                and q["body"]["seed"] == 0)
    rows = []
    for role in ("user", "model"):
        words = d0[role]["words"]
        line = []
        for w in words:  # the lines the segmenter makes of the words: gaps <= 0.5 s, split after "."
            if line and (w["start"] - line[-1]["end"] > 0.5 or line[-1]["text"].endswith(".")):
                rows.append({"speaker": role, "start": line[0]["start"], "end": line[-1]["end"],
                             "text": " ".join(x["text"] for x in line)})
                line = []
            line.append(w)
        rows.append({"speaker": role, "start": line[0]["start"], "end": line[-1]["end"],
                     "text": " ".join(x["text"] for x in line)})
    assert body["messages"] == prompts.get(mtr.SEGMENT).render(transcript=mtr.transcript(rows), start=0.0,
                                                               end=d0["duration"])
    assert body["model"] == "gpt-4o" and "temperature" not in body
    # the ledger: one judge-ledger row per run, wall time included
    ledger = read_jsonl(tmp_path / "out" / "turn-segmenter-ledger.jsonl")
    assert [(r["sample"], r["run"]) for r in ledger] == [(k, n) for k in sorted(ds) for n in range(1, 7)]
    assert all(validate("judge-ledger", r) and isinstance(r["latency_s"], float) for r in ledger)
    # nothing written holds the key
    for p in (tmp_path / "out").rglob("*"):
        assert not p.is_file() or SECRET not in p.read_text(errors="replace")
    # a rerun elsewhere is served from the cache: no request, the same bytes
    rc, stage2 = run_stage(inputs, tmp_path / "again", cfg)
    assert rc == 0 and len(srv.requests) == 24
    assert stage2["invocation_notes"]["llm_usage"]["cache_hits"] == 24
    for k in ds:
        assert (tmp_path / "out" / "samples" / k / "segmentation.json").read_bytes() == \
            (tmp_path / "again" / "samples" / k / "segmentation.json").read_bytes()


def test_voting_iou_029_030_min_votes_and_merge_through_the_stage(server, key, tmp_path):
    d = dialogue(7, rounds=3)
    A, B, C = {"start": 1.0, "end": 5.0}, {"start": 10.0, "end": 20.0}, {"start": 40.0, "end": 50.0}
    late = {"start": 17.05, "end": 20.0}   # IoU with B: 2.95 / 10 = 0.295
    extra = {"start": 38.0, "end": 41.0}   # IoU with C: 1 / 12, but overlapping it
    scripts = {"s/d": [[A, B, C, extra], [A, B, C, extra], [A, B, C], [A, late, C], [A, late, C], [A, C]]}
    srv = server(replay(scripts, {"s/d": d}))
    inputs = write(tmp_path / "in", {"s/d": d})

    def turns(name, **cfg):
        rc, _ = run_stage(inputs, tmp_path / name, {**llm_config(srv), "dialogue_end_s": 100.0, **cfg})
        assert rc == 0
        rec = segmentation(tmp_path / name, "s/d")
        return [(t["start"], t["end"], t["votes"], t["merged"]) for t in rec["turns"]], rec
    # 0.30: `late` is its own candidate (2 votes, kept) and overlaps B; `extra` (2 votes) overlaps
    # C: the final merge joins each pair
    got, rec = turns("t30")
    assert got == [(1.0, 5.0, 6, 1), (10.0, 20.0, 5, 2), (38.0, 50.0, 8, 2)]
    assert [c["runs"] for c in rec["llm"]["candidates"]] == [[1, 2, 3, 4, 5, 6], [1, 2, 3], [1, 2, 3, 4, 5, 6],
                                                             [1, 2], [4, 5]]
    assert rec["windows"] == [{"round": 1, "start": 1.0, "end": 20.0}, {"round": 2, "start": 10.0, "end": 50.0},
                              {"round": 3, "start": 38.0, "end": 100.0}]
    # 0.29: `late` joins B's cluster (5 votes); the upper median of 10,10,10,17.05,17.05 is 10
    got, _ = turns("t29", iou_threshold=0.29)
    assert got == [(1.0, 5.0, 6, 1), (10.0, 20.0, 5, 1), (38.0, 50.0, 8, 2)]
    # without the final merge the overlapping turns stay, as the released code leaves them
    got, _ = turns("nomerge", merge_overlaps=False)
    assert [g[:2] for g in got] == [(1.0, 5.0), (10.0, 20.0), (17.05, 20.0), (38.0, 41.0), (40.0, 50.0)]
    # min_votes 3: the two-vote candidates are dropped, nothing left to merge
    got, _ = turns("mv3", min_votes=3)
    assert got == [(1.0, 5.0, 6, 1), (10.0, 20.0, 3, 1), (40.0, 50.0, 6, 1)]
    # the middle median
    got, _ = turns("mid", iou_threshold=0.29, median="middle")
    assert got[1] == (10.0, 20.0, 5, 1)
    assert len(srv.requests) == 6  # every later stage run from the cache


def test_malformed_answer_fails_that_dialogue_with_one_line(server, key, tmp_path):
    ds = {"s/good": dialogue(1, rounds=3), "s/bad": dialogue(2, rounds=3)}
    scripts = {k: scripted_runs(d["turns"], 0) for k, d in ds.items()}
    srv = server(replay(scripts, ds, override=lambda k, seed: ok("Sure! The turns are:\n31.5 to 36.8")
                        if k == "s/bad" and seed == 2 else None))
    inputs = write(tmp_path / "in", ds)
    r = run_cli(tmp_path, inputs, llm_config(srv, max_parse_attempts=2), env={"OPENAI_API_KEY": SECRET})
    assert r.returncode == 1
    stage = json.loads((tmp_path / "out" / "stage.json").read_text())
    assert stage["samples"]["s/good"]["status"] == "ok"
    reason = stage["samples"]["s/bad"]["reason"]
    assert reason == ("LLM segmentation run 3 of 6: no JSON turns in the reply after 2 attempt(s) "
                      "('Sure! The turns are: 31.5 to 36.8'); 5 of 6 runs parsed, 6 needed")
    assert f"error: s/bad: {reason}" in r.stderr.splitlines()
    assert not (tmp_path / "out" / "samples" / "s" / "bad").exists()
    # with min_parsed_runs 5 the dialogue is segmented from the five, the unparsed run recorded
    rc, _ = run_stage(inputs, tmp_path / "five", {**llm_config(srv, max_parse_attempts=2), "min_parsed_runs": 5})
    rec = segmentation(tmp_path / "five", "s/bad")
    assert rc == 0 and [x["status"] for x in rec["llm"]["runs"]] == ["ok", "ok", "unparsed", "ok", "ok", "ok"]
    assert all(3 not in c["runs"] for c in rec["llm"]["candidates"])  # run numbers as in the ledger
    assert any(c["runs"] == [1, 2, 4, 5, 6] for c in rec["llm"]["candidates"])
    assert boundaries_within(rec["turns"], ds["s/bad"]["turns"])


def test_a_server_that_dies_fails_each_dialogue_with_one_line(server, key, tmp_path):
    ds = {"s/a": dialogue(1, rounds=2), "s/b": dialogue(2, rounds=2)}
    srv = server([ok("{}")])
    cfg = llm_config(srv)
    srv.shutdown()
    srv.server_close()
    inputs = write(tmp_path / "in", ds)
    r = run_cli(tmp_path, inputs, cfg, env={"OPENAI_API_KEY": SECRET})
    assert r.returncode == 1
    stage = json.loads((tmp_path / "out" / "stage.json").read_text())
    for k in ds:
        reason = stage["samples"][k]["reason"]
        assert re.fullmatch(r"LLM segmentation run \d of 6 failed: request to http://127\.0\.0\.1:\d+/v1 failed "
                            r"after 1 attempts \(last: connection error: .*\)", reason), reason
        assert any(line.startswith(f"error: {k}: LLM segmentation run") for line in r.stderr.splitlines())
    assert not (tmp_path / "out" / "samples" / "s").exists() or not any((tmp_path / "out" / "samples" / "s").iterdir())
    assert SECRET not in r.stderr


def test_a_refused_key_stops_every_dialogue_after_one_refusal(server, key, tmp_path):
    ds = {"s/a": dialogue(1, rounds=2), "s/b": dialogue(2, rounds=2)}
    srv = server([error(401)])
    inputs = write(tmp_path / "in", ds)
    rc, stage = run_stage(inputs, tmp_path / "out", llm_config(srv, max_concurrency=1))
    assert rc == 1 and len(srv.requests) == 1
    reasons = {stage["samples"][k]["reason"] for k in ds}
    assert len(reasons) == 1 and "HTTP 401" in reasons.pop()


def test_a_missing_key_stops_the_stage_with_one_line(tmp_path):
    inputs = write(tmp_path / "in", {"s/a": dialogue(1, rounds=2)})
    r = run_cli(tmp_path, inputs, {"benchmark": "mtr", "llm": {"backend": "openai", "args": {"model": "gpt-4o"}}})
    assert r.returncode == 2 and r.stderr == "error: judge 'openai' needs an API key in $OPENAI_API_KEY\n"
    assert not (tmp_path / "out" / "samples" / "s").exists()
    # check validates without a key or network; a bad argument is one line
    assert run_cli(tmp_path, inputs, {"benchmark": "mtr", "llm": {"args": {"model": "gpt-4o"}}},
                   sub="check").stdout == "ok\n"
    r = run_cli(tmp_path, inputs, {"benchmark": "mtr", "llm": {"args": {"temprature": 0}}}, sub="check")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "temprature" in r.stderr
    r = run_cli(tmp_path, inputs, {"benchmark": "mtr", "llm": {"args": {"prompt": "mtr-safety"}}}, sub="check")
    assert r.returncode == 2 and "llm.args.prompt is not a setting" in r.stderr


@pytest.mark.parametrize("config, message", [
    ({"llm": {"backend": "openai", "args": {"max_concurrency": 0}}},
     "turn-segmenter: llm backend 'openai': llm.args max_concurrency must be an integer from 1 to 256 (got 0)"),
    ({"llm": {"backend": "openai", "args": {"seed": -1}}},
     "turn-segmenter: llm backend 'openai': llm.args seed must be an integer >= 0 or null (got -1)"),
    ({"llm": {"backend": "local-llm", "args": {"threads": 0}}},
     "turn-segmenter: llm backend 'local-llm': llm.args threads must be an integer from 1 to 1024 (got 0)"),
    ({"llm": {"backend": "openai", "args": {}}, "span_end_s": 0},
     "turn-segmenter config: at span_end_s: 0 is less than or equal to the minimum of 0"),
    ({"dialogue_end_s": -1.5}, "turn-segmenter config: at dialogue_end_s: -1.5 is less than or equal to the minimum of 0"),
])
def test_a_bad_number_is_one_error_line_and_exit_2_before_anything_runs(tmp_path, config, message):
    r = run_cli(tmp_path, tmp_path, {"benchmark": "mtr", **config}, sub="check")
    assert r.returncode == 2 and r.stdout == "" and r.stderr.splitlines() == [f"error: {message}"], r.stderr
