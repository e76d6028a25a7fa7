"""`duplexeval compare A B`: two real small runs (fixed-latency and silence, --limit 2) paired by
sample id, a run against itself, archives as inputs, different datasets refused, the HTML page."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest
from click.testing import CliRunner

from duplexeval.cli import main
from duplexeval.store import Store
from duplexeval_common.jsonio import read_json

from ..conftest import SUBSET_ARGS, command


_MADE: dict = {}  # made once per test process, even when another module imports the fixtures


@pytest.fixture(scope="session")
def scored_runs(tmp_path_factory):
    """One home with two finished runs of fdb-mini (its three original subsets), 2 samples per subset:
    {"home", "fixed", "silence"}.
    (Shared with test_leaderboard.py.)"""
    if "runs" not in _MADE:
        _MADE["runs"] = _make_runs(tmp_path_factory)
    return _MADE["runs"]


def _make_runs(tmp_path_factory) -> dict:
    home = tmp_path_factory.mktemp("compare-home")
    ids = {}
    for model in ("fixed-latency", "silence"):
        p = subprocess.run([command("duplexeval"), "--home", str(home), "eval", "--model", model, "--judge", "none",
                            "--limit", "2", *SUBSET_ARGS], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr[-3000:]
        ids[model.split("-")[0]] = read_json(home / "runs" / "latest" / "run.json")["run_id"]
    return {"home": home, **ids}


@pytest.fixture(scope="session")
def archives(scored_runs, tmp_path_factory):
    """The two runs archived (archive.write): {"fixed": .tar.zst, "silence": .tar.gz}."""
    archive = pytest.importorskip("duplexeval.archive")
    if "archives" not in _MADE:
        d = tmp_path_factory.mktemp("archives")
        store = Store(scored_runs["home"])
        _MADE["archives"] = {"fixed": archive.write(store, scored_runs["fixed"], d / "fixed.tar.zst"),
                             "silence": archive.write(store, scored_runs["silence"], d / "silence.tar.gz")}
    return _MADE["archives"]


def dx(home, *args):
    return CliRunner().invoke(main, ["--home", str(home), *args])


def _compare(home, a, b, out=None, **kw):
    from duplexeval.compare_runs import compare_runs
    return compare_runs(Store(home), a, b, out, **kw)


def _errors(res) -> list[str]:
    return [x for x in res.stderr.splitlines() if x.strip()]


def test_two_runs_paired(scored_runs):
    home, fixed, silence = scored_runs["home"], scored_runs["fixed"], scored_runs["silence"]
    res = dx(home, "compare", fixed, silence)
    assert res.exit_code == 0, res.output
    page = home / "runs" / fixed / f"compare-{silence}.html"
    assert res.stdout.rstrip().endswith(f"written: {page}") and page.is_file()
    assert f"A: run {fixed} (store): model fixed-latency, dataset fdb-mini" in res.stdout
    line = next(x for x in res.stdout.splitlines() if x.split()[:1] == ["pause_intrusion_rate"])
    # fixed-latency speaks into both pauses, silence never: 2 discordant pairs of one kind
    assert "diff  -1.0000" in line and line.endswith("McNemar b 2 c 0 p 0.5")

    result, text, path = _compare(home, fixed, silence, home / "c.html")
    cmp = result["comparison"]
    assert (result["a"]["model"], result["b"]["model"]) == ("fixed-latency", "silence")
    for subset, s in cmp["subsets"].items():
        assert s["pairs"]["eligible_in_both"] == 2 and s["pairs"]["only_in_a"] == s["pairs"]["only_in_b"] == 0
    tt = cmp["subsets"]["synthetic_turn_taking"]["metrics"]
    assert tt["response_rate_2s"]["diff"] == -1.0 and tt["response_rate_2s"]["mcnemar"] == {"b": 2, "c": 0, "p": 0.5}
    assert tt["no_response_rate"]["mcnemar"] == {"b": 0, "c": 2, "p": 0.5}
    assert tt["response_rate_2s"]["interval"] == [-1.0, -1.0]      # the bootstrap intervals as before
    assert "mcnemar" not in tt["response_latency_s"]
    ui = cmp["subsets"]["synthetic_user_interruption"]["pairs"]
    assert (ui["exercised_in_both"], ui["exercised_only_a"]) == (0, 2)  # silence never takes the turn
    assert cmp["official"]["subsets"]["synthetic_pause_handling"]["tor"] == {"a": 1.0, "b": 0.0, "diff": -1.0}
    # B minus A the other way round: signs and b/c swap
    back = _compare(home, silence, fixed, home / "back.html")[0]["comparison"]
    m = back["subsets"]["synthetic_turn_taking"]["metrics"]["response_rate_2s"]
    assert m["diff"] == 1.0 and m["mcnemar"] == {"b": 0, "c": 2, "p": 0.5}


def test_a_run_against_itself(scored_runs):
    home, fixed = scored_runs["home"], scored_runs["fixed"]
    result, text, path = _compare(home, fixed, fixed, home / "self.html")
    assert path == home / "self.html"
    n_share = 0
    for s in result["comparison"]["subsets"].values():
        for name, m in s["metrics"].items():
            if m["a"] is not None:
                assert m["diff"] == 0, name
                assert m["interval"] is None or m["interval"] == [0.0, 0.0], name
            if "mcnemar" in m:
                n_share += 1
                assert m["mcnemar"] == {"b": 0, "c": 0, "p": 1.0}, name
    assert n_share == 5 + 5 + 7  # every yes/no metric of the three tasks
    for m in result["comparison"]["official"]["subsets"]["synthetic_turn_taking"].values():
        assert m["diff"] == 0
    assert "McNemar b 0 c 0 p 1" in text and "p 0.5" not in text
    # `latest` names the silence run: the default page is under its folder
    res = dx(home, "compare", "latest", "latest")
    silence = scored_runs["silence"]
    assert res.exit_code == 0, res.output
    assert (home / "runs" / silence / f"compare-{silence}.html").is_file()


def test_archives_as_inputs(scored_runs, archives, tmp_path):
    home, fixed, silence = scored_runs["home"], scored_runs["fixed"], scored_runs["silence"]
    runs = _compare(home, fixed, silence, tmp_path / "runs.html")[0]
    both = _compare(home, str(archives["fixed"]), str(archives["silence"]), tmp_path / "both.html")[0]
    mixed = _compare(home, fixed, str(archives["silence"]), tmp_path / "mixed.html")[0]
    assert both["comparison"] == runs["comparison"] == mixed["comparison"]
    assert both["a"]["source"] == "archive" and both["a"]["archive"] == "fixed.tar.zst"
    assert mixed["a"]["source"] == "run" and mixed["b"]["archive"] == "silence.tar.gz"
    assert (both["a"]["run_id"], both["b"]["run_id"]) == (fixed, silence)
    html = (tmp_path / "both.html").read_text()
    assert "archive fixed.tar.zst" in html and str(tmp_path) not in html and "duplexeval-archive-" not in html
    # the default page of an archived A goes under runs/<A's run id>, by its run id
    res = dx(home, "compare", str(archives["silence"]), str(archives["fixed"]))
    assert res.exit_code == 0, res.output
    assert (home / "runs" / silence / f"compare-{fixed}.html").is_file()
    assert f"A: run {silence} (archive silence.tar.gz)" in res.stdout


def _tampered(src, dst):
    """A copy of a .tar.gz archive with one byte of the aggregate stage's metrics.json changed."""
    import io
    import tarfile
    with tarfile.open(src) as tin, tarfile.open(dst, "w:gz") as tout:
        for m in tin.getmembers():
            data = tin.extractfile(m).read()
            if m.name.endswith("/metrics.json"):
                data = data.replace(b'"tor": 0.0', b'"tor": 0.5', 1)
            m.size = len(data)
            tout.addfile(m, io.BytesIO(data))
    return dst


