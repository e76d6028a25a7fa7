"""End to end: `duplexeval eval --benchmark fdb-v1.5` on the mini set (2 samples per task) with the
control runners, whose numbers are known by construction:

- `silence` never speaks: nothing is exercised, there is no stop and no response;
- `always-talk` talks through everything: every sample is exercised, it never stops, and it is
  speaking across the end of every overlap;
- `fixed-latency` answers 1.0 s after each end of user speech and stops at the start of any user
  speech: where the overlap found it speaking it stopped, and its response latency after the
  overlap's end is its delay (to the VAD's timing).

Each run also shows the paired sessions (output.wav from input.wav, clean_output.wav from
clean_input.wav, each runner record naming its input) and the behaviour judge's requests equal
upstream's for the same transcripts (score/behavior.py's request, checked against eval_behavior.py
in tests/golden/), sent through the judge stage to the chat-completions test server
(tests/judge/chat_server.py: scripted answers, not a model).
"""

import json
import subprocess

import pytest

from duplexeval_common.jsonio import read_json, read_jsonl
from duplexeval_fdb_v1_5.score import behavior

from tests.conftest import command
from tests.judge import chat_server

TASKS = ("user_interruption", "user_backchannel", "talking_to_other", "background_speech")
VAD_TOLERANCE_S = 0.15


