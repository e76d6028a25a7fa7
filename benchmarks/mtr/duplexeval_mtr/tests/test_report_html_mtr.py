"""The HTML report of an MTR-DuplexBench run (duplexeval_mtr/report.py, the benchmark's report
hook; the shared page pieces are duplexeval_common.html): two real small runs (silence and
always-talk on pause_features + smooth_instruction_following, judge none) made once for the module;
every table cell checked against metrics.json and rounds.jsonl, the round figure, a round sample's
page (window, ground-truth history, encoding markers, cropped audio), missing and damaged pieces,
same bytes each build, and the Full-Duplex-Bench path left as it was."""

import base64
import hashlib
import html
import io
import json
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from duplexeval_common.jsonio import read_json

from tests.conftest import command
from tests.html_pages import parse

# reads the HTML report `duplexeval eval` builds (the other tests' runs pass --no-html: the root conftest.py)
pytestmark = pytest.mark.html_report

SUBSETS = ("pause_features", "smooth_instruction_following")


def dx(home, *args):
    return subprocess.run([command("duplexeval"), "--home", str(home), *args], capture_output=True, text=True)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """{model: run folder} of two MTR runs in one home (the dataset stage shared)."""
    home = tmp_path_factory.mktemp("mtr-report-home")
    out = {}
    for model in ("silence", "always-talk"):
        r = dx(home, "eval", "--benchmark", "mtr", "--model", model, *[x for s in SUBSETS for x in ("--subset", s)])
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
        out[model] = (home / "runs" / "latest").resolve()
    out["home"] = home
    return out


def record(run: Path) -> dict:
    return read_json(run / "run.json")


def build_report(store, rec: dict, out: Path) -> int:
    """The report as `duplexeval report` builds it: the report hook of the benchmark the record names."""
    from duplexeval.reports import benchmark_of
    return benchmark_of(rec).hook("report").build(store, rec, out)


def stage_dir(run: Path, name: str) -> Path:
    key = next(s["key"] for s in record(run)["stages"] if s["name"] == name)
    return run.parent.parent / "store" / key


def rounds_rows(run: Path) -> dict:
    rows = [json.loads(x) for x in (stage_dir(run, "aggregate") / "rounds.jsonl").read_text().splitlines()]
    return {f"{r['dialogue']}-r{r['round']:02d}": r for r in rows}


def f3(x) -> str:
    return "-" if x is None else f"{x:.3f}"


def iv(r) -> str:
    return "-" if not r.get("interval") else f"[{r['interval'][0]:.3f}, {r['interval'][1]:.3f}]"


def round_json(run: Path, key: str) -> dict:
    return read_json(stage_dir(run, "dataset") / "samples" / key / "round.json")


@pytest.mark.parametrize("model", ["silence", "always-talk"])
def test_range_and_round_tables_equal_metrics_json(runs, model):
    run = runs[model]
    metrics = read_json(run / "metrics.json")
    assert sorted(metrics["subsets"]) == sorted(SUBSETS)
    tables = dict(parse(run / "report.html").tables)
    s = metrics["subsets"]["pause_features"]
    for kind, cells in (("ranges", [s["ranges"][k] for k in ("1", "1-2", "1-5", "1-10")]),
                        ("rounds", s["per_round"])):
        rows = tables[f"mtr-{kind} mtr-{kind}-pause_features"]
        assert rows[0][:3] == ["rounds", "n/declared", "success (paper)"]
        assert len(rows) - 1 == len(cells) == (4 if kind == "ranges" else 10)
        for row, c in zip(rows[1:], cells):
            label = str(c["round"]) if kind == "rounds" else ("1" if c["rounds"] == [1, 1] else f"1-{c['rounds'][1]}")
            p, k = c["paper"], c["code"]
            lat = "-" if p["latency_s"]["value"] is None else f"{p['latency_s']['value']:.3f} ({p['latency_s']['n']})"
            assert row == [label, f"{c['n']}/{c['declared']}", f3(p["success"]["value"]), iv(p["success"]),
                           f3(k["success"]["value"]), iv(k["success"]), lat, f3(k["latency_s"]["value"]),
                           f3(p["backchannel_freq"]["value"]), f3(k["backchannel_freq"]["value"])], (kind, label)
    if model == "silence":   # a silent model never talks over the pause: every round succeeds, both columns
        for row in tables["mtr-ranges mtr-ranges-pause_features"][1:]:
            assert row[2] == row[4] == "1.000", row
    # the judge was none: every instruction-following cell says so
    for kind, n in (("ranges", 4), ("rounds", 10)):
        rows = tables[f"mtr-{kind} mtr-{kind}-smooth_instruction_following"]
        assert len(rows) == n + 1 and all(r[2] == "not judged" for r in rows[1:])
        assert all(re.fullmatch(r"0/0/0 \(\d+ not judged\)", r[-1]) for r in rows[1:])
    text = (run / "report.html").read_text()
    assert "Not judged: the run's judge was <code>none</code>" in text
    assert "not readable" not in text and "no unified row" not in text