def test_a_tampered_or_missing_archive_is_refused(scored_runs, archives, tmp_path):
    home, fixed = scored_runs["home"], scored_runs["fixed"]
    bad = _tampered(archives["silence"], tmp_path / "bad.tar.gz")
    res = dx(home, "compare", fixed, str(bad), "-o", str(tmp_path / "x.html"))
    assert res.exit_code == 2 and len(_errors(res)) == 1
    assert _errors(res)[0].startswith(f"error: B: archive {bad}: does not verify: changed: store/")
    assert "metrics.json" in _errors(res)[0]
    res = dx(home, "compare", str(tmp_path / "none.tar.zst"), fixed, "-o", str(tmp_path / "x.html"))
    assert res.exit_code == 2 and _errors(res) == [f"error: A: archive {tmp_path / 'none.tar.zst'}: no such file"]
    junk = tmp_path / "junk.tar.zst"
    junk.write_bytes(b"not an archive at all")
    res = dx(home, "compare", str(junk), fixed, "-o", str(tmp_path / "x.html"))
    assert res.exit_code == 2 and len(_errors(res)) == 1 and _errors(res)[0].startswith(f"error: A: archive {junk}")
    assert not (tmp_path / "x.html").exists()


def _copy_run(home, run_id, new_id, **changes):
    src, dst = home / "runs" / run_id, home / "runs" / new_id
    shutil.copytree(src, dst)
    rec = read_json(dst / "run.json")
    rec.update(run_id=new_id, **changes)
    (dst / "run.json").write_text(json.dumps(rec))
    return new_id


