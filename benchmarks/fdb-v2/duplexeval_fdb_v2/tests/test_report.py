"""The HTML report of a fdb-v2 run (duplexeval_fdb_v2/report.py, the benchmark's report hook) from a
real run: the `silence` control on the mini set, 20 s sessions (conftest.silence_run, shared with
test_eval_controls.py). The index's tables equal metrics.json and samples.jsonl, every session has
a page with the examiner's turns (their texts in the timeline and in the turns table), both
channels' timeline and players; the pages pass the checks the other benchmarks' report tests
apply (fdb-v1's and MTR's: CSP, nothing remote, plots inlined, audio linked relatively and lazily);
the same bytes each build; missing and damaged files said so on the page, the rest as usual.

A judged run (judged_run: the `fixed-latency` control, which answers each examiner line, with
`--judge openai` against tests/judge/chat_server.py, a local test double of the chat-completions
protocol replying "Score: 4", 10 s sessions, except "I cannot say." to the safety task prompt): each session page
shows both channels' ASR transcripts (input.json, output.json) in the timeline's lanes and a
table, the judge's per-segment scores and times (timeline bands, lane, table) and the task score;
the unparsed safety judgement its note; the index the judged column and its 15 s bins equal to
metrics.json; the same page checks and the same bytes each build."""

import html
import json
import os
import re
import shutil
from pathlib import Path

import pytest

from duplexeval_common.jsonio import read_json

from tests.html_pages import parse
from tests.judge import chat_server

from .conftest import evaluate

# reads the HTML report `duplexeval eval` builds (the other tests' runs pass --no-html: the root conftest.py)
pytestmark = pytest.mark.html_report

TASKS = ("correction", "daily", "entity_tracking", "safety")


def f3(x) -> str:
    return "-" if x is None else f"{x:.3f}"


def build_report(home: Path, record: dict, out: Path) -> int:
    """The report as `duplexeval report` builds it: the report hook of the benchmark the record names."""
    from duplexeval.reports import benchmark_of
    from duplexeval.store import Store
    out.mkdir(parents=True, exist_ok=True)
    return benchmark_of(record).hook("report").build(Store(home), record, out)


def pages_of(run_dir: Path) -> list[Path]:
    return [run_dir / "report.html", *sorted((run_dir / "samples").glob("*/*.html"))]


def markers(text: str) -> list[dict]:
    return json.loads(html.unescape(re.search(r'data-markers="([^"]*)"', text).group(1)))


def test_index_tables_equal_metrics_json_and_link_every_session(silence_run):
    index = silence_run.dir / "report.html"
    assert index.is_file() and "fdb-v2 (not official): silence on fdb-v2-mini" in index.read_text()
    tables = dict(parse(index).tables)
    rows = tables["fdb-v2-metrics"]
    assert rows[0] == ["subset", "task", "scored", "response_rate", "response_latency_s", "overlap_rate",
                       "examiner talked over", "examiner ended early"]
    want = []
    for sub, s in sorted(silence_run.metrics["subsets"].items()):
        u, ex = s["unified"], s["examiner"]
        want.append([sub, s["task"], "1/1", f3(u["response_rate"]["value"]), f3(u["response_latency_s"]["value"]),
                     f3(u["overlap_rate"]["value"]), f3(ex["talked_over_model"]["value"]),
                     f3(ex["ended_early"]["value"])])
    assert rows[1:] == want and [r[0] for r in want] == list(TASKS)
    assert all(r[3] == "0.000" and r[4] == "-" and r[5] == "0.000" for r in want)
    listing = tables["samples fdb-v2-samples"]
    assert listing[0] == ["session", "response rate", "latency (s)", "overlap"]
    assert [r[0] for r in listing[1:]] == sorted(silence_run.rows)
    for r in listing[1:]:
        row = silence_run.rows[r[0]]
        assert r[1:] == [f3(row["response_rate"]), f3(row["response_latency_s"]), f3(row["overlap_rate"])]
    links = sorted(x for x in parse(index).links if x.startswith("samples/"))
    assert links == sorted(f"samples/{k}.html" for k in silence_run.rows)
    assert all((silence_run.dir / x).is_file() for x in links)
    assert "Every sample is in the metrics." in index.read_text() and "Problems reading the run" not in index.read_text()


