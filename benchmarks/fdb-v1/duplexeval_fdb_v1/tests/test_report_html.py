"""The HTML report of a run (`duplexeval report`, reports.py, html/run_report.py) and the run folder:
tables equal to metrics.json, a page per sample with its markers, a sample without output,
same bytes each build, the store's cache (reuse, a concurrent builder, a failed build), `show`."""

import json
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from duplexeval_common.jsonio import read_json

from tests.conftest import command
from tests.html_pages import Tables, parse  # noqa: F401  (Tables: used by the MTR report's tests too)

# reads the HTML report `duplexeval eval` builds (the other tests' runs pass --no-html: the root conftest.py)
pytestmark = pytest.mark.html_report


def dx(home, *args):
    return subprocess.run([command("duplexeval"), "--home", str(home), *args], capture_output=True, text=True)


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """One small run (3 subsets x 1 sample, no judge) with its report, made once for the module."""
    h = tmp_path_factory.mktemp("report-home")
    r = dx(h, "eval", "--model", "fixed-latency", "--judge", "none", "--limit", "1")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "html: " in r.stdout
    return h


def run_dir(home) -> Path:
    return (home / "runs" / "latest").resolve()


def run_record(home) -> dict:
    return read_json(run_dir(home) / "run.json")


def stage_dir(home, name) -> Path:
    key = next(s["key"] for s in run_record(home)["stages"] if s["name"] == name)
    return home / "store" / key


def test_run_folder_links_and_show(home):
    d = run_dir(home)
    agg = stage_dir(home, "aggregate")
    for name in ("metrics.json", "report.md"):
        link = d / name
        assert link.is_symlink() and not os.path.isabs(os.readlink(link)), name
        assert link.resolve() == (agg / name).resolve()
    report = d / "report.html"
    assert report.is_symlink() and not os.path.isabs(os.readlink(report))
    target = report.resolve()
    assert target.parent.parent == (home / "store" / "reports").resolve() and target.name == "report.html"
    assert (d / "samples").resolve() == target.parent / "samples"
    show = dx(home, "show")
    assert show.returncode == 0, show.stderr
    for name in ("run.json", "metrics.json", "report.md", "report.html"):
        line = next(x for x in show.stdout.splitlines() if x.startswith(name + " "))
        path = Path(line.split(None, 1)[1])
        assert path.is_absolute() and path.exists() and path.name == name, line
    assert "official" in show.stdout  # what show printed before is still there


def test_tables_equal_metrics_json(home):
    from duplexeval_fdb_v1.score import report as agg
    metrics = read_json(run_dir(home) / "metrics.json")
    tables = dict(parse(run_dir(home) / "report.html").tables)
    assert len(metrics["subsets"]) == 4   # fdb-mini: pause, turn-taking, interruption, backchannel
    for subset, m in metrics["subsets"].items():
        rows = tables[f"subset subset-{subset}"]
        head, body = rows[0], rows[1:]
        assert head[0] == agg.official_head(metrics["official_revision"])
        official = {r[0]: r[1] for r in body if r[0]}
        assert official, subset
        for k, v in official.items():
            want = m["official"].get(k.split("[")[0])
            assert v == ("-" if want is None else f"{want:.4f}"), (subset, k)
        unified = {r[2]: r[3:] for r in body if r[2]}
        if not m["unified"]:   # backchannel: the aggregator's line saying the official numbers are the reference
            assert set(unified) == {agg.NO_UNIFIED}, subset
            continue
        assert set(unified) == set(m["unified"]), subset
        for k, e in m["unified"].items():
            value, interval, count_n, _ = unified[k]
            assert value == (f"{e['value']:.4f}" if e["value"] is not None else "not reached"), (subset, k)
            lo, hi = e["interval"]
            assert interval == f"[{lo:.4f}, {hi:.4f}]", (subset, k)
            assert count_n == (f"{e['count']}/{e['n']}" if e["kind"] != "pooled" else f"n {e['n']}")