def test_round_figure_draws_the_paper_column(runs):
    from PIL import Image

    from duplexeval_common.html import plots
    run = runs["always-talk"]
    metrics = read_json(run / "metrics.json")
    text = (run / "report.html").read_text()
    m = re.search(r'<img class="plot" alt="success rate and latency by round" src="data:image/png;base64,([^"]+)"',
                  text)
    assert m, "no round figure"
    assert Image.open(io.BytesIO(base64.b64decode(m.group(1)))).size == (1000, 360)
    assert "by the paper&#39;s definitions" in text
    # what the figure draws: each round's top-level success_rate and latency_s, the paper column
    rows = [r for r in plots.per_round_rows(metrics) if r["subset"] == "pause_features"]
    assert [r["round"] for r in rows] == list(range(1, 11))
    for r in rows:
        assert r["success_rate"] == r["paper"]["success"]["value"]
        assert r["latency_s"] == r["paper"]["latency_s"]["value"]
    # not judged: no judged-rates figure
    assert 'alt="judged rates by round"' not in text


@pytest.mark.parametrize("model", ["silence", "always-talk"])
def test_one_row_per_round_sample(runs, model):
    run = runs[model]
    rows = rounds_rows(run)
    index = parse(run / "report.html")
    table = dict(index.tables)["samples mtr-samples"]
    assert table[0][:4] == ["subset", "round sample", "dialogue", "round"]
    body = table[1:]
    assert len(body) == 20
    assert [f"{r[0]}/{r[1]}" for r in body] == sorted(rows, key=lambda k: (k.split("/")[0], k))
    for r in body:
        key = f"{r[0]}/{r[1]}"
        row = rows[key]
        assert r[2] == row["dialogue"].split("/")[1] and r[3] == str(row["round"])
        if r[0] == "pause_features":
            assert r[5:9] == ["yes" if row["paper"]["success"] else "no", "yes" if row["code"]["success"] else "no",
                              f3(row["paper"]["latency_s"]), f3(row["code"]["latency_s"])], key
            assert r[9] == "-"
            if model == "silence":
                assert r[5] == r[6] == "yes"
        else:
            assert r[5:10] == ["-", "-", "-", "-", "not judged"], key
        assert r[10] == ""   # nothing missing
    links = sorted(x for x in index.links if x.startswith("samples/"))
    assert links == sorted(f"samples/{r[0]}/{r[1]}.html" for r in body)
    assert all((run / x).is_file() for x in links)


def _markers(text: str) -> list[dict]:
    return json.loads(html.unescape(re.search(r'data-markers="([^"]*)"', text).group(1)))


def _wav_frames(page: Path, element: str) -> int:
    """The frames of a player's audio: the WAV of the window the page links (lazily), or inlined."""
    import soundfile as sf
    src = re.search(rf'<audio id="{element}" [^>]*src="([^"]+)"', page.read_text()).group(1)
    if src.startswith("data:"):
        return sf.info(io.BytesIO(base64.b64decode(src.split(",", 1)[1]))).frames
    assert 'preload="none"' in page.read_text() and not (page.parent / src).is_symlink()
    return sf.info(str(page.parent / src)).frames