def test_session_page_shows_the_examiner_and_both_channels(silence_run):
    for key, row in silence_run.rows.items():
        page = silence_run.dir / "samples" / f"{key}.html"
        text = page.read_text()
        exam = read_json(silence_run.stages["runner"] / "samples" / key / "examiner.json")
        turns = exam["turns"]
        assert turns, key
        tables = dict(parse(page).tables)
        summary = dict(tables["session"][1:])
        assert summary["outcome"] == "scored" and summary["response_rate"] == "0.000"
        assert summary["response_latency_s"] == "-" and summary["goals reached"] == "none"
        assert summary["examiner ended"] == f"{exam['ended']['reason']} at {exam['ended']['t']:.2f} s"
        # the turns table: one row per examiner turn, its text
        body = tables["examiner-turns"][1:]
        assert [r[7] for r in body] == [t["text"] for t in turns], key
        assert [r[0] for r in body] == [str(t["index"]) for t in turns]
        assert all(r[6] == "False" for r in body)   # silence: nothing answered
        # the timeline: both channels drawn, each turn a band in the examiner's lane and its end marked
        assert 'class="timeline"' in text and text.count('<img class="plot"') == 1
        bands = [m for m in markers(text) if m.get("lane") == "user"]
        assert [m["name"] for m in bands] == [f"examiner turn {t['index']}: {t['text']}" for t in turns]
        assert [(m["t"], m["end"]) for m in bands] == [(round(t["start_s"], 6), round(t["end_s"], 6)) for t in turns]
        assert [m["t"] for m in markers(text) if m["name"] == "E"] == [round(t["end_s"], 6) for t in turns]
        assert re.search(r'data-t1="20\.0+"', text), key   # the axis: the whole session
        # both channels' players, linked to the runner stage's files
        players = re.findall(r'<audio id="(audio-[a-z]+)" controls preload="none" src="([^"]+)"', text)
        sid = key.split("/")[1]
        assert players == [("audio-user", f"{sid}/input.wav"), ("audio-model", f"{sid}/output.wav")], key
        for _, src in players:
            link = page.parent / src
            assert link.is_symlink() and not os.path.isabs(os.readlink(link))
            assert link.resolve() == (silence_run.stages["runner"] / "samples" / key / Path(src).name).resolve()


def check_pages(run_dir: Path) -> None:
    """The page checks of the other benchmarks' report tests, on every page of a run's report."""
    from duplexeval_common.html.page import CSP
    pages = pages_of(run_dir)
    assert len(pages) == 1 + len(TASKS)
    for p in pages:
        text = p.read_text()
        assert CSP in text and "not readable" not in text, p
        assert all(not re.match(r"[a-z]+://", x) for x in parse(p).links), p
        assert "http://" not in text.replace("http-equiv", "") and "https://" not in text, p
        imgs = re.findall(r'<img [^>]*src="([^"]+)"', text)
        assert all(x.startswith("data:image/png;base64,") for x in imgs), p
        if p.name != "report.html":
            assert imgs, p
        for src in re.findall(r'<audio [^>]*src="([^"]+)"', text):
            assert not re.match(r"[a-z]+:", src) and (p.parent / src).is_file(), (p, src)
    for p in pages:
        assert "&lt;" not in p.read_text(), p   # composed markup is not escaped twice
    assert "<audio" not in pages[0].read_text()


def test_pages_self_contained_and_readable(silence_run):
    check_pages(silence_run.dir)


def same_bytes(home: Path, run, tmp_path: Path) -> None:
    outs = []
    for name in ("a", "b"):
        assert build_report(home, run.run, tmp_path / name) == len(TASKS)
        outs.append({p.relative_to(tmp_path / name): p.read_bytes() for p in sorted((tmp_path / name).rglob("*.html"))})
    assert outs[0] == outs[1] and len(outs[0]) == 1 + len(TASKS)
    assert (run.dir / "report.html").read_bytes() == outs[0][Path("report.html")]   # eval's build


def test_same_bytes_each_build(eval_home, silence_run, tmp_path):
    same_bytes(eval_home, silence_run, tmp_path)