def test_different_datasets_refused(scored_runs, tmp_path):
    home, fixed, silence = scored_runs["home"], scored_runs["fixed"], scored_runs["silence"]
    other = _copy_run(home, silence, "20990101-000000-0000d5e7", dataset="fdb-v1")
    try:
        res = dx(home, "compare", fixed, other)
        assert res.exit_code == 2 and res.stdout == ""
        assert _errors(res) == [f"error: A (run {fixed}, store) is a run of dataset fdb-mini and B (run {other}, "
                                "store) of dataset fdb-v1: runs of different datasets do not pair"]
        assert not (home / "runs" / fixed / f"compare-{other}.html").exists()
    finally:
        shutil.rmtree(home / "runs" / other)


def test_unhappy_paths_are_one_line(scored_runs, tmp_path):
    home, fixed = scored_runs["home"], scored_runs["fixed"]
    res = dx(home, "compare", fixed, "no-such-run")
    assert res.exit_code == 2 and _errors(res) == [f"error: no run 'no-such-run' in {home / 'runs'} "
                                                   "(see `duplexeval runs`)"]
    failed = _copy_run(home, fixed, "20990101-000000-0000fa11", status="failed", reason="stage asr: boom")
    rec = read_json(home / "runs" / failed / "run.json")
    rec["stages"] = [s for s in rec["stages"] if s["name"] != "aggregate"]
    (home / "runs" / failed / "run.json").write_text(json.dumps(rec))
    try:
        res = dx(home, "compare", failed, fixed)
        assert res.exit_code == 2 and _errors(res) == [
            f"error: A: run {failed}: the run has no completed aggregate stage (nothing scored to compare)"]
    finally:
        shutil.rmtree(home / "runs" / failed)
    (tmp_path / "adir").mkdir()
    res = dx(home, "compare", fixed, fixed, "-o", str(tmp_path / "adir"))
    assert res.exit_code == 2 and _errors(res) == [f"error: {tmp_path / 'adir'}: is a folder (give the HTML "
                                                   "file's name)"]
    assert list((tmp_path / "adir").iterdir()) == []


def test_html_written_and_deterministic(scored_runs, tmp_path):
    home, fixed, silence = scored_runs["home"], scored_runs["fixed"], scored_runs["silence"]
    for name in ("one.html", "two.html"):
        res = dx(home, "compare", fixed, silence, "-o", str(tmp_path / "sub" / name))
        assert res.exit_code == 0, res.output
    one, two = (tmp_path / "sub" / "one.html").read_bytes(), (tmp_path / "sub" / "two.html").read_bytes()
    assert one == two
    html = one.decode()
    assert html.startswith("<!DOCTYPE html>") and "Content-Security-Policy" in html
    assert "http://" not in html and "https://" not in html and str(home) not in html
    assert fixed in html and silence in html
    assert html.count("<h2 ") == 4  # three subsets and the official column
    # the pause_intrusion_rate row: A 1, B 0, diff -1, McNemar b 2 c 0 p 0.5
    row = next(x for x in html.splitlines() if x.startswith("<tr><td class=\"l\">pause_intrusion_rate<"))
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row)
    assert cells == ["pause_intrusion_rate", "1.0000", "0.0000", "-1.0000", "[-1.0000, -1.0000]", "2",
                     "2", "0", "0.5", ""]
    # metrics in the report's order (the aggregator's "order"), not the JSON's sorted keys
    names = re.findall(r'<tr><td class="l">([a-z_0-9]+)</td>', html)
    assert names[:7] == ["pause_intrusion_rate", "pause_intrusion_per_pause", "intrusion_s_per_pause_s",
                         "inside_pause_onset_rate", "pre_pause_speech_rate", "carry_in_rate", "any_speech_rate"]
    official = re.findall(r'<tr><td class="l">synthetic_turn_taking</td><td class="l">([a-z]+)</td>', html)
    assert official == ["tor", "latency"]
    assert not list((tmp_path / "sub").glob(".*"))  # no temporary file left