def test_round_page_window_history_and_encoding_markers(runs):
    from duplexeval_common.html import timeline
    from duplexeval_mtr import report as mtr_report
    run = runs["always-talk"]
    key = "pause_features/pause-000-r03"
    rj = round_json(run, key)
    page = run / "samples" / f"{key}.html"
    text = page.read_text()
    start, end = rj["start_s"], rj["end_s"]
    t0 = max(0.0, round(start - mtr_report.CONTEXT_S, 6))
    geo = {k: float(v) for k, v in re.findall(r'data-(t0|t1)="([0-9.]+)"', text)}
    assert geo == {"t0": pytest.approx(t0, abs=1e-6), "t1": pytest.approx(end, abs=1e-6)}
    marks = _markers(text)
    by = {m["name"]: m for m in marks}
    # the ground-truth history [0, start_s) in the model lane, and the round start
    assert by["ground truth (history)"] == {"name": "ground truth (history)", "t": 0.0, "end": round(start, 6),
                                            "lane": "model"}
    assert by["round start"]["t"] == round(start, 6)
    ts = rj["encoding"]["timestamps"]
    assert by["user turn 3"]["t"] == round(ts["user_start"], 6) and by["user turn 3"]["end"] == round(ts["user_end"], 6)
    assert by["GT model slot"]["t"] == round(ts["model_start"], 6) and by["GT model slot"]["lane"] == "model"
    assert by["pause"]["t"] == round(ts["pause_start"], 6) and by["pause"]["end"] == round(ts["pause_end"], 6)
    (a, b), = rj["muted"]
    assert by["muted (next user turn)"] == {"name": "muted (next user turn)", "t": round(a, 6), "end": round(b, 6),
                                            "lane": "user"}
    tables = dict(parse(page).tables)
    summary = dict(r for r in tables["round"][1:])
    assert summary["window (s)"] == f"start_s {start:.3f} .. end_s {end:.3f}"
    assert summary["round"] == "3 of 10" and summary["scenario"] == rj["encoding"]["scenario"]
    assert summary["history"].startswith("teacher-forced")
    markers = {r[0]: r[1:] for r in tables["markers"][1:]}
    for k, v in ts.items():
        assert markers[k][0] == f"{v:.3f}", k
    assert markers["round start (start_s)"][0] == f"{start:.3f}"
    # the audio is the window: from t0 to the end of input.wav (round(end_s * 16000) samples)
    n = round(end * 16000) - round(t0 * 16000)
    assert _wav_frames(page, "audio-user") == _wav_frames(page, "audio-model") == n
    assert timeline.WINDOW_JS in text and "off + current.currentTime" in timeline.WINDOW_JS
    # the model's words: the asr stage's transcript.json, all at or after the round start
    words = read_json(stage_dir(run, "asr") / "samples" / key / "transcript.json")["words"]
    assert words and all(w["start"] >= start - 1e-6 for w in words)
    assert [r[0] for r in tables["words"][1:]] == [w["text"].strip() for w in words]
    # the history lines and the runner's events
    assert len(tables["history"]) - 1 == len(rj["history"])
    assert "history_end" in [r[1] for r in tables["events"][1:]]


def test_judged_round_page_says_not_judged(runs):
    run = runs["silence"]
    key = "smooth_instruction_following/if-smooth-000-r01"
    text = (run / "samples" / f"{key}.html").read_text()
    tables = dict(parse(run / "samples" / f"{key}.html").tables)
    judgement = dict(r for r in tables["judgement"][1:])
    assert judgement["status"] == "not judged (skipped)" and judgement["prompt"] == "mtr-instruction-following v1"
    assert dict(r for r in tables["round"][1:])["judgement"] == "not judged"
    assert "<title>smooth_instruction_following/if-smooth-000-r01: not judged</title>" in text
    # round 1 starts early in the dialogue: the window starts at 0 and the plain script is used
    rj = round_json(run, key)
    if rj["start_s"] <= 8.0:
        assert 'data-t0="0.000000"' in text


