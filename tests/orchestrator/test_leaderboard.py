"""`duplexeval leaderboard FILE...`: archives of two real small runs (made by archive.write), verified
before they are scored; a tampered, truncated, missing or misnamed archive rejected with its first
problem; rows, sorting and the HTML page's relative links."""

from __future__ import annotations

import os
import re
import shutil

import pytest
from click.testing import CliRunner

from duplexeval.cli import main
from duplexeval_common.jsonio import read_json

from .test_compare_runs import _tampered, archives, scored_runs  # noqa: F401 (fixtures)

pytest.importorskip("duplexeval.archive", reason="archive.py (write/verify/extracted) is not there yet")


def _metrics(home, run_id) -> dict:
    run = read_json(home / "runs" / run_id / "run.json")
    key = next(s["key"] for s in run["stages"] if s["name"] == "aggregate")
    return read_json(home / "store" / key / "metrics.json")


@pytest.fixture
def lb(tmp_path, archives):  # noqa: F811
    """The two archives copied into tmp/arch (and the page's folder tmp/pages)."""
    d = tmp_path / "arch"
    d.mkdir()
    return {k: shutil.copy(v, d / v.name) for k, v in archives.items()} | {"pages": tmp_path / "pages"}


def test_rows_from_the_archives(scored_runs, lb):  # noqa: F811
    from duplexeval.leaderboard import build
    out = lb["pages"] / "board.html"
    board = build([lb["silence"], lb["fixed"]], out)
    assert board["rejected"] == []
    rows = board["rows"]
    assert [r["model"] for r in rows] == ["fixed-latency", "silence"]   # sorted, not in the order given
    assert build([lb["fixed"], lb["silence"]], out) == board
    fixed = rows[0]
    assert (fixed["dataset"], fixed["runtime"], fixed["run_id"]) == ("fdb-mini", "local", scored_runs["fixed"])
    assert (fixed["samples"], fixed["eligible"]) == (6, 6) and fixed["archive"] == "../arch/fixed.tar.zst"
    m = _metrics(scored_runs["home"], scored_runs["fixed"])
    for subset, s in fixed["subsets"].items():  # each headline metric, read where the declaration says
        want = m["subsets"][subset]
        for label, h in s["headline"].items():
            metric, column = label[:-1].split(" (")
            node = want[column][metric]
            if column == "official":
                assert h["value"] == node, (subset, label)
            else:
                assert (h["value"], h["interval"]) == (node["value"], node["interval"]), (subset, label)
    tt = fixed["subsets"]["synthetic_turn_taking"]["headline"]
    assert list(tt) == ["tor (official)", "latency (official)", "response_rate_2s (unified)",
                        "response_latency_s (unified)"]
    assert list(fixed["subsets"]["synthetic_pause_handling"]["headline"]) == ["tor (official)",
                                                                              "pause_intrusion_rate (unified)"]
    assert rows[1]["subsets"]["synthetic_pause_handling"]["headline"]["pause_intrusion_rate (unified)"]["value"] == 0.0


