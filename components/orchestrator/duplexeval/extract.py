"""Reading a run archive safely: one streaming pass over its members, every header checked.

An archive is a .tar.gz or .tar.zst file (told apart by its first bytes, not by its name) holding
regular files under one top folder. `walk` decompresses it as a stream and calls back for each
regular file with a reader of its data; before any callback it refuses, with one line naming the
member and the reason:

- an absolute name, a `..` component, an empty or `.` component, a name outside the top folder;
- a symlink or hardlink (the writer never writes links; one whose target leaves the root says so);
- a character or block device, a FIFO, a sparse file or any other non-regular type;
- a name given twice, or a name that is both a file and a folder;
- an archive that expands past `max_bytes`: the bytes actually decompressed are counted (tar
  headers and padding included) and the walk stops as soon as the count passes the limit; the
  sizes the headers declare are summed too, so a lying header is caught before its data is read.

`extracted`-style callers run a first walk that writes nothing, then a second that writes: so
nothing is written from an archive that the first walk refuses.
"""

from __future__ import annotations

import gzip
import os
import posixpath
import tarfile
import zlib
from pathlib import Path
from typing import BinaryIO, Callable

from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.samples import name_problem

DEFAULT_MAX_BYTES = 32 * 1024 ** 3
GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
CHUNK = 1 << 20


class ArchiveError(DuplexEvalError):
    """An archive that cannot be read, is unsafe to extract, or cannot be written: one line."""


class _Limit(Exception):
    pass


class _Counted:
    """The decompressed stream, counted; raises _Limit as soon as more than `limit` bytes came."""

    def __init__(self, stream, limit: int):
        self.stream, self.limit, self.count = stream, limit, 0

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:
            n = CHUNK
        data = self.stream.read(min(n, self.limit + 1 - self.count) if self.count <= self.limit else 1)
        self.count += len(data)
        if self.count > self.limit:
            raise _Limit()
        return data


def kind(path: Path) -> str:
    """"gz" or "zst" from the file's first bytes; ArchiveError for anything else."""
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError as exc:
        raise ArchiveError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if head.startswith(GZIP_MAGIC):
        return "gz"
    if head.startswith(ZSTD_MAGIC):
        return "zst"
    raise ArchiveError(f"{path}: not a .tar.gz or .tar.zst archive")


def _decompressed(raw: BinaryIO, k: str):
    if k == "gz":
        return gzip.GzipFile(fileobj=raw, mode="rb")
    import zstandard
    return zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)


_TYPES = {tarfile.CHRTYPE: "a character device", tarfile.BLKTYPE: "a block device",
          tarfile.FIFOTYPE: "a FIFO", tarfile.GNUTYPE_SPARSE: "a sparse file",
          tarfile.CONTTYPE: "a contiguous file"}


def _link_leaves(member: tarfile.TarInfo, top: str) -> bool:
    target = member.linkname
    if target.startswith("/"):
        return True
    base = posixpath.dirname(member.name) if member.issym() else ""
    norm = posixpath.normpath(posixpath.join(base, target))
    return norm == ".." or norm.startswith("../") or norm.split("/")[0] != top


def member_problem(member: tarfile.TarInfo, top: str | None) -> str | None:
    """Why this header is refused, or None."""
    name = member.name
    if not name:
        return "an empty name"
    if name.startswith("/"):
        return "an absolute path"
    parts = name.split("/")
    if ".." in parts:
        return "a '..' component"
    if any(p in ("", ".") for p in parts):
        return "an empty or '.' path component"
    if "\x00" in name or any(ord(c) < 32 for c in name):
        return "a control character in its name"
    if top is not None and parts[0] != top:
        return f"outside the archive's top folder {top!r}"
    if member.issym() or member.islnk():
        what = "a symlink" if member.issym() else "a hardlink"
        if _link_leaves(member, parts[0]):
            return f"{what} whose target {member.linkname!r} leaves the archive root"
        return f"{what} (an archive holds regular files only)"
    if member.type in _TYPES:
        return _TYPES[member.type]
    if member.isdir():
        return None
    if member.type not in (tarfile.REGTYPE, tarfile.AREGTYPE):
        return f"a member of type {member.type!r} (not a regular file)"
    return None