def test_every_sample_has_a_page_with_its_outcome(home):
    d = run_dir(home)
    samples = sorted(read_json(stage_dir(home, "dataset") / "stage.json")["samples"])
    index = parse(d / "report.html")
    table = dict(index.tables)["samples"]
    assert [f"{r[0]}/{r[1]}" for r in table[1:]] == samples
    rows = {json.loads(x)["sample_id"]: json.loads(x)
            for x in (stage_dir(home, "aggregate") / "unified-samples.jsonl").read_text().splitlines()}
    for r in table[1:]:
        key = f"{r[0]}/{r[1]}"
        if r[0] == "synthetic_backchannel":   # no unified row: the official column only
            assert key not in rows and r[2] == "-" and "official column only" in r[3], r
            continue
        row = rows[key]
        expected = row.get("outcome") or ("intrusion" if row["pause_intrusion"] else "no intrusion")
        assert r[2] == expected, key
        assert r[4] == ("-" if row.get("latency_s") is None else f"{row['latency_s']:.3f}")
    assert sorted(x for x in index.links if x.startswith("samples/")) == [f"samples/{k}.html" for k in samples]
    for key in samples:
        page = d / "samples" / f"{key}.html"   # through the run folder's samples link
        p = parse(page)
        assert "../../report.html" in p.links
        assert (page.parent / "../../report.html").resolve().is_file()
        text = page.read_text()
        assert 'id="audio-user"' in text and 'id="audio-model"' in text and 'class="timeline"' in text


def _annotation(home, key):
    d = stage_dir(home, "dataset") / "samples" / key
    if (d / "pause.json").is_file():
        return [{"name": "pause", "t": round(x["timestamp"][0], 6), "end": round(x["timestamp"][1], 6)}
                for x in read_json(d / "pause.json")]
    if (d / "turn_taking.json").is_file():
        return [{"name": "E", "t": round(read_json(d / "turn_taking.json")[0]["timestamp"][0], 6)}]
    if key.startswith("synthetic_backchannel/"):   # its transition-relevance places, from sample.json
        trps = read_json(d / "sample.json")["backchannel"]["trps"]
        assert trps
        return [{"name": "TRP", "t": round(t, 6)} for t in trps]
    s, r = read_json(d / "interrupt.json")[0]["timestamp"]
    return [{"name": "S", "t": round(s, 6)}, {"name": "R", "t": round(r, 6)}]


def test_markers_at_the_annotated_times(home):
    import html
    for page in sorted((run_dir(home) / "samples").glob("*/*.html")):
        key = f"{page.parent.name}/{page.stem}"
        text = page.read_text()
        m = re.search(r'data-markers="([^"]*)"', text)
        markers = json.loads(html.unescape(m.group(1)))
        want = _annotation(home, key)
        assert sorted(markers, key=lambda x: (x["name"], x["t"])) == sorted(want, key=lambda x: (x["name"], x["t"]))
        table = dict(parse(page).tables)["markers"]
        assert {r[1] for r in table[1:]} == {f"{x['t']:.3f}" for x in want}, key
        geo = {k: float(v) for k, v in re.findall(r'data-(t0|t1|x0|x1|y0|y1)="([0-9.]+)"', text)}
        assert geo["t0"] == 0 and geo["t1"] > max(x.get("end", x["t"]) for x in want)
        assert 0 < geo["x0"] < geo["x1"] < 1 and 0 < geo["y0"] < geo["y1"] < 1


def test_pages_fetch_nothing_remote_and_link_the_store_audio(home):
    """Plots inlined, audio linked: each player's src is a relative path that leads, from the run
    folder and from the store alike, to the stage's WAV, loaded only when played."""
    from duplexeval_common.html.page import CSP
    pages = [run_dir(home) / "report.html", *sorted((run_dir(home) / "samples").glob("*/*.html"))]
    assert "media-src 'self' data:" in CSP and "http" not in CSP
    index = pages[0].read_text()
    assert "<audio" not in index and "audio/wav" not in index
    # composed markup is not escaped twice (nothing in this run's text needs escaping)
    assert "<h3>Stages</h3>" in index and "&lt;" not in index and "&amp;" not in index
    for page in pages:
        text = page.read_text()
        assert CSP in text
        p = parse(page)
        assert all(not re.match(r"[a-z]+://", x) for x in p.links), page
        assert "http://" not in text.replace("http-equiv", "") and "https://" not in text
        imgs = re.findall(r'<img [^>]*src="([^"]+)"', text)
        assert imgs and all(x.startswith("data:image/png;base64,") for x in imgs), page
    for page in pages[1:]:
        key = f"{page.parent.name}/{page.stem}"
        players = re.findall(r'<audio id="(audio-[a-z]+)" controls preload="none" src="([^"]+)"', page.read_text())
        assert [x for x, _ in players] == ["audio-user", "audio-model"], page
        for element, src in players:
            name = {"audio-user": "input.wav", "audio-model": "output.wav"}[element]
            stage = stage_dir(home, "dataset" if name == "input.wav" else "runner")
            assert src == f"{page.stem}/{name}"
            link = page.parent / src
            assert link.is_symlink() and not os.path.isabs(os.readlink(link))
            stored = reports_page(home, key).parent / src   # the same page, opened from the store
            for p in (link, stored):
                assert p.resolve() == (stage / "samples" / key / name).resolve(), (p, key)


