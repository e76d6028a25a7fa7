"""The LLM judge client, engine and stage against a local chat-completions test double.

The server (chat_server.py) is a test double of an OpenAI-compatible endpoint, not a model: it
answers from a script and records what it received. Covered: retries (429 with Retry-After,
500, malformed replies, timeouts) and their bounds; a reply that never parses (unparsed after N
attempts, counted once, excluded from the mean); the cache (a rerun sends nothing and writes the
same bytes); the ledger and the usage report; concurrency; a refused key; and that the key is
never written anywhere.
"""

import json
import subprocess
import time

import pytest

from duplexeval_common.jsonio import read_json, read_jsonl
from duplexeval_common.schemas import problem
from duplexeval_common.llm.judges import OpenAIJudge

from ..conftest import command
from .chat_server import error, malformed, ok, slow
from .conftest import RATED, SECRET, interruption_stage, prompt, run_judge

FIELDS = {"context": "Tell me about Rome.", "interrupt": "Pizza instead?", "reply": "Sure, pizza."}
S = "samples/synthetic_user_interruption"


def by_reply(answers: dict, default=None, delay_s: float = 0.0):
    """A script answering by the reply text in the user message."""
    def script(body, n):
        user = body["messages"][-1]["content"]
        for needle, action in answers.items():
            if needle in user:
                return action
        return default or ok(RATED, delay_s)
    return script


def judge_here(monkeypatch, srv, **kw) -> OpenAIJudge:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    return OpenAIJudge(base_url=srv.base_url, **{"backoff_s": 0.01, "prompt": prompt("fdb-v1-interruption"), **kw})


# --- the client's retries -------------------------------------------------------------------

def test_429_with_retry_after_is_waited_for_then_succeeds(server, monkeypatch):
    srv = server([error(429, retry_after="1"), ok(RATED)])
    j = judge_here(monkeypatch, srv).judge(FIELDS)
    assert j.status == "ok" and j.score == 4 and j.requests == 2 and j.attempts == 1
    assert len(srv.requests) == 2
    assert srv.requests[1]["t"] - srv.requests[0]["t"] >= 0.95  # Retry-After: 1 (our own backoff is 0.01 s)


def test_500_then_success(server, monkeypatch):
    srv = server([error(500), error(503), ok(RATED)])
    j = judge_here(monkeypatch, srv).judge(FIELDS)
    assert (j.status, j.score, j.requests, len(srv.requests)) == ("ok", 4, 3, 3)
    assert srv.requests[2]["t"] - srv.requests[0]["t"] < 0.5  # backoff 0.01 s doubling, with jitter


def test_malformed_body_then_success(server, monkeypatch):
    srv = server([malformed(), ok(RATED)])
    j = judge_here(monkeypatch, srv).judge(FIELDS)
    assert (j.status, j.score, j.requests, j.attempts) == ("ok", 4, 2, 1)


def test_malformed_reply_is_asked_again_then_parsed(server, monkeypatch):
    srv = server([ok("It is quite relevant, I'd say four."), ok(RATED)])
    j = judge_here(monkeypatch, srv).judge(FIELDS)
    assert (j.status, j.score, j.attempts, len(srv.requests)) == ("ok", 4, 2, 2)
    assert j.tokens_in == 200 and j.tokens_out == 40  # both replies were paid for
    assert srv.requests[0]["body"] == srv.requests[1]["body"]  # the same request, as upstream re-asks


def test_timeout_then_success_and_timeouts_that_never_end(server, monkeypatch):
    srv = server([slow(RATED, 2.0), ok(RATED)])
    j = judge_here(monkeypatch, srv, timeout_s=0.5).judge(FIELDS)
    assert (j.status, j.score, j.requests) == ("ok", 4, 2)
    srv2 = server([slow(RATED, 2.0)])
    t = time.monotonic()
    j = judge_here(monkeypatch, srv2, timeout_s=0.3, max_retries=2).judge(FIELDS)
    assert j.status == "error" and j.score is None and j.requests == 3 and len(srv2.requests) == 3
    assert f"request to {srv2.base_url} failed after 3 attempts (last: timeout after 0.3 s)" == j.error
    assert time.monotonic() - t < 5