def test_cli_prints_writes_and_links(scored_runs, lb, monkeypatch):  # noqa: F811
    monkeypatch.chdir(lb["pages"].parent)
    rel = [os.path.relpath(lb[k]) for k in ("silence", "fixed")]
    res = CliRunner().invoke(main, ["leaderboard", *rel])
    assert res.exit_code == 0, res.output
    page = lb["pages"].parent / "leaderboard.html"   # the default: the current folder
    assert res.stdout.rstrip().endswith("written: leaderboard.html") and page.is_file()
    assert "leaderboard: 2 archive(s) scored, 0 rejected" in res.stdout
    line = next(x for x in res.stdout.splitlines() if x.split()[:1] == ["fixed-latency"])
    assert line.split()[:5] == ["fixed-latency", "fdb-mini", "local", "2/2", "1.0000"]
    assert line.rstrip().endswith("[0.3424, 1.0000]  arch/fixed.tar.zst")
    html = page.read_text()
    hrefs = set(re.findall(r'href="([^"#]+)"', html))
    assert hrefs == {"arch/fixed.tar.zst", "arch/silence.tar.gz"}
    for h in hrefs:
        assert (page.parent / h).resolve().is_file()
    # every row of every table links to its archive: 2 rows x (overview + 3 subsets) x 2 links
    assert html.count('href="arch/fixed.tar.zst"') == 8
    # another page folder: the links follow it; the same archives in another order: the same bytes
    for i, files in enumerate(([lb["fixed"], lb["silence"]], [lb["silence"], lb["fixed"]])):
        res = CliRunner().invoke(main, ["leaderboard", *map(str, files), "-o", str(lb["pages"] / f"{i}.html")])
        assert res.exit_code == 0, res.output
    one, two = (lb["pages"] / "0.html").read_bytes(), (lb["pages"] / "1.html").read_bytes()
    assert one == two and b'href="../arch/silence.tar.gz"' in one
    assert b"Content-Security-Policy" in one and str(lb["pages"].parent).encode() not in one


def test_tampered_and_broken_archives_are_rejected(scored_runs, lb, tmp_path):  # noqa: F811
    bad = _tampered(lb["silence"], tmp_path / "arch" / "tampered.tar.gz")
    trunc = tmp_path / "arch" / "truncated.tar.zst"
    trunc.write_bytes(lb["fixed"].read_bytes()[:5000])
    misnamed = tmp_path / "arch" / "fixed.zip"
    shutil.copy(lb["fixed"], misnamed)
    out = tmp_path / "board.html"
    res = CliRunner().invoke(main, ["leaderboard", str(lb["fixed"]), str(bad), str(trunc), str(misnamed),
                                    str(tmp_path / "arch" / "gone.tar.gz"), "-o", str(out)])
    assert res.exit_code == 1, res.output   # rejected archives: exit 1, the page still written
    assert "leaderboard: 1 archive(s) scored, 4 rejected" in res.stdout
    rejected = res.stdout.split("rejected (not scored):\n", 1)[1].split("\n\n", 1)[0].splitlines()
    problems = dict(x.strip().split(": ", 1) for x in rejected)
    assert problems[str(bad)].startswith("changed: store/") and "metrics.json" in problems[str(bad)]
    assert problems[str(misnamed)] == "not an archive (.tar.gz or .tar.zst)"
    assert problems[str(tmp_path / "arch" / "gone.tar.gz")] == "no such file"
    assert problems[str(trunc)]  # unreadable: the archive module's one line
    assert len(problems) == 4
    # the tampered run is not scored: only fixed-latency has rows
    assert [x.split()[0] for x in res.stdout.splitlines() if x.startswith("   silence")] == []
    html = out.read_text()
    assert html.count("<tr>") == 1 + 1 + 3 * 2 + 1 + 4  # overview, 3 subsets, rejected: headers and rows
    assert 'id="rejected"' in html and 'href="arch/tampered.tar.gz"' in html
    assert not list(tmp_path.glob(".board.html*"))


def test_nothing_scored_still_writes_the_page(tmp_path):
    res = CliRunner().invoke(main, ["leaderboard", str(tmp_path / "a.tar.gz"), "-o", str(tmp_path / "b.html")])
    assert res.exit_code == 1 and "0 archive(s) scored, 1 rejected" in res.stdout
    assert "No archive was scored." in (tmp_path / "b.html").read_text()
    res = CliRunner().invoke(main, ["leaderboard"])
    assert res.exit_code == 2 and "Missing argument" in res.output
    (tmp_path / "d").mkdir()
    res = CliRunner().invoke(main, ["leaderboard", str(tmp_path / "a.tar.gz"), "-o", str(tmp_path / "d")])
    assert res.exit_code == 2 and res.stderr == f"error: {tmp_path / 'd'}: is a folder (give the HTML file's name)\n"