def reports_page(home, key) -> Path:
    return (run_dir(home) / "report.html").resolve().parent / "samples" / f"{key}.html"


def test_moved_home_still_plays(home, tmp_path):
    """The whole home folder moved: the run folder's pages still reach their audio."""
    moved = tmp_path / "elsewhere" / "home"
    shutil.copytree(home, moved, symlinks=True, ignore=shutil.ignore_patterns("locks"))
    pages = sorted((run_dir(moved) / "samples").glob("*/*.html"))
    assert pages
    for page in pages:
        for src in re.findall(r'<audio [^>]*src="([^"]+)"', page.read_text()):
            target = (page.parent / src).resolve()
            assert target.is_file() and moved.resolve() in target.parents, (page, src)


def test_self_contained_file_of_chosen_samples(home, tmp_path):
    """`report --self-contained --samples`: one file, the index and the chosen pages in frames,
    their audio inlined (the WAVs' bytes), links into the file; unknown samples and misplaced
    options are one line."""
    import base64
    import html
    chosen = ["synthetic_turn_taking/0", "synthetic_user_interruption/0"]
    out = tmp_path / "send" / "two.html"
    r = dx(home, "report", "--self-contained", "--samples", chosen[0], "--samples", chosen[1], "-o", str(out))
    assert r.returncode == 0 and "2 sample page(s)" in r.stdout, r.stdout + r.stderr
    text = out.read_text()
    frames = [html.unescape(x) for x in re.findall(r'srcdoc="([^"]*)"', text)]
    assert len(frames) == 3   # the index, then each chosen sample
    index, pages = frames[0], frames[1:]
    assert "<audio" not in index
    for key in chosen:
        assert f'href="#sample-{key.replace("/", "--")}" target="_top"' in index
        assert f'id="sample-{key.replace("/", "--")}"' in text
    assert 'href="samples/' not in index
    assert "synthetic_pause_handling" in index and 'href="#sample-synthetic_pause_handling--0"' not in index
    for key, page in zip(chosen, pages):
        assert f"<h1>{key}</h1>" in page and 'href="#report" target="_top"' in page
        srcs = dict(re.findall(r'<audio id="(audio-[a-z]+)" [^>]*src="([^"]+)"', page))
        assert set(srcs) == {"audio-user", "audio-model"}
        wav = stage_dir(home, "runner") / "samples" / key / "output.wav"
        assert srcs["audio-model"].startswith("data:audio/wav;base64,")
        import soundfile as sf
        import io
        got = sf.read(io.BytesIO(base64.b64decode(srcs["audio-model"].split(",", 1)[1])))[0]
        assert len(got) == sf.info(str(wav)).frames
    default = dx(home, "report", "--self-contained")
    assert default.returncode == 0, default.stderr
    assert (run_dir(home) / "report-self-contained.html").is_file() and "4 sample page(s)" in default.stdout
    for args, want in ((["--self-contained", "--samples", "synthetic_turn_taking/9"],
                        "has no sample 'synthetic_turn_taking/9'"),
                       (["--samples", chosen[0]], "--samples and -o/--output go with --self-contained"),
                       (["--self-contained", "-o", str(tmp_path)], "is a folder")):
        bad = dx(home, "report", *args)
        assert bad.returncode == 2 and want in bad.stderr and len(bad.stderr.splitlines()) == 1, bad.stderr


