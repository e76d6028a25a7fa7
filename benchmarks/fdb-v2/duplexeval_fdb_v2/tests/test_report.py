"""The HTML report of a fdb-v2 run (duplexeval_fdb_v2/report.py, the benchmark's report hook) from a
real run: the `silence` control on the mini set, 20 s sessions (conftest.silence_run, shared with
test_eval_controls.py). The index's tables equal metrics.json and samples.jsonl, every session has
a page with the examiner's turns (their texts in the timeline and in the turns table), both
channels' timeline and players; the pages pass the checks the other benchmarks' report tests
apply (fdb-v1's and MTR's: CSP, nothing remote, plots inlined, audio linked relatively and lazily);
the same bytes each build; missing and damaged files said so on the page, the rest as usual."""

import html
import json
import os
import re
import shutil
from pathlib import Path

from duplexeval_common.jsonio import read_json

from tests.html_pages import parse

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


def test_pages_self_contained_and_readable(silence_run):
    from duplexeval_common.html.page import CSP
    pages = pages_of(silence_run.dir)
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
    index = pages[0].read_text()
    assert "<audio" not in index and "&lt;" not in index   # composed markup is not escaped twice


def test_same_bytes_each_build(eval_home, silence_run, tmp_path):
    outs = []
    for name in ("a", "b"):
        assert build_report(eval_home, silence_run.run, tmp_path / name) == len(TASKS)
        outs.append({p.relative_to(tmp_path / name): p.read_bytes() for p in sorted((tmp_path / name).rglob("*.html"))})
    assert outs[0] == outs[1] and len(outs[0]) == 1 + len(TASKS)
    assert (silence_run.dir / "report.html").read_bytes() == outs[0][Path("report.html")]   # eval's build


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