def test_retries_are_bounded_and_other_client_errors_are_not_retried(server, monkeypatch):
    srv = server([error(500)])
    j = judge_here(monkeypatch, srv, max_retries=2).judge(FIELDS)
    assert j.status == "error" and len(srv.requests) == 3 and "HTTP 500" in j.error
    srv2 = server([error(400)])
    j = judge_here(monkeypatch, srv2, max_retries=2).judge(FIELDS)
    assert j.status == "error" and len(srv2.requests) == 1 and "HTTP 400" in j.error


# --- the stage ------------------------------------------------------------------------------

def test_a_reply_that_never_parses_is_unparsed_counted_once_and_excluded(tmp_path, server):
    srv = server(by_reply({"gibberish": ok("I would rather not say."),
                           "weather": ok("Analysis: Off topic.\nI would rate the AI's response as 2.")}))
    inputs = interruption_stage(tmp_path / "in", ["Sure, for a pizza use flour.", "gibberish reply here",
                                                  "The weather is nice.", ""])
    r = run_judge(tmp_path, inputs, "openai", {"base_url": srv.base_url, "max_parse_attempts": 3})
    assert r.returncode == 0, r.stderr
    asked = [q for q in srv.requests if "gibberish" in q["body"]["messages"][-1]["content"]]
    assert len(asked) == 3 and len(srv.requests) == 5  # 3 attempts for it, 1 for each of the others
    j = read_json(tmp_path / "out" / S / "1/judgement.json")
    assert j["rating"] is None and j["llm"]["status"] == "unparsed" and j["llm"]["attempts"] == 3
    assert "unparsed" in j["reason"] and not (tmp_path / "out" / S / "1/rating.json").exists()
    scores = read_json(tmp_path / "out/judge.json")["scores"]
    assert (scores["judged"], scores["scored"], scores["unparsed"], scores["errors"], scores["no_reply"]) == \
        (3, 2, 1, 0, 1)
    assert scores["mean"] == 3.0  # (4 + 2) / 2: the unparsed one is not a zero
    ledger = read_jsonl(tmp_path / "out/judge-ledger.jsonl")
    assert [row["sample"] for row in ledger] == [f"synthetic_user_interruption/{i}" for i in range(3)]
    assert [row["status"] for row in ledger] == ["ok", "unparsed", "ok"]
    # a rerun asks nothing: the unparsed outcome is cached with its attempts
    r = run_judge(tmp_path, inputs, "openai", {"base_url": srv.base_url, "max_parse_attempts": 3}, out="again")
    assert r.returncode == 0 and len(srv.requests) == 5