def test_bundle_refuses_a_large_run_without_samples(home, monkeypatch):
    from duplexeval import reports
    from duplexeval.store import Store
    from duplexeval_common.errors import DuplexEvalError
    monkeypatch.setattr(reports, "MAX_BUNDLE", 3)
    with pytest.raises(DuplexEvalError, match="has 4 samples: choose at most 3"):
        reports.self_contained(Store(home), "latest")


def copy_home(home, dst) -> Path:
    shutil.copytree(home, dst, symlinks=True, ignore=shutil.ignore_patterns("reports", "locks"))
    return dst


def test_sample_without_output_and_damaged_files(home, tmp_path):
    """A sample whose runner failed (no output.wav) and one whose words are not JSON and whose
    events have lines that are not JSON objects: said so on their pages, the rest of the report as usual."""
    from duplexeval import reports
    from duplexeval.store import Store
    h = copy_home(home, tmp_path / "h")
    rec = run_record(h)
    lost, damaged = "synthetic_turn_taking/0", "synthetic_pause_handling/0"
    (stage_dir(h, "runner") / "samples" / lost / "output.wav").unlink()
    (stage_dir(h, "asr") / "samples" / damaged / "output.json").write_text("{not json")
    events = stage_dir(h, "runner") / "samples" / damaged / "events.jsonl"
    events.write_text(events.read_text() + "[1]\n{not json\n")  # JSON that is not an object, and not JSON
    rec.update(status="partial", missing={lost: "runner: failed: the model closed the connection"})
    (run_dir(h) / "run.json").write_text(json.dumps(rec))
    path, built = reports.build_and_link(Store(h), rec["run_id"])
    assert built and path == run_dir(h) / "report.html"
    page = (run_dir(h) / "samples" / f"{lost}.html").read_text()
    assert "no output.wav (model): runner: failed: the model closed the connection" in page
    assert 'id="audio-user"' in page and 'id="audio-model"' not in page and 'class="timeline"' in page
    index = parse(path)
    assert ["synthetic_turn_taking/0", "runner: failed: the model closed the connection"] in dict(index.tables)[""]
    assert "<p>1 sample(s) missing from the metrics:</p>" in path.read_text()
    text = (run_dir(h) / "samples" / f"{damaged}.html").read_text()
    assert "No words." in text
    assert "2 line(s) of events.jsonl are not JSON objects." in text and 'class="events"' in text
    assert "output.json: not readable" in path.read_text()


def test_secrets_from_the_environment_never_reach_a_page(home, tmp_path, monkeypatch):
    from duplexeval_fdb_v1.report import run_report
    from duplexeval.store import Store
    secret = "planted-test-key-9f8e7d6c5b4a39281706"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    h = copy_home(home, tmp_path / "h")
    key = "synthetic_turn_taking/0"
    events = stage_dir(h, "runner") / "samples" / key / "events.jsonl"
    events.write_text(events.read_text() + json.dumps({"t": 1.0, "type": "error", "message": f"bad key {secret}"})
                      + "\n")
    rec = run_record(h)
    rec.update(status="partial", missing={key: f"runner: failed: refused {secret}"})
    out = tmp_path / "out"
    out.mkdir()
    run_report.build(Store(h), rec, out)
    texts = [p.read_text() for p in out.rglob("*.html")]
    assert all(secret not in t for t in texts)
    assert "bad key" in (out / "samples" / f"{key}.html").read_text()


def test_same_bytes_each_build_and_a_new_folder_per_digest(home, tmp_path):
    from duplexeval_fdb_v1.report import run_report
    from duplexeval.store import Store
    store, rec = Store(home), run_record(home)
    outs = []
    for name in ("a", "b"):
        out = tmp_path / name
        out.mkdir()
        assert run_report.build(store, rec, out) == 4
        outs.append({p.relative_to(out): p.read_bytes() for p in sorted(out.rglob("*.html"))})
    assert outs[0] == outs[1] and len(outs[0]) == 5   # the index and a page per sample
    stored = run_dir(home) / "report.html"
    assert stored.read_bytes() == outs[0][Path("report.html")]  # eval's build: the same bytes


