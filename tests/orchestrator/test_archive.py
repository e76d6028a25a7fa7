"""Run archives: archive -> verify -> rescore byte for byte, deterministic bytes, tampering named,
unsafe members refused with nothing left behind, and never a secret in an archive.

One real run (fixed-latency runner, the official-gpt judge against a chat-completions double on
127.0.0.1, one sample per subset) serves every test; the other archives are made from its archive.
Planted keys reach that run by every route a user has: the judge's key variable in the
environment, an `api_key` setting on the command line (moved to DUPLEXEVAL_SECRET_0 and redacted in
run.json's command), and an unrelated token variable.
"""

import gzip
import io
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from duplexeval_common.jsonio import read_json

from ..conftest import command

K_ENV = "archive-env-key-5150AAAABBBBCCCC"
K_ARG = "archive-arg-key-7777DDDDEEEEFFFF"
K_TOK = "archive-hf-token-31415926535897"
SECRETS = (K_ENV, K_ARG, K_TOK)
REPLY = "Analysis: it handled the interruption.\nI would rate the AI's response as 4"


class _Chat(BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.server.calls.append(self.headers.get("Authorization"))
        body = json.dumps({"id": "c", "object": "chat.completion", "created": 0, "model": "gpt-4-turbo",
                           "choices": [{"index": 0, "finish_reason": "stop",
                                        "message": {"role": "assistant", "content": REPLY}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


def dx(home, *args, env=None):
    base = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    return subprocess.run([command("duplexeval"), "--home", str(home), *args], capture_output=True, text=True,
                          env={**base, "DUPLEXEVAL_CACHE": str(home / "cache"), **(env or {})}, timeout=900)


PLANTED = {"OPENAI_API_KEY": K_ENV, "HF_TOKEN": K_TOK}


@pytest.fixture(scope="module")
def chat():
    srv = HTTPServer(("127.0.0.1", 0), _Chat)
    srv.calls = []
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv
    srv.shutdown()


@pytest.fixture(scope="module")
def made(tmp_path_factory, chat):
    """(home, run record, archive.tar.gz, archive.tar.zst)."""
    home = tmp_path_factory.mktemp("archive-home")
    base_url = f"http://127.0.0.1:{chat.server_address[1]}/v1"
    r = dx(home, "eval", "--model", "fixed-latency", "--judge", "official-gpt", "--limit", "1",
           "--judge-arg", f"base_url={base_url}", "--judge-arg", f"api_key={K_ARG}", "--judge-arg", "cache=false",
           env=PLANTED)
    assert r.returncode == 0, r.stderr[-3000:]
    assert f"Bearer {K_ARG}" in chat.calls
    run = read_json(home / "runs" / "latest" / "run.json")
    out = {}
    for suffix in ("tar.gz", "tar.zst"):
        r = dx(home, "archive", "-o", str(home / f"run.{suffix}"), env=PLANTED)
        assert r.returncode == 0, r.stderr
        assert r.stdout.startswith(f"archived run {run['run_id']}: ")
        out[suffix] = home / f"run.{suffix}"
    return home, run, out["tar.gz"], out["tar.zst"]


def members(path: Path) -> dict[str, bytes]:
    from duplexeval.extract import _decompressed, kind
    with open(path, "rb") as raw, _decompressed(raw, kind(path)) as s, tarfile.open(fileobj=s, mode="r|") as t:
        return {m.name: t.extractfile(m).read() for m in t}


def tar_gz(path: Path, entries: list) -> Path:
    """A .tar.gz of (TarInfo, bytes | None) entries, as given."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for info, data in entries:
            if data is not None:
                info.size = len(data)
            t.addfile(info, io.BytesIO(data) if data is not None else None)
    path.write_bytes(gzip.compress(buf.getvalue(), mtime=0))
    return path


def rebuilt(src: Path, dst: Path, change=None, drop=None, add=None) -> Path:
    ms = members(src)
    if change:
        name = next(n for n in ms if n.endswith(change))
        data = bytearray(ms[name])
        data[len(data) // 2] ^= 1
        ms[name] = bytes(data)
    if drop:
        del ms[next(n for n in ms if n.endswith(drop))]
    if add:
        ms[next(iter(ms)).split("/")[0] + "/" + add] = b"extra\n"
    return tar_gz(dst, [(tarfile.TarInfo(n), d) for n, d in ms.items()])


# ---- the round trip ---------------------------------------------------------------------------

def test_archive_verify_rescore_round_trip_byte_for_byte(made, chat, tmp_path):
    home, run, gz, zst = made
    for path in (gz, zst):
        r = dx(home, "verify", str(path))
        assert r.returncode == 0, r.stdout + r.stderr
        assert r.stdout.startswith("ok: ") and r.stdout.endswith(" members verified\n")
    calls = len(chat.calls)
    out = tmp_path / "rescored"
    r = dx(home, "rescore", str(zst), "-o", str(out))
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    assert r.stdout.splitlines()[0] == "identical: metrics.json report.md unified-samples.jsonl unified.json"
    assert len(chat.calls) == calls  # the judge was never called: its judgements are archived outputs
    agg = home / "store" / run["stages"][-1]["key"]
    for name in ("metrics.json", "unified.json", "unified-samples.jsonl", "report.md"):
        assert (out / name).read_bytes() == (agg / name).read_bytes(), name
    assert read_json(out / "rescore.json")["identical"] == ["metrics.json", "report.md",
                                                             "unified-samples.jsonl", "unified.json"]
    # the default output folder: a fresh one under runs/, printed
    r = dx(home, "rescore", str(gz))
    assert r.returncode == 0, r.stderr[-2000:]
    printed = Path(r.stdout.splitlines()[-1].split(": ", 1)[1])
    assert printed.parent == home / "runs" and printed.name.startswith(f"rescore-{run['run_id']}-")
    assert (printed / "metrics.json").read_bytes() == (agg / "metrics.json").read_bytes()
    # an output folder that holds something is refused
    r = dx(home, "rescore", str(gz), "-o", str(printed))
    assert r.returncode == 2 and "is not an empty folder" in r.stderr


def test_rescore_names_the_changed_values():
    from duplexeval.rescore import file_changes
    old = json.dumps({"subsets": {"a": {"tor": 1.0, "n": 2}}}).encode()
    new = json.dumps({"subsets": {"a": {"tor": 0.5, "n": 2}}}).encode()
    assert file_changes("metrics.json", old, new) == ["$.subsets.a.tor: 1.0 -> 0.5"]
    assert file_changes("metrics.json", old, old) == []
    rows = file_changes("unified-samples.jsonl", b'{"sample_id": "s/1", "x": 1}\n', b'{"sample_id": "s/1", "x": 2}\n')
    assert rows == ["s/1.x: 1 -> 2"]
    assert file_changes("report.md", b"a\nb\n", b"a\nc\n") == ["@@ -2 +2 @@", "-b", "+c"]


def test_same_run_gives_the_same_bytes(made, tmp_path):
    from duplexeval.archive import write
    from duplexeval.store import Store
    home, run, gz, zst = made
    store = Store(home)
    for path in (gz, zst):
        again = write(store, run["run_id"], tmp_path / path.name, cache=home / "cache")
        assert again.read_bytes() == path.read_bytes(), path.name
    assert gz.read_bytes()[4:8] == b"\0\0\0\0"  # gzip header mtime
    with tarfile.open(gz) as t:
        infos = t.getmembers()
    assert all(m.mtime == 0 and m.uid == 0 and m.gid == 0 and m.uname == "" and m.mode == 0o644 and m.isreg()
               for m in infos)
    names = [m.name.split("/", 1)[1] for m in infos]
    assert names[-2:] == ["archive.json", "SHA256SUMS"] and names[:-2] == sorted(names[:-2])


def test_layout(made):
    home, run, gz, _ = made
    ms = {n.split("/", 1)[1]: d for n, d in members(gz).items()}
    assert {n.split("/", 1)[0] for n in members(gz)} == {run["run_id"]}
    for s in run["stages"]:
        rec = json.loads(ms[f"store/{s['key']}/stage.json"])
        assert all(f"store/{s['key']}/{o}" in ms for o in rec["outputs"])
        assert f"store/configs/{s['key']}.json" in ms
    judge = json.loads(ms[f"store/{run['stages'][3]['key']}/stage.json"])
    assert "judge-ledger.jsonl" in judge["outputs"]
    assert any(n.startswith("cache/vad/vad-") and n.endswith(".npz") for n in ms)
    env = json.loads(ms["environment.json"])
    assert env["python"] and env["packages"]["zstandard"] and env["git"]["commit"] is not None
    assert set(env["stages"]) == {s["name"] for s in run["stages"]}
    meta = json.loads(ms["archive.json"])
    assert meta["format"] == 1 and meta["run_id"] == run["run_id"] and meta["members"] == len(ms) - 2
    assert meta["bytes"] == sum(len(d) for n, d in ms.items() if n not in ("archive.json", "SHA256SUMS"))
    sums = ms["SHA256SUMS"].decode().splitlines()
    assert [line.split("  ", 1)[1] for line in sums] == sorted(n for n in ms if n != "SHA256SUMS")
    # a VAD entry loads as the aggregator's cache reads it
    import numpy as np
    npz = next(d for n, d in ms.items() if n.endswith(".npz"))
    with np.load(io.BytesIO(npz)) as z:
        assert z["probs"].dtype == np.float32 and int(z["n"]) > 0


# ---- secrets ----------------------------------------------------------------------------------

def test_no_planted_key_in_the_archive(made):
    home, run, gz, zst = made
    assert "<redacted>" in " ".join(run["command"])  # the api_key argument reached the run record, redacted
    for path in (gz, zst):
        from duplexeval.extract import _decompressed, kind
        with open(path, "rb") as raw, _decompressed(raw, kind(path)) as s:
            whole = s.read()
        assert len(whole) > 100_000
        assert [k for k in SECRETS if k.encode() in whole] == []


def test_a_secret_found_in_a_member_refuses_the_archive(made, tmp_path):
    home, run, _, _ = made
    copy = tmp_path / "home"
    shutil.copytree(home / "runs", copy / "runs", symlinks=True)
    shutil.copytree(home / "store", copy / "store", ignore=shutil.ignore_patterns("locks"))
    key = run["stages"][-1]["key"]
    cfg = copy / "store" / "configs" / f"{key}.json"
    cfg.write_text(cfg.read_text().replace("{", '{"leaked": "%s", ' % K_ENV, 1))
    out = tmp_path / "out" / "a.tar.zst"
    r = dx(copy, "archive", run["run_id"], "-o", str(out), env=PLANTED)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        f"error: refused to write a.tar.zst: member store/configs/{key}.json holds the value of the secret "
        "variable OPENAI_API_KEY"]
    assert K_ENV not in r.stdout + r.stderr
    assert list((tmp_path / "out").iterdir()) == []  # nothing left behind


def test_runs_that_cannot_be_archived(made, tmp_path):
    from duplexeval.archive import ArchiveError, write
    from duplexeval.store import Store
    home, run, _, _ = made
    copy = tmp_path / "home"
    shutil.copytree(home / "runs", copy / "runs", symlinks=True)
    (copy / "store").mkdir()
    rec_path = copy / "runs" / run["run_id"] / "run.json"
    from duplexeval.provenance import orchestrator
    # still running: its orchestrator (this process) is alive (one that is gone is interrupted, store.settle)
    alive = {**run["environment"], "orchestrator": orchestrator()}
    for change, message in ((dict(status="running", environment=alive), "is still running"),
                            (dict(status="failed", stages=run["stages"][:2], reason="stage asr: crashed"),
                             "failed before the aggregate stage (stage asr: crashed)")):
        rec_path.write_text(json.dumps({**run, **change}))
        with pytest.raises(ArchiveError, match=message.replace("(", r"\(").replace(")", r"\)")):
            write(Store(copy), run["run_id"], tmp_path / "x.tar.gz")
    rec_path.write_text(json.dumps(run))  # the stages are not in this store
    with pytest.raises(ArchiveError, match="no readable stage.json"):
        write(Store(copy), run["run_id"], tmp_path / "x.tar.gz")
    with pytest.raises(ArchiveError, match="must end with .tar.gz or .tar.zst"):
        write(Store(home), run["run_id"], tmp_path / "x.zip")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home"]


def test_a_store_file_changed_since_its_stage_is_refused(made, tmp_path):
    from duplexeval.archive import ArchiveError, write
    from duplexeval.store import Store
    home, run, _, _ = made
    copy = tmp_path / "home"
    shutil.copytree(home / "runs", copy / "runs", symlinks=True)
    shutil.copytree(home / "store", copy / "store", ignore=shutil.ignore_patterns("locks"))
    agg = copy / "store" / run["stages"][-1]["key"] / "report.md"
    agg.write_text(agg.read_text() + "edited\n")
    with pytest.raises(ArchiveError, match="report.md no longer has the sha256 its stage.json lists"):
        write(Store(copy), run["run_id"], tmp_path / "out.tar.gz", cache=home / "cache")
    assert not (tmp_path / "out.tar.gz").exists() and not list(tmp_path.glob(".out*"))


# ---- tampering --------------------------------------------------------------------------------

def test_tampered_archives_are_named(made, tmp_path):
    from duplexeval.archive import verify
    home, run, gz, _ = made
    agg = run["stages"][-1]["key"]
    one = rebuilt(gz, tmp_path / "byte.tar.gz", change="/metrics.json")
    assert verify(one) == [f"changed: store/{agg}/metrics.json"]
    gone = rebuilt(gz, tmp_path / "gone.tar.gz", drop="/report.md")
    assert verify(gone) == [f"changed: archive.json says {len(members(gz)) - 2} members, the archive holds "
                            f"{len(members(gz)) - 3}", f"missing: store/{agg}/report.md"]
    extra = rebuilt(gz, tmp_path / "extra.tar.gz", add="store/notes.txt")
    assert verify(extra)[-1] == "unlisted: store/notes.txt"
    r = dx(home, "verify", str(one))
    assert r.returncode == 1 and r.stdout == f"changed: store/{agg}/metrics.json\n"
    r = dx(home, "rescore", str(one), "-o", str(tmp_path / "o"))
    assert r.returncode == 2 and "does not verify (1 difference(s), first: changed: " in r.stderr
    assert not (tmp_path / "o").exists()


def test_unreadable_files(tmp_path, made):
    from duplexeval.archive import ArchiveError, verify
    home, _, gz, _ = made
    bad = tmp_path / "x.tar.gz"
    bad.write_bytes(b"plain text")
    with pytest.raises(ArchiveError, match="not a .tar.gz or .tar.zst archive"):
        verify(bad)
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(gz.read_bytes()[: gz.stat().st_size // 2])
    with pytest.raises(ArchiveError, match="not a readable archive"):
        verify(cut)
    r = dx(home, "verify", str(cut))
    assert r.returncode == 2 and r.stderr.startswith("error: cut.tar.gz: not a readable archive")


def test_a_cut_archive_is_named_truncated(tmp_path, made, monkeypatch):
    from duplexeval import archive
    from duplexeval.archive import ArchiveError, extracted, verify
    _, _, gz, zst = made
    shm = tmp_path / "shm"
    shm.mkdir()
    monkeypatch.setattr(archive, "TMPFS", shm)
    monkeypatch.setattr(tempfile, "tempdir", str(shm))
    for src in (gz, zst):
        data = src.read_bytes()
        # within the first block (nothing decompresses: formerly "empty file"), mid-way, near the end
        for n in (40, len(data) // 2, len(data) - 40):
            cut = tmp_path / f"cut-{n}{src.name[3:]}"
            cut.write_bytes(data[:n])
            for call in (lambda: verify(cut), lambda: extracted(cut).__enter__()):
                with pytest.raises(ArchiveError) as exc:
                    call()
                assert str(exc.value).startswith(f"{cut.name}: not a readable archive (truncated or corrupt"), \
                    str(exc.value)
    assert list(shm.iterdir()) == []


def test_a_damaged_header_is_not_taken_for_the_end(tmp_path, made):
    """TarFile ends quietly on a header it cannot parse; the walk says the archive is corrupt."""
    from duplexeval.archive import ArchiveError, verify
    _, _, gz, _ = made
    raw = bytearray(gzip.decompress(gz.read_bytes()))
    # the second member's header: the first is a pax header (512) + data blocks + its file header
    with tarfile.open(fileobj=io.BytesIO(bytes(raw))) as t:
        second = t.getmembers()[1].offset
    raw[second:second + 512] = b"\x07" * 512
    bad = tmp_path / "bad.tar.gz"
    bad.write_bytes(gzip.compress(bytes(raw), mtime=0))
    with pytest.raises(ArchiveError, match=r"bad.tar.gz: not a readable archive \(truncated or corrupt"):
        verify(bad)


# ---- unsafe members ---------------------------------------------------------------------------

def _info(name, kind=tarfile.REGTYPE, link=""):
    i = tarfile.TarInfo(name)
    i.type, i.linkname = kind, link
    return i


UNSAFE = [
    ("traversal", [(_info("r/run.json"), b"{}"), (_info("r/../../evil"), b"x")], "'r/../../evil': a '..' component"),
    ("absolute", [(_info("r/run.json"), b"{}"), (_info("/tmp/evil"), b"x")], "'/tmp/evil': an absolute path"),
    ("symlink", [(_info("r/run.json"), b"{}"), (_info("r/l", tarfile.SYMTYPE, "../../etc/passwd"), None)],
     "'r/l': a symlink whose target '../../etc/passwd' leaves the archive root"),
    ("hardlink", [(_info("r/run.json"), b"{}"), (_info("r/h", tarfile.LNKTYPE, "/etc/passwd"), None)],
     "'r/h': a hardlink whose target '/etc/passwd' leaves the archive root"),
    ("device", [(_info("r/run.json"), b"{}"), (_info("r/tty", tarfile.CHRTYPE), None)], "'r/tty': a character device"),
    ("fifo", [(_info("r/run.json"), b"{}"), (_info("r/p", tarfile.FIFOTYPE), None)], "'r/p': a FIFO"),
    ("twice", [(_info("r/run.json"), b"{}"), (_info("r/run.json"), b"{}")], "'r/run.json': appears twice"),
    ("big", [(_info("r/run.json"), b"{}"), (_info("r/big"), bytes(100_000))],
     "'r/big': the archive expands past the size limit of 50000 bytes"),
    # headers that declare nothing but still decompress to more than the limit
    ("many", [(_info("r/run.json"), b"{}")] + [(_info(f"r/e{i}"), b"") for i in range(200)],
     "the archive expands past the size limit of 50000 bytes"),
]


@pytest.mark.parametrize("case, entries, message", UNSAFE, ids=[c[0] for c in UNSAFE])
def test_unsafe_members_are_refused_and_nothing_is_left(tmp_path, monkeypatch, case, entries, message):
    from duplexeval.archive import ArchiveError, extracted, verify
    from duplexeval import archive
    path = tar_gz(tmp_path / f"{case}.tar.gz", entries)
    temp, shm = tmp_path / "temp", tmp_path / "shm"
    temp.mkdir()
    shm.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    monkeypatch.setattr(archive, "TMPFS", shm)
    calls = [lambda: verify(path, max_bytes=50_000), lambda: extracted(path, max_bytes=50_000).__enter__(),
             lambda: extracted(path, max_bytes=50_000, tmpfs=False).__enter__()]
    for call in calls:
        with pytest.raises(ArchiveError) as exc:
            call()
        line = str(exc.value)
        assert "\n" not in line and line.startswith(f"{case}.tar.gz: refused member ") and message in line, line
    # one pass: members before the refused one were written, and removed with their folder
    assert list(temp.iterdir()) == [] and list(shm.iterdir()) == [] and not (tmp_path / "evil").exists()


def test_default_limit_and_max_bytes_option(made, tmp_path):
    home, _, gz, _ = made
    r = dx(home, "verify", str(gz), "--max-bytes", "10000")
    assert r.returncode == 2 and "expands past the size limit of 10000 bytes" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_extracted_yields_the_root_and_cleans_up(made, tmp_path, monkeypatch):
    from duplexeval import archive
    from duplexeval.archive import extracted, stage_dir
    home, run, _, zst = made
    temp, shm, near = tmp_path / "temp", tmp_path / "shm", tmp_path / "near"
    for d in (temp, shm, near):
        d.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    monkeypatch.setattr(archive, "TMPFS", shm)
    with extracted(zst) as root:  # in the tmpfs: it has room
        assert root.parent.parent == shm
        assert (root / "run.json").read_bytes() == (home / "runs" / run["run_id"] / "run.json").read_bytes()
        assert stage_dir(root, run, "judge") == root / "store" / run["stages"][3]["key"]
    with extracted(zst, near=near, tmpfs=False) as root:  # the docker runtime's choice: beside the output
        assert root.parent.parent == near
    # a tmpfs without room for the members: the pass starts again beside the output
    monkeypatch.setattr(archive, "_tmpfs_room", lambda: 4096)
    with archive.verified(zst, near=near) as (root, diffs):
        assert root.parent.parent == near and diffs == []
        assert list(shm.iterdir()) == []
    assert [list(d.iterdir()) for d in (temp, shm, near)] == [[], [], []]


def test_a_tmpfs_that_fills_up_falls_back(made, tmp_path, monkeypatch):
    """ENOSPC in the tmpfs (another process filled it) is not an error: the pass starts again."""
    import errno as _errno

    from duplexeval import archive, extract
    _, run, _, zst = made
    shm, near = tmp_path / "shm", tmp_path / "near"
    shm.mkdir()
    near.mkdir()
    monkeypatch.setattr(archive, "TMPFS", shm)
    real_write = os.write

    def full(fd, data):
        if os.readlink(f"/proc/self/fd/{fd}").startswith(str(shm)):
            raise OSError(_errno.ENOSPC, "No space left on device")
        return real_write(fd, data)
    monkeypatch.setattr(extract.os, "write", full)
    with archive.verified(zst, near=near) as (root, diffs):
        assert root.parent.parent == near and diffs == [] and list(shm.iterdir()) == []
    # beside the output a full device is an error, one line, nothing left
    monkeypatch.setattr(extract.os, "write", lambda fd, data: (_ for _ in ()).throw(
        OSError(_errno.ENOSPC, "No space left on device")))
    with pytest.raises(archive.ArchiveError, match=r"cannot extract member .* No space left on device"):
        archive.verified(zst, near=near, tmpfs=False).__enter__()
    assert list(near.iterdir()) == [] and list(shm.iterdir()) == []


def test_a_tampered_archive_extracted_in_one_pass_leaves_nothing(made, tmp_path, monkeypatch):
    from duplexeval import archive
    home, run, gz, _ = made
    shm = tmp_path / "shm"
    shm.mkdir()
    monkeypatch.setattr(archive, "TMPFS", shm)
    one = rebuilt(gz, tmp_path / "byte.tar.gz", change="/metrics.json")
    with pytest.raises(RuntimeError):
        with archive.verified(one) as (root, diffs):
            assert diffs == [f"changed: store/{run['stages'][-1]['key']}/metrics.json"]
            assert (root / "run.json").is_file()
            raise RuntimeError("rescore refuses it")
    assert list(shm.iterdir()) == []


# ---- the aggregate stage's merged tree (what a rescore runs) ------------------------------------

@pytest.fixture
def shm():
    if not Path("/dev/shm").is_dir() or not os.access("/dev/shm", os.W_OK):
        pytest.skip("needs a tmpfs at /dev/shm")
    d = Path(tempfile.mkdtemp(prefix="test-archive-", dir="/dev/shm"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_the_pipeline_walks_in_the_canonical_order_wherever_its_tree_lies(tmp_path, monkeypatch, shm):
    """The official column sums in walk order. The aggregate stage builds its tree in a tmpfs when
    it can, else in the temporary folder, and walks it in the canonical order in both, so where
    the tree lies (and a machine's file system) cannot move a number."""
    import contextlib

    from duplexeval_common import trees
    from duplexeval_common.samples import Inputs
    from duplexeval_fdb_v1.score import official
    from duplexeval_fdb_v1.score.stage import ROOT_FILES, TREE_FILES
    stage = tmp_path / "stage"
    ids = [str(i) for i in range(0, 400, 3)]
    for subset in ("candor_pause_handling", "icc_backchannel"):
        for i in ids[::-1]:
            d = stage / "samples" / subset / i
            d.mkdir(parents=True)
            (d / "output.json").write_text("{}")
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    canonical = sorted(ids, key=int)
    for where, usable in ((shm, True), (tmp_path / "no-tmpfs", False)):
        monkeypatch.setattr(trees, "TMPFS", where)
        with contextlib.ExitStack() as stack:
            tree, _ = trees.merged_tree(Inputs([stage]), stack, TREE_FILES, ROOT_FILES)
            assert tree.parent == (shm if usable else temp)
            for subset in ("candor_pause_handling", "icc_backchannel"):
                with official.canonical_order():
                    assert official.listdir(tree / subset) == canonical
                    assert official.backchannel_ids(tree / subset) == canonical
                assert official.listdir(tree / subset) == os.listdir(tree / subset)  # outside: as the scripts
        assert list(shm.iterdir()) == [] and list(temp.iterdir()) == []


def test_the_archive_holds_no_report_and_rebuilds_it(made):
    """An archive holds what rebuilds the report (every file the report reads is a stage's output),
    not the report: built from the extracted archive, every page has the run's own bytes."""
    from duplexeval import reports
    from duplexeval.archive import extracted
    from duplexeval.store import Store
    home, run, _, zst = made
    names = [n.split("/", 1)[1] for n in members(zst)]
    assert not [n for n in names if n.startswith("store/reports") or n.endswith(".html") or n.startswith("runs/")]
    r = dx(home, "report", run["run_id"])   # the run's own report (its eval ran with --no-html: the root conftest.py)
    assert r.returncode == 0, r.stdout + r.stderr
    own = (home / "runs" / run["run_id"] / "report.html").resolve().parent
    want = {p.relative_to(own): p.read_bytes() for p in own.rglob("*.html")}
    assert len(want) == 5   # the index and a page per sample
    with extracted(zst) as root:
        folder, built = reports.ensure(Store(root), run)
        assert built and folder.is_relative_to(root)
        got = {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*.html")}
        for link in folder.rglob("*.wav"):   # the pages' audio: the archived stages' WAVs
            assert link.resolve().is_relative_to(root.resolve()) and link.resolve().is_file()
    assert got == want