def walk(path: Path, on_file: Callable[[str, tarfile.TarInfo, BinaryIO], None] | None = None,
         max_bytes: int | None = None) -> str:
    """One pass over the archive; `on_file(name, member, reader)` for each regular file (the reader
    must be read in full or not at all). Returns the top folder's name. Raises ArchiveError."""
    limit = DEFAULT_MAX_BYTES if max_bytes is None else int(max_bytes)
    if limit < 0:
        raise ArchiveError(f"--max-bytes must be at least 0, got {limit}")
    k = kind(path)
    top: str | None = None
    seen: set[str] = set()
    files: set[str] = set()
    folders: set[str] = set()
    declared = 0
    current = ""

    def refuse(name: str, why: str) -> ArchiveError:
        return ArchiveError(f"{path.name}: refused member {name!r}: {why}; nothing extracted")

    try:
        with open(path, "rb") as raw, _decompressed(raw, k) as stream:
            counted = _Counted(stream, limit)
            with tarfile.open(fileobj=counted, mode="r|") as tar:
                for member in tar:
                    current = member.name
                    problem = member_problem(member, top)
                    if problem:
                        raise refuse(member.name, problem)
                    if top is None:
                        top = member.name.split("/")[0]
                        bad = name_problem(top)
                        if bad:
                            raise refuse(member.name, f"its top folder {bad}")
                    name = member.name.rstrip("/")
                    if name in seen:
                        raise refuse(name, "appears twice")
                    seen.add(name)
                    parents = {"/".join(name.split("/")[:i]) for i in range(1, name.count("/") + 1)}
                    if member.isdir():
                        if name in files:
                            raise refuse(name, "is both a file and a folder")
                        folders.add(name)
                    else:
                        if name in folders or parents & files:
                            raise refuse(name, "is both a file and a folder")
                        files.add(name)
                    folders |= parents
                    if parents & files:
                        raise refuse(name, "is both a file and a folder")
                    declared += member.size
                    if declared > limit:
                        raise refuse(name, f"the archive expands past the size limit of {limit} bytes")
                    if member.isdir():
                        continue
                    if on_file is not None:
                        reader = tar.extractfile(member)
                        on_file(name, member, reader)
    except _Limit:
        raise ArchiveError(f"{path.name}: refused member {current!r}: the archive expands past the size "
                           f"limit of {limit} bytes; nothing extracted") from None
    except ArchiveError:
        raise
    except (tarfile.TarError, EOFError, OSError, zlib.error, ValueError) as exc:
        raise ArchiveError(f"{path.name}: not a readable archive ({_why(exc)})") from None
    except Exception as exc:  # zstandard.ZstdError and the like: a damaged stream
        if type(exc).__module__.startswith("zstandard") or "zstd" in type(exc).__name__.lower():
            raise ArchiveError(f"{path.name}: not a readable archive ({_why(exc)})") from None
        raise
    if top is None:
        raise ArchiveError(f"{path.name}: an empty archive")
    return top


def _why(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:200]


def read_all(reader: BinaryIO, sink: Callable[[bytes], None]) -> int:
    n = 0
    while chunk := reader.read(CHUNK):
        sink(chunk)
        n += len(chunk)
    return n


def writer_into(folder: Path) -> Callable[[str, tarfile.TarInfo, BinaryIO], None]:
    """An `on_file` that writes each regular file under `folder` (created exclusively, no links
    followed, mode 0644)."""
    folder = Path(folder)
    base = os.path.realpath(folder)

    def write(name: str, member: tarfile.TarInfo, reader: BinaryIO) -> None:
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if not os.path.realpath(target.parent).startswith(base + os.sep) and \
                os.path.realpath(target.parent) != base:
            raise ArchiveError(f"member {name!r} would be written outside the extraction folder")
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "wb") as f:
            got = read_all(reader, f.write)
        if got != member.size:
            raise ArchiveError(f"member {name!r}: {got} bytes where its header says {member.size}")
    return write