def evaluate(home, model, *args, judge="none"):
    r = subprocess.run([command("duplexeval"), "--home", str(home), "eval", "--benchmark", "fdb-v1.5",
                        "--model", model, "--judge", judge, *args], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    run = read_json(home / "runs" / "latest" / "run.json")
    stages = {s["name"]: home / "store" / s["key"] for s in run["stages"]}
    metrics = read_json(stages["aggregate"] / "metrics.json")
    rows = {r["sample_id"]: r for r in read_jsonl(stages["aggregate"] / "samples.jsonl")}
    return run, stages, metrics, rows


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    return tmp_path_factory.mktemp("v15")


def test_silence_is_exercised_by_nothing(home):
    run, stages, metrics, rows = evaluate(home, "silence", "--benchmark-arg", "adaptation=false")
    assert [s["name"] for s in run["stages"]] == ["dataset", "runner", "asr", "judge", "aggregate"]
    assert set(metrics["subsets"]) == set(TASKS)
    for sub, m in metrics["subsets"].items():
        u = m["unified"]
        assert m["n"] == 2 and u["counts"]["eligible"] == 2, sub
        assert u["metrics"]["exercised_rate"]["value"] == 0 and u["counts"]["exercised"] == 0
        assert u["metrics"]["stop_latency_s"]["n"] == 0
        assert u["metrics"]["no_response_rate"]["value"] == 1
        assert m["official"]["timing"]["stop_latency_s"]["n_samples"] == 0
        assert m["official"]["timing"]["response_latency_s"]["n_samples"] == 0
    # the paired sessions: each output made from its own input, both the input's length
    rd = stages["runner"] / "samples" / "user_interruption" / "0"
    main, clean = read_json(rd / "runner.json"), read_json(rd / "clean_runner.json")
    assert (main["session"]["name"], main["session"]["input"]) == ("overlap", "input.wav")
    assert (clean["session"]["name"], clean["session"]["input"]) == ("clean", "clean_input.wav")
    assert main["duration_s"] == clean["duration_s"]
    # the ASR stage transcribed both runs and both inputs
    ad = stages["asr"] / "samples" / "user_interruption" / "0"
    assert {"output.json", "clean_output.json", "input.json", "clean_input.json"} <= {p.name for p in ad.iterdir()}


def test_always_talk_never_stops(home):
    _, _, metrics, rows = evaluate(home, "always-talk", "--benchmark-arg", "adaptation=false")
    for sub, m in metrics["subsets"].items():
        u = m["unified"]
        assert u["metrics"]["exercised_rate"]["value"] == 1, sub
        assert u["counts"]["stops_observed"] == 0
        assert u["metrics"]["speaking_at_end_rate"]["value"] == 1
        assert u["metrics"]["credited_stop_rate"]["value"] == 0
    assert all(r["unified"]["outcome"] == "speaking_at_end" for r in rows.values())


def test_the_report_hook_builds_an_index_and_a_page_per_sample(home):
    """`duplexeval report` of the always-talk run (its eval, like every test's but the report's
    own, ran with --no-html: the root conftest.py): the index names every task, and each of the 8
    samples has its page, with the overlap run's timeline viewer above the clean twin's figure and
    the players."""
    r = subprocess.run([command("duplexeval"), "--home", str(home), "report"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    run_dir = home / "runs" / "latest"
    index = (run_dir / "report.html").read_text()
    assert "always-talk" in index and all(task in index for task in TASKS)
    pages = sorted(p.relative_to(run_dir / "samples").as_posix() for p in (run_dir / "samples").rglob("*.html"))
    assert pages == sorted(f"{task}/{i}.html" for task in TASKS for i in (0, 1))
    page = (run_dir / "samples" / "user_interruption" / "0.html").read_text()
    top, clean = page.index("<h2>With the overlap (input.wav, output.wav)</h2>"), page.index("<h2>Clean twin")
    assert top < page.index('class="timeline"') < clean < page.index("<img", clean) and 'id="audio-user"' in page


def test_fixed_latency_stops_at_the_overlap_and_answers_after_its_delay(home):
    _, _, metrics, rows = evaluate(home, "fixed-latency")
    exercised = [r for r in rows.values() if r["unified"]["exercised"]]
    assert exercised, "the mini set's overlaps come while the control speaks"
    for r in exercised:
        u = r["unified"]
        assert u["stop_observed"] and u["stop_s"] < VAD_TOLERANCE_S + 0.1, (r["sample_id"], u["stop_s"])
        assert u["outcome"] == "response" and abs(u["latency_s"] - 1.0) < VAD_TOLERANCE_S, (r["sample_id"], u)
    for sub, m in metrics["subsets"].items():
        lat = m["unified"]["metrics"]["response_latency_s"]
        assert abs(lat["value"] - 1.0) < VAD_TOLERANCE_S, (sub, lat)
        assert "adaptation" in m["official"] and m["official"]["adaptation"]["trimmed_means"]["post"]


def test_the_behaviour_judge_sends_upstreams_requests(home, tmp_path):
    """The judge stage's request for each sample is score/behavior.py's request (upstream's
    messages, model gpt-4o-2024-08-06 and seed 1) for the sample's four transcripts; a reply that
    does not parse is asked again with seed 2; the label lands in content_tag.json and in the
    official ratios."""
    answers = {}

    def script(body, n):
        seed = body.get("seed")
        if n == 0:
            return chat_server.ok("I think it is C_RESPOND.")  # no JSON object: asked again
        answers[n] = seed
        return chat_server.ok('{ "behaviour": ["C_RESPOND"] }')
    srv = chat_server.start(script)
    try:
        run, stages, metrics, rows = evaluate(
            home, "fixed-latency", "--subset", "user_interruption", "--benchmark-arg", "adaptation=false",
            "--judge-arg", f"base_url={srv.base_url}", "--judge-arg", "api_key=planted-test-key-0123456789abcdef",
            "--judge-arg", "max_concurrency=1", judge="official-gpt")
    finally:
        srv.shutdown()
        srv.server_close()
    reqs = [q["body"] for q in srv.requests]
    assert [q["seed"] for q in reqs] == [1, 2, 1]
    asr = stages["asr"] / "samples" / "user_interruption"
    for sid in ("0", "1"):
        docs = {name: json.loads((asr / sid / name).read_text()) for name in behavior.FILES.values()}
        want = behavior.request(docs)
        assert any(q["messages"] == want["messages"] and q["model"] == want["model"] for q in reqs), sid
        jd = stages["judge"] / "samples" / "user_interruption" / sid
        assert read_json(jd / "content_tag.json") == {"behaviour": ["C_RESPOND"]}
    b = metrics["subsets"]["user_interruption"]["official"]["behaviour"]
    assert b["C"] == {"C_RESPOND": 1.0} and b["samples"] == 2
    judge = read_json(stages["judge"] / "judge.json")
    assert judge["official"] is True and judge["model"] == "gpt-4o-2024-08-06"
    assert all("planted-test-key-0123456789abcdef" not in p.read_text(errors="replace")
               for p in home.rglob("*.json") if p.is_file())