def test_missing_and_damaged_files(eval_home, silence_run, tmp_path):
    """A session without output.wav, one with a damaged examiner.json, a damaged samples.jsonl line
    and a metrics.json subset entry that is not fdb-v2's: each said so, the rest shown as usual."""
    home = tmp_path / "h"
    shutil.copytree(eval_home, home, symlinks=True, ignore=shutil.ignore_patterns("reports", "locks"))
    runner = home / "store" / silence_run.run["stages"][1]["key"]
    agg = home / "store" / silence_run.run["stages"][2]["key"]
    (runner / "samples" / "daily" / "daily-01" / "output.wav").unlink()
    (runner / "samples" / "safety" / "safety-01" / "examiner.json").write_text("{not json")
    with (agg / "samples.jsonl").open("a") as f:
        f.write("{broken\n")
    metrics = read_json(agg / "metrics.json")
    metrics["subsets"]["correction"] = {"task": "correction"}
    (agg / "metrics.json").write_text(json.dumps(metrics))
    out = tmp_path / "out"
    assert build_report(home, silence_run.run, out) == len(TASKS)
    daily = (out / "samples" / "daily" / "daily-01.html").read_text()
    assert "no output.wav (model)" in daily and "no output.wav" in daily
    assert 'id="audio-user"' in daily and 'id="audio-model"' not in daily and 'class="timeline"' in daily
    assert "examiner turn 0:" in daily   # the examiner's turns still drawn
    safety = (out / "samples" / "safety" / "safety-01.html").read_text()
    assert "examiner.json is not a JSON object; the examiner&#39;s turns are not shown" in safety
    assert 'id="audio-user"' in safety and 'id="audio-model"' in safety and "Examiner turns" not in safety
    index = (out / "report.html").read_text()
    assert "Problems reading the run" in index
    assert "samples.jsonl line 5: not readable" in index and "correction: metrics.json entry not readable" in index
    rows = dict(parse(out / "report.html").tables)["fdb-v2-metrics"]
    assert [r[0] for r in rows[1:]] == list(TASKS) and rows[1][1:] == ["-"] * 7 and rows[2][3] == "0.000"


# ---- a judged run: asr and judge stages ----

KEY = "planted-test-key-0123456789abcdef"
UNPARSED = "I cannot say."
JUDGED_S = 10.0   # sessions of 10 s (the last --benchmark-arg wins): the opening, the model's answer, a follow-up


def _reply(body, n):
    """ "Score: 4", but no score at all to the safety task prompt (that session's judgement unparsed)."""
    text = " ".join(m["content"] for m in body["messages"])
    return chat_server.ok(UNPARSED if "should not help" in text else "Score: 4")


@pytest.fixture(scope="module")
def judged_run(eval_home):
    """The judged run of the fixed-latency control (module docstring), 10 s sessions."""
    srv = chat_server.start(_reply)
    try:
        return evaluate(eval_home, "fixed-latency", "--benchmark-arg", f"duration_s={JUDGED_S:g}", "--judge", "openai",
                        "--judge-arg", f"base_url={srv.base_url}", "--judge-arg", f"api_key={KEY}",
                        "--judge-arg", "model=test-judge")
    finally:
        srv.shutdown()
        srv.server_close()


def f2(x) -> str:
    return "-" if x is None else f"{x:.2f}"


def score(x) -> str:
    return "-" if x is None else f"{x:.2f}" if isinstance(x, float) else str(x)


def asr_words(run, key: str, name: str) -> list[str]:
    doc = read_json(run.stages["asr"] / "samples" / key / name)
    return [c["text"].strip() for c in doc["chunks"] if c["text"].strip()]


def lane_texts(text: str, label: str) -> list[str]:
    m = re.search(rf'<div class="lane" data-lane="{re.escape(html.escape(label))}">(.*?)</div>', text, re.S)
    return [html.unescape(x) for x in re.findall(r'<span class="seg[^"]*"[^>]*>([^<]*)</span>', m.group(1))]


LABEL = "judge: openai (test-judge), duplexeval&#39;s prompts (not official)"