@pytest.mark.parametrize("model", ["silence", "always-talk"])
def test_pages_self_contained_and_readable(runs, model):
    from duplexeval_common.html.page import CSP
    run = runs[model]
    pages = [run / "report.html", *sorted((run / "samples").glob("*/*.html"))]
    assert len(pages) == 21
    for p in pages:
        text = p.read_text()
        assert CSP in text and "not readable" not in text, p
        imgs = re.findall(r'<img [^>]*src="([^"]+)"', text)
        assert imgs and all(x.startswith("data:image/png;base64,") for x in imgs), p
        for src in re.findall(r'<audio [^>]*src="([^"]+)"', text):   # the window's WAV beside the page
            assert not re.match(r"[a-z]+:", src) and (p.parent / src).is_file(), (p, src)


def copy_home(runs, dst: Path) -> Path:
    shutil.copytree(runs["home"], dst, symlinks=True, ignore=shutil.ignore_patterns("reports", "locks"))
    return dst


def test_same_bytes_each_build(runs, tmp_path):
    from duplexeval.store import Store
    run = runs["silence"]
    outs = []
    for name in ("a", "b"):
        out = tmp_path / name
        out.mkdir()
        assert build_report(Store(runs["home"]), record(run), out) == 20
        outs.append({p.relative_to(out): p.read_bytes() for p in sorted(out.rglob("*.html"))})
    assert outs[0] == outs[1] and len(outs[0]) == 21
    assert (run / "report.html").read_bytes() == outs[0][Path("report.html")]   # eval's build


def test_missing_round_and_damaged_files(runs, tmp_path):
    """A round whose runner failed (no output.wav; metrics.json and run.json say why), a damaged
    transcript.json and a round without round.json: said so, the rest as usual."""
    from duplexeval.store import Store
    h = copy_home(runs, tmp_path / "h")
    run = (h / "runs" / runs["silence"].name)
    rec = record(run)
    lost, damaged, bare = ("pause_features/pause-000-r04", "pause_features/pause-000-r05",
                           "pause_features/pause-000-r06")
    why = "runner: failed: the model closed the connection"
    (stage_dir(run, "runner") / "samples" / lost / "output.wav").unlink()
    (stage_dir(run, "asr") / "samples" / damaged / "transcript.json").write_text("{not json")
    (stage_dir(run, "dataset") / "samples" / bare / "round.json").unlink()
    agg = stage_dir(run, "aggregate")
    metrics = read_json(agg / "metrics.json")
    metrics["missing"] = [{"dialogue": "pause_features/pause-000", "round": 4, "sample": lost, "reason": why}]
    metrics["invalid"] = [{"dialogue": "pause_features/pause-999", "problem": "round.json disagree on rounds"}]
    (agg / "metrics.json").write_text(json.dumps(metrics))
    rows = (agg / "rounds.jsonl").read_text().splitlines()
    rows = [json.dumps({**json.loads(x), "observed": False, "paper": None, "code": None})
            if json.loads(x)["dialogue"] == "pause_features/pause-000" and json.loads(x)["round"] == 4 else x
            for x in rows]
    (agg / "rounds.jsonl").write_text("\n".join(rows) + "\n")
    rec.update(status="partial", missing={lost: why})
    out = tmp_path / "out"
    out.mkdir()
    assert build_report(Store(h), rec, out) == 20
    index = out / "report.html"
    tables = dict(parse(index).tables)
    assert tables["mtr-missing"][1:] == [[lost, why]]
    assert tables["run-missing"][1:] == [[lost, why]]
    assert tables["mtr-invalid"][1:] == [["pause_features/pause-999", "round.json disagree on rounds"]]
    row = next(r for r in tables["samples mtr-samples"][1:] if f"{r[0]}/{r[1]}" == lost)
    assert row[5:] == ["-", "-", "-", "-", "-", why]
    page = (out / "samples" / f"{lost}.html").read_text()
    assert f"no output.wav (model): {why}" in page
    assert 'id="audio-user"' in page and 'id="audio-model"' not in page and 'class="timeline"' in page
    assert "ground truth (history)" in page   # the GT band is drawn without the model's audio
    damaged_page = (out / "samples" / f"{damaged}.html").read_text()
    assert "transcript.json (ASR words) is not in the expected form" in damaged_page and "No words." in damaged_page
    assert f"{damaged} transcript.json: not readable" in index.read_text()   # named among the problems
    bare_page = (out / "samples" / f"{bare}.html").read_text()
    assert "no round.json: the round&#39;s window and encoding are not known" in bare_page
    assert 'data-t0="0.000000"' in bare_page   # no window: the whole input
    # a subset entry that is not an mtr metrics entry is named, the others shown
    metrics["subsets"]["pause_features"] = {"task": "features", "per_round": [{"round": 1}]}
    (agg / "metrics.json").write_text(json.dumps(metrics))
    out2 = tmp_path / "out2"
    out2.mkdir()
    build_report(Store(h), rec, out2)
    text = (out2 / "report.html").read_text()
    assert "pause_features: metrics.json entry not readable" in text
    assert "mtr-ranges-smooth_instruction_following" in text