def test_cache_hit_on_rerun_sends_nothing_and_writes_the_same_bytes(tmp_path, server):
    srv = server(by_reply({}, delay_s=0.05))
    inputs = interruption_stage(tmp_path / "in", ["Sure, pizza.", "Here is a recipe."])
    args = {"base_url": srv.base_url, "price": {"input_per_1k": 0.01, "output_per_1k": 0.03}}
    r = run_judge(tmp_path, inputs, "official-gpt", args, out="first")
    assert r.returncode == 0, r.stderr
    assert len(srv.requests) == 2
    r = run_judge(tmp_path, inputs, "official-gpt", args, out="second")
    assert r.returncode == 0, r.stderr
    assert len(srv.requests) == 2  # the server sees no second request
    for rel in [f"{S}/{i}/{n}" for i in (0, 1) for n in ("judgement.json", "rating.json", "_done.json")] + \
            ["judge-ledger.jsonl"]:
        assert (tmp_path / "first" / rel).read_bytes() == (tmp_path / "second" / rel).read_bytes(), rel
    first, second = (read_json(tmp_path / d / "stage.json")["invocation_notes"]["judge_usage"]
                     for d in ("first", "second"))
    assert (first["calls"], first["cache_hits"], first["tokens_in"], first["tokens_out"]) == (2, 0, 200, 40)
    assert first["cost"] == pytest.approx(0.2 * 0.01 + 0.04 * 0.03)
    assert (second["calls"], second["cache_hits"], second["tokens_in"], second["cost"]) == (0, 2, 0, 0.0)
    # judge.json: what the judgements cost, the same bytes whether computed or cached
    assert (tmp_path / "first/judge.json").read_bytes() == (tmp_path / "second/judge.json").read_bytes()
    assert read_json(tmp_path / "first/judge.json")["usage"] == {
        "judgements": 2, "tokens_in": 200, "tokens_out": 40, "cost": first["cost"],
        "price": {"input_per_1k": 0.01, "output_per_1k": 0.03}}
    ledger = read_jsonl(tmp_path / "second/judge-ledger.jsonl")
    for row in ledger:
        assert problem("judge-ledger", row) is None
        assert row["latency_s"] >= 0.05 and row["seed"] == 0 and row["model"] == "gpt-4-turbo"
        assert row["returned_model"] == "gpt-4-turbo-2024-04-09" and (row["tokens_in"], row["tokens_out"]) == (100, 20)
        assert row["prompt"]["id"] == "fdb-v1-interruption" and len(row["request_hash"]) == 64
    cache = tmp_path / "user-cache" / "judge"
    entries = sorted(cache.rglob("*.json"))
    assert [e.stem for e in entries] == sorted(row["request_hash"] for row in ledger)
    assert all(e.parent.name == e.stem[:2] for e in entries)
    # a resumed stage judges only what is missing
    (tmp_path / "second" / S / "1" / "judgement.json").unlink()
    r = run_judge(tmp_path, inputs, "official-gpt", args, out="second")
    assert r.returncode == 0 and len(srv.requests) == 2
    assert read_json(tmp_path / "second/stage.json")["invocation_notes"]["judge_usage"]["cache_hits"] == 1


def test_a_failed_request_fails_its_sample_is_in_the_ledger_and_is_asked_again(tmp_path, server):
    srv = server(by_reply({"boom": error(500)}))
    inputs = interruption_stage(tmp_path / "in", ["Sure, pizza.", "boom"])
    args = {"base_url": srv.base_url, "max_retries": 1, "backoff_s": 0.01}
    r = run_judge(tmp_path, inputs, "openai", args)
    assert r.returncode == 1 and len(srv.requests) == 3
    stage = read_json(tmp_path / "out/stage.json")
    assert stage["samples"]["synthetic_user_interruption/1"]["status"] == "failed"
    assert "HTTP 500" in stage["samples"]["synthetic_user_interruption/1"]["reason"]
    ledger = read_jsonl(tmp_path / "out/judge-ledger.jsonl")
    assert [(row["sample"], row["status"]) for row in ledger] == [("synthetic_user_interruption/0", "ok"),
                                                                  ("synthetic_user_interruption/1", "error")]
    assert read_json(tmp_path / "out/judge.json")["scores"]["errors"] == 1
    r = run_judge(tmp_path, inputs, "openai", args)
    assert r.returncode == 1 and len(srv.requests) == 5  # only the failed one is asked again