def test_cached_reuse_and_concurrent_builder(home, tmp_path, monkeypatch):
    from duplexeval import reports
    from duplexeval_fdb_v1.report import run_report
    from duplexeval.store import Store
    # a second `report` of the run, and an eval rerun (all stages cached), reuse the stored folder
    r = dx(home, "report")
    assert r.returncode == 0 and "reused from the store" in r.stdout, r.stdout + r.stderr
    folder = run_dir(home) / "report.html"
    before = folder.resolve().stat().st_mtime_ns
    rerun = dx(home, "eval", "--model", "fixed-latency", "--judge", "none", "--limit", "1")
    assert rerun.returncode == 0
    assert (run_dir(home) / "report.html").resolve() == folder.resolve()
    assert folder.resolve().stat().st_mtime_ns == before

    # another builder renames its folder into place while this one builds: this one's is dropped
    h = copy_home(home, tmp_path / "h")
    store, rec = Store(h), run_record(h)
    final = reports.report_dir(store, rec)
    original = run_report.build

    def racing(store_, record, out):
        n = original(store_, record, out)
        shutil.copytree(out, final)
        (final / "winner").write_text("1")
        return n
    monkeypatch.setattr(run_report, "build", racing)
    got, built = reports.ensure(store, rec)
    assert got == final and not built and (final / "winner").is_file()
    assert [p.name for p in final.parent.iterdir()] == [final.name]  # no temporary folder left

    # a folder under the digest that is not a report is named, not used
    shutil.rmtree(final)
    (final / "stray").mkdir(parents=True)
    monkeypatch.setattr(run_report, "build", original)
    from duplexeval_common.errors import DuplexEvalError
    with pytest.raises(DuplexEvalError, match="exists without report.html"):
        reports.ensure(store, rec)
    assert [p.name for p in final.parent.iterdir()] == [final.name]

    # a build that fails leaves nothing behind
    def broken(store_, record, out):
        (out / "report.html").write_text("half")
        raise RuntimeError("boom")
    monkeypatch.setattr(run_report, "build", broken)
    shutil.rmtree(final)
    with pytest.raises(RuntimeError):
        reports.ensure(store, rec)
    assert list(final.parent.iterdir()) == []


def test_digest_follows_the_stages_and_what_the_report_shows():
    from duplexeval import reports
    rec = {"model": "m", "dataset": "d", "status": "ok", "missing": {}, "run_id": "a", "seconds": 1.0,
           "stages": [{"name": "dataset", "key": "k1", "status": "ok", "cached": False, "seconds": 3.0}]}
    same = {**rec, "run_id": "b", "seconds": 0.1,
            "stages": [{**rec["stages"][0], "cached": True, "seconds": 0.0}]}
    assert reports.digest(rec) == reports.digest(same)  # a cached rerun shares the report
    assert reports.digest(rec) != reports.digest({**rec, "stages": [{**rec["stages"][0], "key": "k2"}]})
    assert reports.digest(rec) != reports.digest({**rec, "missing": {"s/0": "runner: failed"}})
    assert reports.digest(rec) != reports.digest({**rec, "status": "partial"})


def test_report_command_errors(tmp_path):
    r = dx(tmp_path, "report", "no-such-run")
    assert r.returncode == 2 and r.stderr.startswith("error: no run 'no-such-run'") and len(r.stderr.splitlines()) == 1
    d = tmp_path / "runs" / "20260101-000000-abcd"
    d.mkdir(parents=True)
    (d / "run.json").write_text(json.dumps({"run_id": d.name, "status": "running"}))
    r = dx(tmp_path, "report", d.name)
    assert r.returncode == 2 and "still running" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "store" / "reports").exists()


PER_ROUND = [
    {"subset": "mtr_a", "round": 1, "n": 10, "success_rate": 0.9, "success_interval": [0.6, 0.98],
     "latency_s": 0.8, "latency_interval": [0.6, 1.0]},
    {"subset": "mtr_a", "round": 2, "n": 10, "success_rate": 0.7, "success_interval": [0.4, 0.89],
     "latency_s": 1.1, "latency_interval": None},
    {"subset": "mtr_a", "round": 3, "n": 9, "success_rate": 0.5, "success_interval": None, "latency_s": None},
    {"subset": "mtr_b", "round": 1, "n": 4, "success_rate": 1.0},
]