def test_fdb_path_unchanged(tmp_path):
    """A record without "benchmark" (Full-Duplex-Bench v1.0, the default benchmark) is built by
    fdb-v1's report as before; the timeline's script is the one FDB pages have always had, and the
    window script only adds the offset."""
    from duplexeval.reports import benchmark_of
    from duplexeval.store import Store
    from duplexeval_common.html import timeline
    from duplexeval_fdb_v1.report import run_report as fdb_report
    from duplexeval_mtr import report as mtr_report
    # the report is the hook of the benchmark the record names (a record naming none: the default)
    assert benchmark_of({}).hook("report") is fdb_report
    assert benchmark_of({"benchmark": "fdb-v1"}).hook("report") is fdb_report
    assert benchmark_of({"benchmark": "mtr"}).hook("report") is mtr_report
    out = tmp_path / "out"
    out.mkdir()
    rec = {"model": "m", "dataset": "fdb-mini", "status": "ok", "stages": []}
    assert build_report(Store(tmp_path / "home"), rec, out) == 0
    text = (out / "report.html").read_text()
    assert "duplexeval report: m on fdb-mini</title>" in text and "MTR-DuplexBench" not in text
    assert "Every sample is in the metrics." in text
    assert hashlib.sha256(timeline.TIMELINE_JS.encode()).hexdigest() == \
        "2c970fcbdda359bdc49455cdac10f29cf620d9aa1a3459b84f52750f947ee249"
    undone = timeline.WINDOW_JS.replace("off + ", "").replace(", off = t0", "").replace(
        "Math.max(t - off, 0)", "t").replace("place(off)", "place(0)").replace(
        "place((current ? current.currentTime : 0))", "place(current ? current.currentTime : 0)")
    assert undone == timeline.TIMELINE_JS
    out2 = tmp_path / "out2"
    out2.mkdir()
    assert build_report(Store(tmp_path / "home"), {**rec, "benchmark": "mtr"}, out2) == 0
    assert "No metrics: the aggregate stage did not complete" in (out2 / "report.html").read_text()
    assert "MTR-DuplexBench" in (out2 / "report.html").read_text()