def test_judged_session_pages_show_transcripts_and_scores(judged_run):
    assert [s["name"] for s in judged_run.run["stages"]] == ["dataset", "runner", "asr", "judge", "aggregate"]
    assert judged_run.run["stages"][1]["config"]["examiner"]["duration_s"] == JUDGED_S
    for key, row in judged_run.rows.items():
        page = judged_run.dir / "samples" / f"{key}.html"
        text = page.read_text()
        tables = dict(parse(page).tables)
        j = read_json(judged_run.stages["judge"] / "samples" / key / "judgement.json")
        events = j["events"]
        assert events, key   # fixed-latency answers: the model speaks, segments were judged
        summary = dict(tables["session"][1:])
        assert summary["judge"] == html.unescape(LABEL) and summary["judged segments"] == str(len(events))
        assert summary["judgement"] == j["status"]
        # the judge's segments: times and both scores, in the table, as bands on the model's lane, in its lane
        rows = tables["judged-segments"]
        assert rows[0] == ["#", "start", "end", "fluency", "instruction following", "model's words"]
        assert [r[1:5] for r in rows[1:]] == [[f2(a), f2(b), score(f), score(i)] for (a, b), f, i in events], key
        assert [r[5] for r in rows[1:]] == [x["text"] for x in j["segments"]]
        bands = [m for m in markers(text) if m.get("lane") == "model"]
        assert [(m["name"], m["t"], m["end"]) for m in bands] == [
            (f"judged {n}: F {score(f)}, I {score(i)}", a, b) for n, ((a, b), f, i) in enumerate(events)]
        assert lane_texts(text, "judge (F / I)") == [f"F {score(f)} / I {score(i)}" for _, f, i in events]
        assert f"<h2>Judged segments ({LABEL})</h2>" in text
        # both channels' ASR transcripts: every word, in order, in the table and the lanes
        conv = tables["transcripts"]
        assert conv[0] == ["start", "end", "channel", "text"]
        for who, name in (("examiner", "input.json"), ("model", "output.json")):
            words = asr_words(judged_run, key, name)
            assert words, (key, name)
            mine = [r for r in conv[1:] if r[2] == who]
            assert " ".join(r[3] for r in mine).split() == " ".join(words).split(), (key, who)
            assert lane_texts(text, f"{who} (ASR)") == [r[3] for r in mine]
            assert [float(r[0]) for r in mine] == sorted(float(r[0]) for r in mine)
        first = read_json(judged_run.stages["asr"] / "samples" / key / "input.json")["chunks"][0]
        assert [r for r in conv[1:] if r[2] == "examiner"][0][0] == f2(first["timestamp"][0])
        assert [m["name"] for m in markers(text) if m.get("lane") == "user"][0].startswith(
            "ASR: " + first["text"].strip())
        heard_words = {m["name"] for m in markers(text) if m.get("lane") == "user"}
        assert not any(n.startswith("examiner turn") for n in heard_words)   # the transcript, not the examiner's text
        # the task score and the unparsed note
        task = row["task"]
        if task == "safety":
            assert j["status"] == "unparsed" and summary["task score"] == "-"
            assert "The judge&#39;s reply did not parse (judgement unparsed)" in text
            bad = tables["unparsed-replies"][1:]
            assert bad and all(r[0] == "fdb-v2-task-safety" and r[2] == UNPARSED for r in bad), bad
        else:
            assert j["status"] == "ok" and "did not parse" not in text and "unparsed-replies" not in text
            assert summary["task score"] == ("- (no task score for daily)" if task == "daily" else "4")


def test_judged_index_equals_metrics_json(judged_run):
    index = judged_run.dir / "report.html"
    text = index.read_text()
    assert f"<h2>Judged ({LABEL})</h2>" in text
    tables = dict(parse(index).tables)
    rows = tables["fdb-v2-judged"]
    keys = ("fluency", "instruction_following", "task_score")
    assert rows[0] == ["subset", "task", "parsed", "unparsed", "segments", *keys, *(f"{k} 95% CI" for k in keys)]
    want, bins = [], []
    for sub, s in sorted(judged_run.metrics["subsets"].items()):
        j = s["judged"]
        cis = [f"[{f3(j[k]['interval'][0])}, {f3(j[k]['interval'][1])}]" if j[k]["interval"] else "-" for k in keys]
        want.append([sub, s["task"], f"{j['parsed']}/{j['sessions']}", str(j["unparsed"]), str(j["events"]),
                     *(f3(j[k]["value"]) for k in keys), *cis])
        for what in ("fluency", "instruction_following"):
            bins.append([sub, what, *(f3(b[what]) for b in j["bins"])])
        bins.append([sub, "seconds", *(f"{b['seconds']:.2f}" for b in j["bins"])])
    assert rows[1:] == want
    by = {r[0]: r for r in want}
    assert by["correction"][5:8] == ["4.000", "4.000", "4.000"] and by["daily"][7] == "-"
    assert by["safety"][2:4] == ["0/1", "1"] and by["safety"][5:8] == ["-", "-", "-"]   # unparsed: not averaged
    assert tables["fdb-v2-judged-bins"][0] == ["subset", "score", *(f"{a}-{a + 15} s" for a in range(0, 120, 15))]
    assert tables["fdb-v2-judged-bins"][1:] == bins and bins[0][2] == "4.000"
    listing = tables["samples fdb-v2-samples"]
    assert listing[0] == ["session", "response rate", "latency (s)", "overlap", "judgement", "task score"]
    for r in listing[1:]:
        j = judged_run.rows[r[0]]["judgement"]
        assert r[4:] == [j["status"], score(j["task_score"])]
    assert "Problems reading the run" not in text


def test_judged_pages_self_contained_and_same_bytes(eval_home, judged_run, tmp_path):
    check_pages(judged_run.dir)
    same_bytes(eval_home, judged_run, tmp_path)


