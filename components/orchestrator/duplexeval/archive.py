"""A run as one file: write it, verify it, extract it safely (docs/archives.md).

    write(store, run_ref, out)      the run's archive at `out` (.tar.gz or .tar.zst); deterministic
    verify(path)                    [] when intact, else one line per difference
    extracted(path, max_bytes)      a context manager: the archive safely extracted (one pass, in a
                                    tmpfs while it has room) into a temporary folder, yielding the
                                    archive's root (the folder with run.json)
    verified(path, max_bytes)       the same pass, every member hashed: yields (root, differences)
    stage_dir(root, run, name)      the archived store/<key> folder of one stage of the run
    run_problems(run, top)          what in a run record cannot be trusted to build a path
    member_limit(path)              how many members the archive file may hold
    ArchiveError                    unreadable, unsafe or refused: one line

Every name read from an archive that a path is built from (run id, stage names and keys, member
paths, a stage.json's outputs and samples) follows the sample-id rule (samples.name_problem) and
is checked before the path is built; reading stops at the member limit.

Layout: one top folder `<run_id>/` holding run.json, packages.txt, environment.json,
store/<key>/ (stage.json and every output it lists) for every stage of the run,
store/configs/<key>.json, cache/vad/... (the VAD probability cache entries of the run's audio, so a
rescore is warm), then archive.json and SHA256SUMS (sha256sum format, every other member).
Members are regular files only, sorted by name (archive.json and SHA256SUMS last, so the archive is
written in one streaming pass), with a fixed mtime, uid, gid, owner names and mode; the gzip header
has mtime 0 and no file name, zstd runs at a fixed level and writes no timestamps.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import secrets as _random
import shutil
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from duplexeval_common.jsonio import dumps
from duplexeval_common.samples import STAGE_RECORD, name_problem

from .extract import DEFAULT_MAX_BYTES, ArchiveError, NoRoom, read_all, walk, writer_into
from .paths import component_command

__all__ = ["ArchiveError", "write", "write_with_record", "verify", "check", "extracted", "verified",
           "stage_dir", "run_problems", "member_limit", "FORMAT", "MAX_MEMBERS"]

FORMAT = 1
ARCHIVE_JSON = "archive.json"
SUMS = "SHA256SUMS"
MTIME = 0
GZIP_LEVEL = 6
ZSTD_LEVEL = 3
SUFFIXES = (".tar.gz", ".tar.zst")
# Extraction goes here while it has room (a tmpfs: writing a run's audio costs a fraction of
# what it costs on disk), else beside the output.
TMPFS = Path("/dev/shm")
# The most members an archive may hold: 1,000,000 (a full fdb-synth run archives about 6,000, an
# mtr-synth run of the paper's sizes over 100,000), and, unless --max-members says otherwise, at
# most MEMBERS_FREE plus one per MEMBER_BYTES bytes of the archive file: a real member (a record
# with hashes, audio, probabilities) never compresses below that, so a small file of a million
# empty members is refused after a few ten thousand. Reading stops at the first member past the
# limit.
MAX_MEMBERS = 1_000_000
MEMBERS_FREE = 20_000
MEMBER_BYTES = 32


def member_limit(path: Path, max_members: int | None = None) -> tuple[int, str]:
    """(the most members the archive at `path` may hold, how that limit is set)."""
    if max_members is not None:
        return int(max_members), "--max-members"
    try:
        size = Path(path).stat().st_size
    except OSError:
        size = 0
    n = min(MAX_MEMBERS, MEMBERS_FREE + size // MEMBER_BYTES)
    return n, (f"the member limit: {MEMBERS_FREE} and one per {MEMBER_BYTES} bytes of the file, at most "
               f"{MAX_MEMBERS}; --max-members")


# ---- names ------------------------------------------------------------------------------------

def component_problem(part: str) -> str | None:
    """Why one component of a member path is not a plain name: the sample-id rule
    (`samples.name_problem`), a leading underscore allowed (the seal `_done.json`)."""
    if part.startswith("_") and part.strip("_"):
        part = part.lstrip("_")
    return name_problem(part)


def path_problem(rel: object) -> str | None:
    """Why a relative path read from an archive (a member, a stage's output) is not a path of
    plain names joined by '/', or None."""
    if not isinstance(rel, str) or not rel:
        return "is not a relative path"
    for part in rel.split("/"):
        bad = component_problem(part)
        if bad:
            return f"has a component that {bad}" if bad.startswith("is ") else f"has a component: {bad}"
    return None


def run_problems(run: object, top: str | None = None) -> list[str]:
    """What is wrong, for building paths, with a run record read from an archive (or a home):
    its run id and every stage's name and key must be plain names (the sample-id rule), the run
    id that of the archive's top folder, and no key given to two stages. [] when all is well."""
    if not isinstance(run, dict):
        return ["not a run record"]
    out = []
    rid = run.get("run_id")
    bad = name_problem(rid)
    if bad:
        out.append(f"its run_id {bad}")
    elif top is not None and rid != top:
        out.append(f"its run_id {rid!r} is not the archive's top folder {top!r}")
    stages = run.get("stages")
    if not isinstance(stages, list):
        return out + ["its stages are not a list"]
    owner: dict[str, str] = {}
    for i, st in enumerate(stages):
        if not isinstance(st, dict):
            out.append(f"stage {i} is not an object")
            continue
        name = st.get("name")
        bad = name_problem(name)
        if bad:
            out.append(f"stage {i}'s name {bad}")
            continue
        bad = name_problem(st.get("key"))
        if bad:
            out.append(f"stage {name}'s key {bad}")
            continue
        if not isinstance(st.get("component"), str):
            out.append(f"stage {name} names no component")
        if st["key"] in owner:
            out.append(f"stages {owner[st['key']]} and {name} have the same key {st['key'][:12]}")
        owner.setdefault(st["key"], name)
    return out


def _check_run(run: dict, where: str) -> None:
    problems = run_problems(run)
    if problems:
        raise ArchiveError(f"{where}: {problems[0]}")


class _Members:
    """Wraps an `on_file`: every member name made of plain names (`path_problem`) and at most
    `limit` members, checked before the member's bytes are handed on."""

    def __init__(self, path: Path, on_file, limit: int | None):
        self.path, self.on_file = path, on_file
        if limit is not None and int(limit) < 1:
            raise ArchiveError(f"--max-members must be at least 1, got {limit}")
        self.limit, self.why = member_limit(path, limit)
        self.n = 0

    def __call__(self, name: str, member, data) -> None:
        self.n += 1
        if self.n > self.limit:
            raise ArchiveError(f"{self.path.name}: refused member {name!r}: the archive holds more than "
                               f"{self.limit} members ({self.why}); nothing extracted")
        rel = name.split("/", 1)[1] if "/" in name else name
        bad = path_problem(rel)
        if bad:
            raise ArchiveError(f"{self.path.name}: refused member {name!r}: its name {bad}; nothing extracted")
        self.on_file(name, member, data)


# ---- writing ----------------------------------------------------------------------------------

@dataclass
class _Member:
    name: str                     # relative to the top folder
    path: Path | None = None      # a file on disk, or
    data: bytes | None = None     # bytes made here
    expect: str | None = None     # the sha256 its stage.json lists (stage outputs)


def _secret_needles() -> list[tuple[str, bytes]]:
    """(variable, value) of every secret variable set in the environment, as secrets.py judges
    them (credential-named and credential-like, or DUPLEXEVAL_SECRET_*)."""
    from duplexeval_common.secrets import env_secrets
    return sorted((k, v.encode()) for k, v in os.environ.items() if v and env_secrets({k: v}))


class _Scan:
    """Streams one member's bytes: sha256, size, and a search for every secret value."""

    def __init__(self, needles: list[tuple[str, bytes]], member: str, out: Path):
        self.needles, self.member, self.out = needles, member, out
        self.keep = max((len(v) for _, v in needles), default=1) - 1
        self.tail = b""
        self.hash = hashlib.sha256()
        self.size = 0

    def feed(self, chunk: bytes) -> None:
        self.hash.update(chunk)
        self.size += len(chunk)
        if not self.needles:
            return
        buf = self.tail + chunk
        for name, value in self.needles:
            if value in buf:
                raise ArchiveError(f"refused to write {self.out.name}: member {self.member} holds the "
                                   f"value of the secret variable {name}")
        self.tail = buf[-self.keep:] if self.keep else b""


class _Reader:
    """A file read for tarfile.addfile, each chunk through a _Scan."""

    def __init__(self, f, scan: _Scan):
        self.f, self.scan = f, scan

    def read(self, n: int = -1) -> bytes:
        data = self.f.read(n)
        self.scan.feed(data)
        return data


def _npz_canonical(path: Path) -> bytes | None:
    """A VAD cache entry re-encoded without the zip timestamps numpy writes (same arrays, fixed
    bytes); None for an entry that does not load."""
    import numpy as np
    try:
        with np.load(path) as z:
            arrays = {k: z[k] for k in sorted(z.files)}
    except (OSError, ValueError, KeyError):
        return None
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
        for name, arr in arrays.items():
            one = io.BytesIO()
            np.lib.format.write_array(one, np.asarray(arr), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            zf.writestr(info, one.getvalue())
    return buf.getvalue()


def _vad_entries(cache_root: Path, shas: set[str]) -> list[_Member]:
    """The VAD probability cache entries of these audio files, in every namespace."""
    out = []
    vad = cache_root / "vad"
    if not vad.is_dir():
        return out
    for ns in sorted(p for p in vad.iterdir() if p.is_dir() and not p.is_symlink()):
        for sha in sorted(shas):
            for f in sorted((ns / sha[:2]).glob(f"{sha}-*.npz")):
                if f.is_file() and not f.is_symlink():
                    data = _npz_canonical(f)
                    if data is not None:
                        out.append(_Member(f"cache/vad/{ns.name}/{sha[:2]}/{f.name}", data=data))
    return out


def _environment(run: dict, packages_txt: str) -> dict:
    env = run.get("environment") or {}
    packages = {}
    for line in packages_txt.splitlines():
        name, sep, version = line.partition("==")
        if sep:
            packages[name] = version
    stages = {}
    for s in run.get("stages", []):
        entry = {"component": s["component"], "identity": s["identity"]}
        prov = s.get("provenance") or {}
        if s["identity"].startswith("image:"):
            entry["image_id"] = s["identity"][len("image:"):]
            if prov.get("image"):
                entry["image"] = prov["image"]
        stages[s["name"]] = entry
    return {"python": env.get("python"), "platform": env.get("platform"), "duplexeval": env.get("duplexeval"),
            "git": env.get("git"), "numeric": env.get("numeric") or {}, "packages_sha256": env.get("packages_sha256"),
            "packages": packages, "runtime": run.get("runtime"), "stages": stages}


def _members(store, run_ref: str, cache_root: Path | None) -> tuple[str, list[_Member]]:
    from duplexeval_common.cache import user_cache_dir
    from duplexeval_common.jsonio import read_json
    run_dir = store.resolve_run(run_ref)
    run = store.read_run(run_ref)
    _check_run(run, f"run {run_ref}: {run_dir / 'run.json'}")
    run_id = run["run_id"]
    if run.get("status") == "running":
        raise ArchiveError(f"run {run_id} is still running: archive it once it has finished")
    stages = run.get("stages") or []
    agg = next((s for s in stages if s["name"] == "aggregate"), None)
    if agg is None or agg.get("status") == "failed":
        why = run.get("reason") or "no aggregate stage"
        raise ArchiveError(f"run {run_id} failed before the aggregate stage ({why}): nothing to archive")
    members = [_Member("run.json", path=run_dir / "run.json")]
    pk = run_dir / "packages.txt"
    if not pk.is_file():
        raise ArchiveError(f"run {run_id}: {pk} is missing")
    members.append(_Member("packages.txt", path=pk))
    members.append(_Member("environment.json", data=dumps(_environment(run, pk.read_text())).encode()))
    wavs: set[str] = set()
    for key in sorted({s["key"] for s in stages}):
        d = store.stage_dir(key)
        try:
            record = read_json(d / STAGE_RECORD)
        except (OSError, ValueError):
            raise ArchiveError(f"run {run_id}: stage {key[:12]} has no readable {STAGE_RECORD} in "
                               f"{store.root} (removed from the store?)") from None
        members.append(_Member(f"store/{key}/{STAGE_RECORD}", path=d / STAGE_RECORD))
        for rel, digest in sorted(record.get("outputs", {}).items()):
            if path_problem(rel):
                raise ArchiveError(f"store/{key}/{STAGE_RECORD}: output {rel!r} is not a plain relative path "
                                   f"({path_problem(rel)})")
            p = d / rel
            if not p.is_file() or p.is_symlink():
                raise ArchiveError(f"run {run_id}: store/{key}/{rel} is missing (listed in its stage.json)")
            members.append(_Member(f"store/{key}/{rel}", path=p, expect=digest))
            if rel.endswith(".wav"):
                wavs.add(digest)
        cfg = store.config_path(key)
        if not cfg.is_file():
            raise ArchiveError(f"run {run_id}: store/configs/{key}.json is missing")
        members.append(_Member(f"store/configs/{key}.json", path=cfg))
    members += _vad_entries(cache_root or user_cache_dir(), wavs)
    members.sort(key=lambda m: m.name)
    if len(members) + 2 > MAX_MEMBERS:  # what verify, rescore and the leaderboard would refuse
        raise ArchiveError(f"run {run_id}: {len(members) + 2} members, more than an archive may hold "
                           f"({MAX_MEMBERS}, the member limit of verify and rescore)")
    return run_id, members


def _open_compressed(raw, out: Path):
    if out.name.endswith(".tar.gz"):
        import gzip
        return gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=GZIP_LEVEL, mtime=0)
    import zstandard
    return zstandard.ZstdCompressor(level=ZSTD_LEVEL, write_checksum=True, threads=0).stream_writer(
        raw, closefd=False)


def _tarinfo(name: str, size: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = size, MTIME, 0o644
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.type = tarfile.REGTYPE
    return info


def write(store, run_ref: str, out: Path, cache: Path | None = None) -> Path:
    """Write the archive of run `run_ref` (a run id or "latest") to `out`; return `out`.

    `cache`: the cache root whose vad/ entries are archived (default user_cache_dir()). Written to
    a temporary name beside `out`, then renamed: nothing is left behind on failure."""
    return write_with_record(store, run_ref, out, cache)[0]


def write_with_record(store, run_ref: str, out: Path, cache: Path | None = None) -> tuple[Path, dict]:
    """`write`, returning also the archive.json record written."""
    out = Path(out)
    if not out.name.endswith(SUFFIXES):
        raise ArchiveError(f"{out}: the archive's name must end with .tar.gz or .tar.zst")
    run_id, members = _members(store, run_ref, cache)
    needles = _secret_needles()
    for m in members:  # a name is bytes of the archive too
        for var, value in needles:
            if value in m.name.encode():
                raise ArchiveError(f"refused to write {out.name}: member name {m.name} holds the value "
                                   f"of the secret variable {var}")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.{_random.token_hex(4)}.tmp"
    sums: list[tuple[str, str]] = []
    total = 0
    try:
        with open(tmp, "wb") as raw:
            comp = _open_compressed(raw, out)
            with tarfile.open(fileobj=comp, mode="w|", format=tarfile.PAX_FORMAT) as tar:

                def add(name: str, path: Path | None, data: bytes | None) -> _Scan:
                    scan = _Scan(needles, name, out)
                    if data is not None:
                        tar.addfile(_tarinfo(f"{run_id}/{name}", len(data)), _Reader(io.BytesIO(data), scan))
                    else:
                        with open(path, "rb") as f:
                            size = os.fstat(f.fileno()).st_size
                            tar.addfile(_tarinfo(f"{run_id}/{name}", size), _Reader(f, scan))
                    return scan

                for m in members:
                    scan = add(m.name, m.path, m.data)
                    digest = scan.hash.hexdigest()
                    if m.expect is not None and digest != m.expect:
                        raise ArchiveError(f"store: {m.name} no longer has the sha256 its stage.json lists "
                                           "(changed in the store since its stage wrote it)")
                    sums.append((digest, m.name))
                    total += scan.size
                    if total > DEFAULT_MAX_BYTES:
                        raise ArchiveError(f"run {run_id}: more than {DEFAULT_MAX_BYTES} bytes of data, past the "
                                           "size limit of verify and rescore (--max-bytes)")
                meta = {"format": FORMAT, "duplexeval": _version(), "run_id": run_id,
                        "members": len(members), "bytes": total}
                scan = add(ARCHIVE_JSON, None, dumps(meta).encode())
                sums.append((scan.hash.hexdigest(), ARCHIVE_JSON))
                text = "".join(f"{h}  {n}\n" for h, n in sorted(sums, key=lambda x: x[1]))
                add(SUMS, None, text.encode())
            comp.close()
            raw.flush()
            os.fsync(raw.fileno())
        limit, why = member_limit(tmp)
        if len(members) + 2 > limit:  # what verify, rescore and the leaderboard would refuse
            raise ArchiveError(f"run {run_id}: {len(members) + 2} members in {tmp.stat().st_size} bytes, more "
                               f"than an archive may hold ({limit}, {why})")
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return out, meta


def _version() -> str:
    from . import __version__
    return __version__


# ---- reading ----------------------------------------------------------------------------------

class _Digests:
    """The `tap` of writer_into, or a hashing `on_file`: {member: sha256} and the bytes of the
    small metadata members verify reads (archive.json, SHA256SUMS, run.json, stage.json files)."""

    KEEP = {ARCHIVE_JSON, SUMS, "run.json"}

    def __init__(self):
        self.hashes: dict[str, str] = {}
        self.small: dict[str, bytes] = {}
        self._open: tuple[str, object, bytearray | None] | None = None

    def tap(self, name: str):
        self._close()
        rel = name.split("/", 1)[1] if "/" in name else ""
        h = hashlib.sha256()
        buf = bytearray() if (rel in self.KEEP or rel.endswith("/" + STAGE_RECORD)) else None
        self._open = (rel, h, buf)
        if buf is None:
            return h.update

        def feed(chunk) -> None:
            h.update(chunk)
            buf.extend(chunk)
        return feed

    def _close(self) -> None:
        if self._open is not None:
            rel, h, buf = self._open
            self.hashes[rel] = h.hexdigest()
            if buf is not None:
                self.small[rel] = bytes(buf)
            self._open = None

    def on_file(self, name: str, member, data) -> None:
        read_all(data, self.tap(name))

    def done(self) -> tuple[dict[str, str], dict[str, bytes]]:
        self._close()
        return self.hashes, self.small


def _hash_walk(path: Path, max_bytes: int | None, max_members: int | None = None
               ) -> tuple[str, dict[str, str], dict[str, bytes]]:
    """(top, {member: sha256}, {member: bytes} of the small metadata members) in one pass."""
    d = _Digests()
    top = walk(path, _Members(path, d.on_file, max_members), max_bytes)
    return (top, *d.done())


def _record_problem(record: dict, folder: str, outputs: dict, samples: dict) -> str | None:
    """Why an archived stage.json's names cannot be trusted to build paths: its key is not its
    folder's, an output is not a path of plain names, a sample is not `<subset>/<id>`."""
    if record.get("key") != folder:
        return f"its key {str(record.get('key'))[:80]!r} is not its folder's"
    for o in outputs:
        bad = path_problem(o)
        if bad:
            return f"output {str(o)[:80]!r} {bad}"
    for sample in samples:
        parts = sample.split("/") if isinstance(sample, str) else []
        if len(parts) != 2 or any(name_problem(x) for x in parts):
            return f"sample {str(sample)[:80]!r} is not <subset>/<id> of plain names"
    return None


def _differences(top: str, hashes: dict[str, str], small: dict[str, bytes]) -> list[str]:
    out: dict[str, str] = {}

    def note(member: str, line: str) -> None:
        out.setdefault(member, line)

    if "" in hashes:
        note("", f"unlisted: {top} (a file at the top level)")
    for need in ("run.json", ARCHIVE_JSON):
        if need not in hashes:
            note(need, f"missing: {need}")
    if SUMS not in small:
        note(SUMS, f"missing: {SUMS}")
        listed: dict[str, str] | None = None
    else:
        listed = {}
        for i, line in enumerate(small[SUMS].decode("utf-8", "replace").splitlines(), 1):
            digest, sep, name = line.partition("  ")
            if not sep or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest) or not name:
                note(f"{SUMS}:{i}", f"changed: {SUMS} (line {i} is not '<sha256>  <member>')")
                continue
            listed[name] = digest
    if listed is not None:
        for name, digest in listed.items():
            if name not in hashes:
                note(name, f"missing: {name}")
            elif hashes[name] != digest:
                note(name, f"changed: {name}")
        for name in hashes:
            if name and name != SUMS and name not in listed:
                note(name, f"unlisted: {name}")
    # each archived stage's outputs against its stage.json
    for rel, data in sorted(small.items()):
        parts = rel.split("/")
        if len(parts) != 3 or parts[0] != "store" or parts[2] != STAGE_RECORD:
            continue
        try:
            record = json.loads(data)
            outputs = dict(record.get("outputs", {}))
            samples = dict(record.get("samples", {}))
        except (ValueError, AttributeError, TypeError):
            note(rel, f"changed: {rel} (not a stage record)")
            continue
        bad = _record_problem(record, parts[1], outputs, samples)
        if bad:
            note(rel, f"changed: {rel} ({bad})")
            continue
        for o, digest in sorted(outputs.items()):
            name = f"store/{parts[1]}/{o}"
            if name not in hashes:
                note(name, f"missing: {name} (listed in store/{parts[1]}/{STAGE_RECORD})")
            elif hashes[name] != digest:
                note(name, f"changed: {name} (not the sha256 its {STAGE_RECORD} lists)")
    run = None
    stages: list[dict] = []
    try:
        run = json.loads(small["run.json"]) if "run.json" in small else None
        stages = list(run.get("stages", [])) if isinstance(run, dict) else []
    except (ValueError, TypeError, AttributeError):
        note("run.json", "changed: run.json (not a run record)")
    if run is not None and not out.get("run.json"):
        problems = run_problems(run, top)
        if problems:  # a name that would become a path: nothing more is read from the record
            note("run.json", f"changed: run.json ({problems[0]})")
            stages = []
    keys = set()
    for st in stages:
        key = st["key"]
        keys.add(key)
        for rel in (f"store/{key}/{STAGE_RECORD}", f"store/configs/{key}.json"):
            if rel not in hashes:
                note(rel, f"missing: {rel} (a stage of run.json)")
        data = small.get(f"store/{key}/{STAGE_RECORD}")
        try:
            record = json.loads(data) if data is not None else None
        except ValueError:
            record = None
        if isinstance(record, dict) and record.get("component") not in (st["component"],
                                                                         component_command(st["component"])):
            note(f"run.json:{key}", f"changed: run.json (stage {st['name']} is {st['component']!r}, its "
                                    f"store/{key[:12]}.../{STAGE_RECORD} says {record.get('component')!r})")
    # every store folder is a stage of run.json (rescore must not find a stage it did not run)
    if run is not None and stages:
        for name in hashes:
            parts = name.split("/")
            if parts[0] == "store" and len(parts) > 2 and parts[1] != "configs" and parts[1] not in keys:
                note(name, f"unlisted: {name} (not a stage of run.json)")
            elif parts[:2] == ["store", "configs"] and len(parts) == 3 and parts[2].removesuffix(".json") not in keys:
                note(name, f"unlisted: {name} (not a stage of run.json)")
    if ARCHIVE_JSON in small:
        try:
            meta = json.loads(small[ARCHIVE_JSON])
            fmt = meta["format"]
        except (ValueError, TypeError, KeyError):
            note(ARCHIVE_JSON, f"changed: {ARCHIVE_JSON} (not an archive record)")
            meta = None
        if meta is not None:
            if not isinstance(fmt, int) or fmt > FORMAT:
                raise ArchiveError(f"{ARCHIVE_JSON}: archive format {fmt!r} is newer than this duplexeval "
                                   f"reads (format {FORMAT})")
            data_members = len([n for n in hashes if n not in (ARCHIVE_JSON, SUMS)])
            if meta.get("run_id") != top:
                note(ARCHIVE_JSON + ":run", f"changed: {ARCHIVE_JSON} (run {meta.get('run_id')!r}, "
                                            f"top folder {top!r})")
            if meta.get("members") != data_members:
                note(ARCHIVE_JSON + ":n", f"changed: {ARCHIVE_JSON} says {meta.get('members')} members, "
                                          f"the archive holds {data_members}")
    return [out[k] for k in sorted(out)]


def verify(path: Path, max_bytes: int | None = None, max_members: int | None = None) -> list[str]:
    """[] when the archive is intact, else one line per difference ("changed: <member>",
    "missing: <member>", "unlisted: <member>", ...; members named relative to the top folder).
    Raises ArchiveError when the file is unreadable or unsafe (past `max_bytes` or
    `max_members`, default 32 GiB and MAX_MEMBERS)."""
    return check(path, max_bytes, max_members)[1]


def check(path: Path, max_bytes: int | None = None, max_members: int | None = None) -> tuple[int, list[str]]:
    """(members in the archive, `verify`'s differences), in one pass."""
    top, hashes, small = _hash_walk(Path(path), max_bytes, max_members)
    return len(hashes), _differences(top, hashes, small)


def _tmpfs_room() -> int:
    """Bytes an extraction may put in TMPFS: half of what is free there and of the memory
    available (tmpfs pages are memory), less 64 MiB; 0 when TMPFS is not a writable folder."""
    try:
        if not (TMPFS.is_dir() and os.access(TMPFS, os.W_OK | os.X_OK)):
            return 0
        st = os.statvfs(TMPFS)
        free = st.f_bavail * st.f_frsize
        with open("/proc/meminfo") as f:
            avail = next((int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:")), free)
    except (OSError, ValueError, StopIteration):
        return 0
    return max(0, min(free, avail) // 2 - (64 << 20))


@contextlib.contextmanager
def _extract_checked(path: Path, max_bytes: int | None, check: bool, near: Path | None,
                     tmpfs: bool, max_members: int | None = None) -> Iterator[tuple[Path, list[str]]]:
    """One pass: every header checked, every member hashed (check) as it is written into a fresh
    private temporary folder, in TMPFS while it has room (tmpfs=True), else in `near` (default:
    the system's temporary folder). Whatever the pass refuses, and whatever the caller raises,
    the folder is removed: nothing is left behind."""
    path = Path(path)
    places: list[tuple[str | None, int | None]] = []
    room = _tmpfs_room() if tmpfs else 0
    if room > 0:
        places.append((str(TMPFS), room))
    places.append((str(near) if near is not None else None, None))
    for where, limit in places:
        tmp = Path(tempfile.mkdtemp(prefix="duplexeval-archive-", dir=where))
        try:
            d = _Digests() if check else None
            top = walk(path, _Members(path, writer_into(tmp, limit, d.tap if d else None), max_members),
                       max_bytes)
        except NoRoom:
            shutil.rmtree(tmp, ignore_errors=True)
            continue
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        break
    try:
        diffs = _differences(top, *d.done()) if d is not None else []
        root = tmp / top
        if not (root / "run.json").is_file():
            raise ArchiveError(f"{path.name}: no {top}/run.json in the archive")
        yield root, diffs
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@contextlib.contextmanager
def extracted(path: Path, max_bytes: int | None = None, *, near: Path | None = None,
              tmpfs: bool = True, max_members: int | None = None) -> Iterator[Path]:
    """The archive extracted into a temporary folder (removed afterwards); yields its root, the
    folder holding run.json. Every member's header is checked before its bytes are written, and
    the folder is removed whatever the walk refuses (extract.py). The folder is in TMPFS while it
    has room (tmpfs=False: never), else in `near` (default: the system's temporary folder)."""
    with _extract_checked(path, max_bytes, False, near, tmpfs, max_members) as (root, _):
        yield root


@contextlib.contextmanager
def verified(path: Path, max_bytes: int | None = None, *, near: Path | None = None,
             tmpfs: bool = True, max_members: int | None = None) -> Iterator[tuple[Path, list[str]]]:
    """Like `extracted`, but every member is also hashed as it is written (the same single
    pass): yields (root, differences), `verify`'s lines."""
    with _extract_checked(path, max_bytes, True, near, tmpfs, max_members) as pair:
        yield pair


def stage_dir(root: Path, run: dict, name: str) -> Path:
    """The archived store/<key> folder of stage `name` of the run (from run.json)."""
    _check_run(run, f"archive of run {str(run.get('run_id'))[:80]!r}" if isinstance(run, dict) else "archive")
    stage = next((s for s in run.get("stages", []) if s.get("name") == name), None)
    if stage is None:
        raise ArchiveError(f"run {run.get('run_id')}: no stage {name!r}")
    d = Path(root) / "store" / stage["key"]
    if not (d / STAGE_RECORD).is_file():
        raise ArchiveError(f"archive of run {run.get('run_id')}: store/{stage['key']}/{STAGE_RECORD} "
                           f"(stage {name}) is missing")
    return d