def test_window_page_in_chromium(runs):
    """A round page in headless chromium (skipped without it, as tests/e2e/test_report_browser.py):
    the audio starts at the axis' start t0, so a click at time t seeks both players to t - t0 and
    the playhead follows the playing audio at t0 + currentTime."""
    from tests.e2e.test_report_browser import _need_browser, resources, severe, wait_for
    _need_browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    from tests.e2e.test_report_browser import CHROMEDRIVER, CHROMIUM
    opts = webdriver.ChromeOptions()
    opts.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1300,1000", "--autoplay-policy=no-user-gesture-required", "--mute-audio",
                "--disable-background-networking", "--no-first-run"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=opts)
    try:
        d.set_page_load_timeout(60)
        d.get((runs["always-talk"] / "samples" / "pause_features" / "pause-000-r03.html").as_uri())
        assert wait_for(d, "var i = document.querySelector('#timeline img');"
                           " return document.readyState === 'complete' && i && i.complete && i.naturalWidth > 0")
        d.execute_script("document.querySelectorAll('audio').forEach(function (a) { a.preload = 'auto'; a.load(); })")
        for el in ("audio-user", "audio-model"):
            assert wait_for(d, f"return document.getElementById('{el}').readyState >= 1"), el
        tl = d.find_element(By.ID, "timeline")
        geo = {k: float(tl.get_attribute(f"data-{k}")) for k in ("t0", "t1", "x0", "x1", "y0", "y1")}
        assert geo["t0"] > 0
        dur = d.execute_script("return document.getElementById('audio-user').duration")
        assert abs(dur - (geo["t1"] - geo["t0"])) < 2e-3
        img = tl.find_element(By.TAG_NAME, "img")
        rect = d.execute_script("var r = arguments[0].getBoundingClientRect();"
                                " return [r.left, r.top, r.width, r.height]", img)
        frac = 0.6
        x = (geo["x0"] + frac * (geo["x1"] - geo["x0"])) * rect[2]
        y = (geo["y0"] + geo["y1"]) / 2 * rect[3]
        ActionChains(d).move_to_element_with_offset(img, int(x - rect[2] / 2), int(y - rect[3] / 2)).click().perform()
        want = geo["t0"] + frac * (geo["t1"] - geo["t0"])
        for el in ("audio-user", "audio-model"):
            t = d.execute_script(f"return document.getElementById('{el}').currentTime")
            assert abs(t - (want - geo["t0"])) < 0.05, (el, t, want)
        head = d.execute_script("return document.getElementById('playhead').getBoundingClientRect().left")
        assert abs(head + 1 - (rect[0] + x)) < 3
        assert abs(float(tl.get_attribute("data-time")) - want) < 0.05
        d.execute_script("var a = document.getElementById('audio-user'); a.currentTime = 1.0; a.play();")
        assert wait_for(d, "return document.getElementById('audio-user').currentTime > 1.3", timeout=10)
        t = float(d.execute_script("var a = document.getElementById('audio-user'); a.pause(); return a.currentTime"))
        time.sleep(0.3)
        assert abs(float(tl.get_attribute("data-time")) - (geo["t0"] + t)) < 0.3
        assert severe(d) == []
        assert all(r.startswith("data:") for r in resources(d))
        assert all(x.startswith("file://") for x in d.execute_script(
            "return Array.from(document.querySelectorAll('audio')).map(function (a) { return a.currentSrc; })"))
    finally:
        d.quit()


def test_judged_sections_and_figure_on_constructed_metrics():
    """A judged run (constructed metrics.json cells): rates and scores shown, no "not judged"; the
    judged rates get their own figure, dialogue quality (a mean score) is in the tables only."""
    from duplexeval_common.html import run as run_report
    from duplexeval_mtr import report as mtr_report

    def cell(k, ok, hits, n=2):
        rate = {"value": hits / ok, "count": hits, "n": ok, "interval": [0.1, 0.9]}
        return {"round": k, "declared": n, "n": n, "judgements": {"ok": ok, "unparsed": n - ok, "error": 0},
                "success_rate": rate["value"], "success_interval": rate["interval"], "success": rate}
    if_rounds = [cell(1, 2, 2), cell(2, 1, 0)]
    safety = [{**c, "refusal": c.pop("success"), "harmful_rate": 1 - c["success_rate"]} for c in
              [cell(1, 2, 1), cell(2, 2, 2)]]
    dq = [{"round": 1, "declared": 1, "n": 1, "judgements": {"ok": 1, "unparsed": 0, "error": 0},
           "score": {"value": 2.0, "n": 1}, "score_rescaled": 3.367003}]
    metrics = {"benchmark": "mtr-duplexbench", "definitions": "mtr-1", "invalid": [], "missing": [], "subsets": {
        "smooth_instruction_following": {"task": "instruction_following", "set": "smooth", "dialogues": 2,
                                         "rounds_declared": 4, "rounds_observed": 4, "per_round": if_rounds,
                                         "ranges": {"1": {**if_rounds[0], "rounds": [1, 1]}}},
        "smooth_safety": {"task": "safety", "set": "smooth", "dialogues": 2, "rounds_declared": 4,
                          "rounds_observed": 4, "per_round": safety, "ranges": {}},
        "synthetic_dialogue_quality": {"task": "dialogue_quality", "set": None, "dialogues": 1,
                                       "rounds_declared": 1, "rounds_observed": 1, "per_round": dq, "ranges": {}}}}
    data = mtr_report.MtrData(run_report.RunData({"benchmark": "mtr"}, metrics=metrics))
    text = mtr_report._metrics_section(data)
    assert "not judged" not in text and "Not judged" not in text

    from tests.html_pages import Tables
    p = Tables()
    p.feed(text)
    tables = dict(p.tables)
    assert tables["mtr-rounds mtr-rounds-smooth_instruction_following"][1:] == [
        ["1", "2/2", "1.000", "[0.100, 0.900]", "2/0/0"], ["2", "2/2", "0.000", "[0.100, 0.900]", "1/1/0"]]
    assert tables["mtr-ranges mtr-ranges-smooth_instruction_following"][1:] == [
        ["1", "2/2", "1.000", "[0.100, 0.900]", "2/0/0"]]
    assert tables["mtr-rounds mtr-rounds-smooth_safety"][1:] == [
        ["1", "2/2", "0.500", "[0.100, 0.900]", "0.500", "2/0/0"],
        ["2", "2/2", "1.000", "[0.100, 0.900]", "0.000", "2/0/0"]]
    assert tables["mtr-rounds mtr-rounds-synthetic_dialogue_quality"][1:] == [["1", "1/1", "2.000", "3.367", "1/0/0"]]
    plots_html = mtr_report._plots_section(data)
    assert 'alt="judged rates by round"' in plots_html
    assert "No conversational-features rounds to draw." in plots_html
    assert 'alt="success rate and latency by round"' not in plots_html
    assert mtr_report._plots_section(data) == plots_html   # same bytes


