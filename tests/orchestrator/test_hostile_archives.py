"""Hostile archives: every name read from an archive is checked before a path is built from it,
a forged but self-consistent archive never reaches the leaderboard or a comparison, and an archive
of too many members is refused in bounded time.

One real run (the silence model, no judge, one sample per subset) is archived once; every other
archive here is made from it by editing members and recomputing their hashes (stage.json's
outputs, SHA256SUMS, archive.json's member count), as a forger would.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
import time
from pathlib import Path

import pytest

from duplexeval_common.jsonio import read_json

from ..conftest import SUBSET_ARGS, command


def dx(home: Path, *args: str, cwd: Path | None = None):
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    return subprocess.run([command("duplexeval"), "--home", str(home), *args], capture_output=True, text=True,
                          env={**env, "DUPLEXEVAL_CACHE": str(home / "cache")}, timeout=900, cwd=cwd)


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """(home, run record, archive .tar.gz)."""
    home = tmp_path_factory.mktemp("hostile-home")
    r = dx(home, "eval", "--model", "silence", "--judge", "none", "--limit", "1", *SUBSET_ARGS)
    assert r.returncode == 0, r.stderr[-3000:]
    run = read_json(home / "runs" / "latest" / "run.json")
    r = dx(home, "archive", "-o", str(home / "run.tar.gz"))
    assert r.returncode == 0, r.stderr
    return home, run, home / "run.tar.gz"


# ---- forging ----------------------------------------------------------------------------------------

def members(path: Path) -> dict[str, bytes]:
    with tarfile.open(path, "r:gz") as t:
        return {m.name: t.extractfile(m).read() for m in t if m.isfile()}


def write_tar_gz(path: Path, ms: dict[str, bytes]) -> Path:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for name, data in ms.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    path.write_bytes(gzip.compress(buf.getvalue(), mtime=0))
    return path


def _j(data: bytes):
    return json.loads(data)


def _b(obj) -> bytes:
    return (json.dumps(obj, sort_keys=True, indent=2) + "\n").encode()


def forge(src: Path, dst: Path, edit, top: str | None = None) -> Path:
    """`edit(ms, top)` changes the members {relative name: bytes}; then every hash is made to agree
    again: each stage.json's outputs, archive.json's member count and run id, SHA256SUMS. `top`:
    a new top folder name."""
    raw = members(src)
    old_top = next(iter(raw)).split("/")[0]
    ms = {n.split("/", 1)[1]: d for n, d in raw.items()}
    edit(ms, old_top)
    sha = lambda d: hashlib.sha256(d).hexdigest()  # noqa: E731
    for name in list(ms):
        parts = name.split("/")
        if len(parts) == 3 and parts[0] == "store" and parts[2] == "stage.json":
            rec = _j(ms[name])
            outs = rec.get("outputs")
            if isinstance(outs, dict):
                for o in outs:
                    data = ms.get(f"store/{parts[1]}/{o}")
                    if data is not None:
                        outs[o] = sha(data)
                ms[name] = _b(rec)
    meta = _j(ms.pop("archive.json"))
    ms.pop("SHA256SUMS")
    meta["members"] = len(ms)
    if top is not None and meta.get("run_id") == old_top:
        meta["run_id"] = top
    ms["archive.json"] = _b(meta)
    ms["SHA256SUMS"] = "".join(f"{sha(ms[n])}  {n}\n" for n in sorted(ms)).encode()
    order = sorted(n for n in ms if n not in ("archive.json", "SHA256SUMS")) + ["archive.json", "SHA256SUMS"]
    return write_tar_gz(dst, {f"{top or old_top}/{n}": ms[n] for n in order})


def _stage(ms, name):
    run = _j(ms["run.json"])
    return next(s for s in run["stages"] if s["name"] == name)


def _edit_member(name_of, fn):
    """An edit of the archive member name_of(members): its JSON, changed in place by fn."""
    def edit(ms, top):
        name = name_of(ms)
        doc = _j(ms[name])
        fn(doc)
        ms[name] = _b(doc)
    return edit


def _edit_run(fn):
    return _edit_member(lambda _ms: "run.json", fn)


def _edit_stage_record(stage_name, fn):
    return _edit_member(lambda ms: f"store/{_stage(ms, stage_name)['key']}/stage.json", fn)


def _edit_archive_json(fn):
    return _edit_member(lambda _ms: "archive.json", fn)


def _stages(run, name):
    return next(s for s in run["stages"] if s["name"] == name)


def _set_key(name, value):
    return _edit_run(lambda run: _stages(run, name).__setitem__("key", value))


def _forge_metrics(ms, top):
    key = _stage(ms, "aggregate")["key"]
    m = _j(ms[f"store/{key}/metrics.json"])
    m["subsets"]["synthetic_turn_taking"]["official"]["tor"] = 0.1234
    ms[f"store/{key}/metrics.json"] = _b(m)


# ---- 2: every name that becomes a path is checked ---------------------------------------------------

ESCAPE = "x/../../../../outside/PWNED"
HOSTILE_FIELDS = {
    "run.json run_id": _edit_run(lambda run: run.__setitem__("run_id", ESCAPE)),
    "run.json run_id (absolute)": _edit_run(lambda run: run.__setitem__("run_id", "/../../../../../../../outside/PWNED")),
    "run.json run_id (another run's)": _edit_run(lambda run: run.__setitem__("run_id", "20260101-000000-deadbeef")),
    "run.json aggregate key": _set_key("aggregate", "../../../outside/PWNED"),
    "run.json runner key": _set_key("runner", "../configs"),
    "run.json stage name": _edit_run(lambda run: _stages(run, "runner").__setitem__("name", "../x")),
    "run.json aggregate key is the runner's": _edit_run(
        lambda run: _stages(run, "aggregate").__setitem__("key", _stages(run, "runner")["key"])),
    "archive.json run_id": _edit_archive_json(lambda meta: meta.__setitem__("run_id", ESCAPE)),
    "stage.json output": _edit_stage_record("aggregate", lambda rec: rec["outputs"].__setitem__(
        "../../../outside/PWNED/metrics.json", "0" * 64)),
    "stage.json output of an input stage": _edit_stage_record("asr", lambda rec: rec["outputs"].__setitem__(
        "samples/../../../../outside/x.json", "0" * 64)),
    "stage.json sample": _edit_stage_record("asr", lambda rec: rec["samples"].__setitem__(
        "../../outside/PWNED", {"status": "skipped", "reason": "x"})),
    "stage.json key": _edit_stage_record("judge", lambda rec: rec.__setitem__("key", "../../outside")),
}


@pytest.mark.parametrize("field", sorted(HOSTILE_FIELDS))
def test_every_name_that_becomes_a_path_is_checked(made, tmp_path, field):
    home, run, gz = made
    work = tmp_path / "w"
    (work / "a" / "b" / "c" / "d").mkdir(parents=True)
    bad = forge(gz, work / "bad.tar.gz", HOSTILE_FIELDS[field])
    h2 = work / "a" / "b" / "c" / "d" / "home"
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    r = dx(h2, "verify", str(bad))
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert r.stdout.startswith(("changed: ", "missing: ", "unlisted: ")), r.stdout
    r = dx(h2, "rescore", str(bad))
    assert r.returncode == 2, (r.stdout, r.stderr[-2000:])
    assert len(r.stderr.strip().splitlines()) == 1 and r.stderr.startswith("error: "), r.stderr
    assert "Traceback" not in r.stderr
    after = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    made_now = [p for p in after if p not in before]
    assert all(str(p).startswith("w/a/b/c/d/home") for p in made_now), made_now
    assert not any("PWNED" in str(p) or "outside" in str(p) for p in after)
    assert not Path("/outside").exists()


def test_the_swapped_aggregate_key_is_one_line(made, tmp_path):
    """Was: TypeError at rescore.py:199 (the runner's folder set aside as the aggregate's)."""
    home, run, gz = made
    bad = forge(gz, tmp_path / "swap.tar.gz", HOSTILE_FIELDS["run.json aggregate key is the runner's"])
    from duplexeval.archive import verify
    diffs = verify(bad)
    assert any("the same key" in d or "says" in d for d in diffs), diffs
    r = dx(home, "rescore", str(bad), "-o", str(tmp_path / "o"))
    assert r.returncode == 2 and "Traceback" not in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert not (tmp_path / "o").exists()


def test_a_stage_folder_not_of_the_run_is_unlisted(made, tmp_path):
    """A forger could place the rescored stage's own key in the archive so that the rescore finds it
    complete and computes nothing; every store folder must be a stage of run.json."""
    home, run, gz = made
    agg = run["stages"][-1]["key"]

    def add(ms, top):
        fake = "f" * 64
        for name in [n for n in ms if n.startswith(f"store/{agg}/")]:
            ms[name.replace(agg, fake)] = ms[name]
    bad = forge(gz, tmp_path / "extra.tar.gz", add)
    from duplexeval.archive import verify
    diffs = verify(bad)
    assert diffs and all(("store/" + "f" * 64) in d for d in diffs), diffs
    assert f"unlisted: store/{'f' * 64}/metrics.json (not a stage of run.json)" in diffs


def test_a_cached_rescore_is_refused(made, tmp_path, monkeypatch):
    """Should a folder under the new key be there anyway, the rescore refuses instead of reusing it."""
    from duplexeval import rescore as rs
    from duplexeval.store import Store
    home, run, gz = made
    real = rs.Engine

    class Cached(real):
        def run(self, plan, given=None):
            results = super().run(plan, given)
            for r in results:
                r.cached = True
            return results
    monkeypatch.setattr(rs, "Engine", Cached)
    with pytest.raises(rs.ArchiveError, match="nothing was computed"):
        rs.rescore(gz, Store(home), out=tmp_path / "o")
    assert not (tmp_path / "o").exists()


# ---- 4: forged numbers ------------------------------------------------------------------------------

def test_forged_numbers_reach_no_board_and_no_comparison(made, tmp_path):
    home, run, gz = made
    forged = forge(gz, tmp_path / "forged.tar.gz", _forge_metrics)
    honest = shutil.copy(gz, tmp_path / "honest.tar.gz")
    r = dx(home, "verify", str(forged))
    assert r.returncode == 0 and r.stdout.startswith("ok: ")   # self-consistent: verify cannot tell
    r = dx(home, "rescore", str(forged), "-o", str(tmp_path / "rs"))
    assert r.returncode == 1 and "$.subsets.synthetic_turn_taking.official.tor: 0.1234 -> " in r.stdout
    r = dx(home, "leaderboard", str(honest), str(forged), "-o", str(tmp_path / "board.html"))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "1 archive(s) scored, 1 rejected" in r.stdout
    line = next(x for x in r.stdout.splitlines() if "forged.tar.gz:" in x)
    assert "its stored aggregate outputs differ from a rescore of its archived stages (metrics.json: " \
           "$.subsets.synthetic_turn_taking.official.tor: 0.1234 -> " in line
    from duplexeval.leaderboard import build
    board = build([honest, forged], tmp_path / "b2.html")
    assert [r["archive_name"] for r in board["rows"]] == ["honest.tar.gz"]
    assert [r["archive_name"] for r in board["rejected"]] == ["forged.tar.gz"]
    want = read_json(home / "store" / run["stages"][-1]["key"] / "metrics.json")
    tt = board["rows"][0]["subsets"]["synthetic_turn_taking"]["headline"]
    assert tt["tor (official)"]["value"] == want["subsets"]["synthetic_turn_taking"]["official"]["tor"]
    r = dx(home, "compare", str(honest), str(forged), "-o", str(tmp_path / "c.html"))
    assert r.returncode == 2 and "B: archive" in r.stderr and "differ from a rescore" in r.stderr, r.stderr
    assert not (tmp_path / "c.html").exists()
    r = dx(home, "compare", str(honest), run["run_id"], "-o", str(tmp_path / "c.html"))
    assert r.returncode == 0, r.stderr[-2000:]


# ---- 5: the member limit ------------------------------------------------------------------------------

def _many(path: Path, n: int) -> Path:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as t:
        for i in range(n):
            t.addfile(tarfile.TarInfo(f"r/{i}"))
    path.write_bytes(gzip.compress(buf.getvalue(), 1))
    return path


def test_too_many_members_are_refused_in_bounded_time(made, tmp_path):
    """Was: a 2.9 MB archive of 1.2 million empty members took 47.7 s and 942 MB to verify."""
    from duplexeval.archive import MEMBER_BYTES, MEMBERS_FREE, ArchiveError, verify
    home, run, gz = made
    many = _many(tmp_path / "many.tar.gz", 300_000)
    limit = MEMBERS_FREE + many.stat().st_size // MEMBER_BYTES
    assert limit < 300_000
    t0 = time.monotonic()
    r = dx(home, "verify", str(many))
    took = time.monotonic() - t0
    assert r.returncode == 2 and r.stderr == (
        f"error: many.tar.gz: refused member 'r/{limit}': the archive holds more than {limit} members (the "
        f"member limit: {MEMBERS_FREE} and one per {MEMBER_BYTES} bytes of the file, at most 1000000; "
        "--max-members); nothing extracted\n"), r.stderr
    assert took < 60
    n = len(members(gz))
    with pytest.raises(ArchiveError, match=f"more than {n - 1} members \\(--max-members\\)"):
        verify(gz, max_members=n - 1)
    assert verify(gz, max_members=n) == [] and verify(gz) == []
    r = dx(home, "rescore", str(gz), "--max-members", "3", "-o", str(tmp_path / "o"))
    assert r.returncode == 2 and "more than 3 members" in r.stderr and not (tmp_path / "o").exists()


def test_the_writer_keeps_to_the_reader_limits(made, tmp_path, monkeypatch):
    from duplexeval import archive
    from duplexeval.store import Store
    home, run, gz = made
    monkeypatch.setattr(archive, "MAX_MEMBERS", 5)
    with pytest.raises(archive.ArchiveError, match="more than an archive may hold"):
        archive.write(Store(home), run["run_id"], tmp_path / "x.tar.gz", cache=home / "cache")
    assert not list(tmp_path.iterdir())


def test_a_hostile_run_record_in_the_home_is_not_archived(made, tmp_path):
    from duplexeval.archive import ArchiveError, write
    from duplexeval.store import Store
    home, run, gz = made
    h = tmp_path / "h"
    shutil.copytree(home / "store", h / "store", symlinks=True)
    (h / "runs" / run["run_id"]).mkdir(parents=True)
    bad = dict(run, stages=[dict(s, key="../../../etc") if s["name"] == "judge" else s for s in run["stages"]])
    (h / "runs" / run["run_id"] / "run.json").write_text(json.dumps(bad))
    shutil.copy(home / "runs" / run["run_id"] / "packages.txt", h / "runs" / run["run_id"])
    with pytest.raises(ArchiveError, match="stage judge's key '../../../etc' contains a path separator"):
        write(Store(h), run["run_id"], tmp_path / "x.tar.gz", cache=home / "cache")