def test_round_plot_on_constructed_rows():
    import base64
    import io

    from PIL import Image

    from duplexeval_common.html import plots
    assert plots.round_plot([]) is None
    a, b = plots.round_plot(PER_ROUND), plots.round_plot(list(reversed(PER_ROUND)))
    assert a == b  # same bytes, whatever the row order
    png = base64.b64decode(re.search(r'src="data:image/png;base64,([^"]+)"', a).group(1))
    assert Image.open(io.BytesIO(png)).size == (1000, 360)
    assert a != plots.round_plot(PER_ROUND[:2])
    metrics = {"subsets": {"mtr_a": {"per_round": [{k: v for k, v in r.items() if k != "subset"}
                                                   for r in PER_ROUND[:3]] + ["junk", {"round": "x"}]},
                           "mtr_b": {"per_round": [{"round": 1, "n": 4, "success_rate": 1.0}]},
                           "candor_turn_taking": {"unified": {}}}}
    assert plots.per_round_rows(metrics) == PER_ROUND
    assert plots.per_round_rows({"subsets": {"x_turn_taking": {"unified": {}}}}) == []


def test_index_draws_no_rounds_even_when_metrics_have_them(home):
    """Per-round figures are MTR-DuplexBench's (its package's report); FDB v1.0's index has none."""
    from duplexeval_fdb_v1.report import run_report
    from duplexeval.store import Store
    data = run_report.load(Store(home), run_record(home))
    assert "By round" not in run_report._plots(data)
    data.metrics = json.loads(json.dumps(data.metrics))
    data.metrics["subsets"]["synthetic_turn_taking"]["per_round"] = [
        {k: v for k, v in r.items() if k != "subset"} for r in PER_ROUND[:3]]
    assert "By round" not in run_report._plots(data) and "<img" in run_report._plots(data)


def test_index_of_727_samples_is_small_and_lists_them_all(home, tmp_path):
    """fdb-synth's size (727 samples): the index stays one small file with no audio (every row,
    its outcome for the filters, a link per sample), and a sample page links its audio."""
    from tests.html_pages import scaled_report
    out = tmp_path / "report"
    key = "synthetic_user_interruption/7"
    _, keys = scaled_report(home, out, 727, (key,))
    index = out / "report.html"
    size = index.stat().st_size
    assert size < 5_000_000, f"{size / 1e6:.2f} MB"
    text = index.read_text()
    assert "<audio" not in text and "audio/wav" not in text
    rows = dict(parse(index).tables)["samples"][1:]
    assert [f"{r[0]}/{r[1]}" for r in rows] == sorted(keys, key=lambda k: (k.split("/")[0], int(k.split("/")[1])))
    outcomes = re.findall(r'<tr data-outcome="([^"]+)">', text)
    assert len(outcomes) == 727 and {r[2] for r in rows} == set(outcomes)
    for outcome in set(outcomes):
        assert f'value="{outcome}" checked> {outcome} ({outcomes.count(outcome)})' in text
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*.html")) == ["report.html", f"samples/{key}.html"]
    page = out / "samples" / f"{key}.html"
    for src in re.findall(r'<audio [^>]*preload="none" src="([^"]+)"', page.read_text()):
        assert (page.parent / src).resolve().is_file()


def test_no_html_links_the_metrics_and_report_builds_it_later(home, tmp_path):
    """`eval --no-html` (a copy of the home, every stage from its store): the run folder links
    metrics.json and report.md and holds no report.html; the line says how to build it, and
    `duplexeval report` then links the same report as the first run's."""
    import shutil
    copy = tmp_path / "home"
    shutil.copytree(home, copy, symlinks=True)
    first = run_record(copy)["run_id"]
    r = dx(copy, "eval", "--model", "fixed-latency", "--judge", "none", "--limit", "1", "--no-html")
    assert r.returncode == 0, r.stderr[-3000:]
    run = run_record(copy)
    assert run["run_id"] != first and all(s["cached"] for s in run["stages"])
    assert f"html: not built (--no-html); `duplexeval report {run['run_id']}` builds it" in r.stdout
    d = run_dir(copy)
    assert (d / "metrics.json").is_file() and (d / "report.md").is_file()
    assert not (d / "report.html").exists() and not (d / "samples").exists()
    rep = dx(copy, "report")
    assert rep.returncode == 0, rep.stderr
    assert (d / "report.html").resolve() == (run_dir(copy).parent / first / "report.html").resolve()