def test_judged_damaged_files(eval_home, judged_run, tmp_path):
    """A damaged judgement.json, input.json and judge.json: each said so, the rest shown as usual."""
    home = tmp_path / "h"
    shutil.copytree(eval_home, home, symlinks=True, ignore=shutil.ignore_patterns("reports", "locks", "runs"))
    st = {s["name"]: home / "store" / s["key"] for s in judged_run.run["stages"]}
    (st["judge"] / "samples" / "correction" / "correction-01" / "judgement.json").write_text("{not json")
    (st["asr"] / "samples" / "daily" / "daily-01" / "input.json").write_text('{"chunks": 3}')
    (st["judge"] / "judge.json").write_text("[]")
    out = tmp_path / "out"
    assert build_report(home, judged_run.run, out) == len(TASKS)
    corr = (out / "samples" / "correction" / "correction-01.html").read_text()
    assert "judgement.json is not a JSON object; the judge&#39;s scores are not shown" in corr
    rows = dict(parse(out / "samples" / "correction" / "correction-01.html").tables)["judged-segments"]
    want = judged_run.rows["correction/correction-01"]["judgement"]["events"]   # samples.jsonl's copy
    assert [r[1:3] for r in rows[1:]] == [[f2(a), f2(b)] for (a, b), *_ in want]
    daily = (out / "samples" / "daily" / "daily-01.html").read_text()
    assert "input.json (ASR words) is not in the expected form; its transcript is not shown" in daily
    tables = dict(parse(out / "samples" / "daily" / "daily-01.html").tables)
    assert {r[2] for r in tables["transcripts"][1:]} == {"model"} and lane_texts(daily, "examiner (ASR)") == []
    index = (out / "report.html").read_text()
    assert "judge.json: not readable" in index and "<h2>Judged (label unknown)</h2>" in index
    assert dict(parse(out / "report.html").tables)["fdb-v2-judged"][1:] == dict(
        parse(judged_run.dir / "report.html").tables)["fdb-v2-judged"][1:]


HOSTILE = "<script>alert(\"x\")</script> & 'q'"
ESCAPED = "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; &#39;q&#39;"


def test_hostile_values_are_escaped(eval_home, silence_run, tmp_path):
    """Text from the run's files (an examiner turn's text and its preset, a metrics.json subset's
    name, a lane's label and text) is escaped by the templates' autoescape: shown as text, never
    markup."""
    from duplexeval_fdb_v2.report import lanes
    home = tmp_path / "h"
    shutil.copytree(eval_home, home, symlinks=True, ignore=shutil.ignore_patterns("reports", "locks"))
    runner = home / "store" / silence_run.run["stages"][1]["key"]
    agg = home / "store" / silence_run.run["stages"][2]["key"]
    path = runner / "samples" / "daily" / "daily-01" / "examiner.json"
    exam = read_json(path)
    exam["preset"] = HOSTILE
    exam["turns"][0]["text"] = HOSTILE
    path.unlink()
    path.write_text(json.dumps(exam))
    metrics = read_json(agg / "metrics.json")
    metrics["subsets"][HOSTILE] = {"task": HOSTILE}
    (agg / "metrics.json").unlink()
    (agg / "metrics.json").write_text(json.dumps(metrics))
    out = tmp_path / "out"
    assert build_report(home, silence_run.run, out) == len(TASKS)
    page = out / "samples" / "daily" / "daily-01.html"
    for p in (page, out / "report.html"):
        text = p.read_text()
        assert "<script>alert(" not in text and ESCAPED in text, p
        assert "&amp;lt;" not in text and "&amp;amp;" not in text, p   # escaped once
    tables = dict(parse(page).tables)
    assert dict(tables["session"][1:])["examiner preset"] == HOSTILE
    assert tables["examiner-turns"][1][7] == HOSTILE
    index = (out / "report.html").read_text()
    assert f"<li>{ESCAPED}: metrics.json entry not readable</li>" in index
    assert [r[0] for r in dict(parse(out / "report.html").tables)["fdb-v2-metrics"][1:]] == sorted([*TASKS, HOSTILE])
    # the text lanes under the timeline: label, tooltip and text escaped, places kept
    got = str(lanes(10.0, [(HOSTILE, [(1.0, 2.0, HOSTILE)]), ("judge (F / I)", [(3.0, 4.0, "F 4 / I 4")])]))
    assert "<script>alert(" not in got
    assert f'<div class="lane" data-lane="{ESCAPED}">' in got
    assert re.search(rf'<span class="seg" style="left:\d+\.\d{{3}}%;width:\d+\.\d{{3}}%" '
                     rf'title="1\.00-2\.00 s: {re.escape(ESCAPED)}">{re.escape(ESCAPED)}</span>', got)
    assert lane_texts(got, "judge (F / I)") == ["F 4 / I 4"] and '<span class="seg judged"' in got