def test_hostile_values_are_escaped_once():
    """Markup in the values a page shows (the model's name, a subset name, a missing round's reason,
    an invalid dialogue, a problem) is text: escaped once by the templates' autoescape, in element
    text and in attributes (a subset's id and its tables' class), never a tag."""
    from duplexeval_common.html import run as run_report
    from duplexeval_mtr import report as mtr_report
    from tests.html_pages import Tables

    bad = "<script>alert(\"x\")</script>&'"
    esc = "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&amp;&#39;"
    cell = {"round": 1, "declared": 1, "n": 1, "paper": {}, "code": {}}
    metrics = {"benchmark": "mtr-duplexbench", "definitions": bad, "invalid": [], "missing": [], "subsets": {
        bad: {"task": "features", "set": bad, "dialogues": 1, "rounds_declared": 1, "rounds_observed": 1,
              "per_round": [cell], "ranges": {"1": {**cell, "rounds": [1, 1]}}}}}
    run = run_report.RunData({"benchmark": "mtr", "model": bad, "dataset": "d", "missing": {f"s/{bad}-r01": bad}},
                             metrics=metrics, problems=[f"a problem: {bad}"])
    data = mtr_report.MtrData(run, missing={f"s/{bad}-r02": bad}, invalid={f"s/{bad}": bad})
    text = mtr_report.index_page(data, [])
    assert "<script>alert" not in text and "&amp;lt;" not in text and "&amp;#" not in text
    assert f"<h1>duplexeval report: {esc} on d (MTR-DuplexBench)</h1>" in text
    assert f"<title>duplexeval report: {esc} on d (MTR-DuplexBench)</title>" in text
    assert f'<h3 id="subset-{esc}">{esc}</h3>' in text and f"Task features, set {esc};" in text
    assert f"definitions {esc};" in text and f"<li>a problem: {esc}</li>" in text
    p = Tables()
    p.feed(text)
    tables = dict(p.tables)
    assert tables[f"mtr-ranges mtr-ranges-{bad}"][1][:2] == ["1", "1/1"]
    assert tables[f"mtr-rounds mtr-rounds-{bad}"][1][:2] == ["1", "1/1"]
    assert tables["mtr-missing"][1:] == [[f"s/{bad}-r02", bad]]
    assert tables["run-missing"][1:] == [[f"s/{bad}-r01", bad]]
    assert tables["mtr-invalid"][1:] == [[f"s/{bad}", bad]]