def test_a_refused_key_stops_the_stage_with_one_line(tmp_path, server):
    srv = server([error(401)])
    r = run_judge(tmp_path, interruption_stage(tmp_path / "in", ["Sure.", "Yes."]), "openai",
                  {"base_url": srv.base_url})
    assert r.returncode == 2, r.stderr
    errors = [line for line in r.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and f"request to {srv.base_url} failed: HTTP 401" in errors[0]
    assert "the API key was refused" in errors[0] and SECRET not in r.stderr
    assert len(srv.requests) <= 2  # no retries of a refused key


def test_check_validates_judge_args_without_network(tmp_path):
    def check(cfg):
        p = tmp_path / "cfg.json"
        p.write_text(json.dumps({"benchmark": "fdb-v1", **cfg}))
        return subprocess.run([command("judge"), "check", "--config", str(p)], capture_output=True, text=True)
    assert check({"judge": "openai", "judge_args": {"model": "qwen2.5:7b", "base_url": "http://x:1/v1"}}).stdout == "ok\n"
    cases = [({"prompt": "nope"}, "unknown prompt 'nope'"),
             ({"prompt": "mtr-safety"}, "unknown prompt 'mtr-safety'; known: fdb-v1-interruption"),
             ({"max_concurrency": 0}, "judge 'openai': judge_args max_concurrency must be an integer from 1 to 256 (got 0)"),
             ({"price": {"input": 1}}, 'price must be {"input_per_1k": x, "output_per_1k": y}'),
             ({"temprature": 0}, "judge 'openai': unknown judge_args temprature (known: api_key, api_key_env,")]
    for args, message in cases:
        r = check({"judge": "openai", "judge_args": args})
        assert r.returncode == 2 and message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_the_key_is_never_written(tmp_path, server):
    """Keys from the environment and from a setting (the orchestrator's secret reference), through
    successes, unparsed replies, failures and a refused key: no file, cache entry or output has them."""
    in_setting = "second-secret-from-a-setting-4d1e"
    srv = server(by_reply({"gibberish": ok("no idea"), "boom": error(500)}))
    inputs = interruption_stage(tmp_path / "in", ["Sure, pizza.", "gibberish", "boom"])
    outs = [run_judge(tmp_path, inputs, "openai", {"base_url": srv.base_url, "max_retries": 1}, out="env"),
            run_judge(tmp_path, inputs, "official-gpt",
                      {"base_url": srv.base_url, "api_key": "${DUPLEXEVAL_SECRET_0}", "max_retries": 1},
                      out="setting", extra_env={"DUPLEXEVAL_SECRET_0": in_setting}),
            run_judge(tmp_path, inputs, "openai", {"base_url": server([error(401)]).base_url}, out="refused")]
    assert [r.returncode for r in outs] == [1, 1, 2]
    assert {q["auth"] for q in srv.requests} == {f"Bearer {SECRET}", f"Bearer {in_setting}"}
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "judge-ledger.jsonl" for p in files) and any("user-cache" in p.parts for p in files)
    leaks = [(str(p.relative_to(tmp_path)), s) for p in files for s in (SECRET, in_setting)
             if s.encode() in p.read_bytes()]
    leaks += [("output", s) for r in outs for s in (SECRET, in_setting) if s in r.stdout + r.stderr]
    assert leaks == []


def test_two_hundred_judgements_run_concurrently(tmp_path, server):
    """200 judgements against a server that answers each in 1 s: bounded by max_concurrency (the
    server saw exactly 32 in flight at once; the wall time is perf/'s to measure, not a test's)."""
    srv = server(by_reply({}, delay_s=1.0))
    inputs = interruption_stage(tmp_path / "in", [f"Reply number {i} about pizza." for i in range(200)])
    t = time.monotonic()
    r = run_judge(tmp_path, inputs, "openai", {"base_url": srv.base_url, "max_concurrency": 32},
                  extra_env={"DUPLEXEVAL_PROGRESS": "lines"})
    wall = time.monotonic() - t
    assert r.returncode == 0, r.stderr[-2000:]
    assert len(srv.requests) == 200 and srv.max_in_flight == 32
    assert len(read_jsonl(tmp_path / "out/judge-ledger.jsonl")) == 200
    print(f"200 judgements, 1 s each, max_concurrency 32: {wall:.1f} s wall, "
          f"{srv.max_in_flight} in flight at most")
