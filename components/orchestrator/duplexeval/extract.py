"""Reading a run archive safely: one streaming pass over its members, every header checked.

An archive is a .tar.gz or .tar.zst file (told apart by its first bytes, not by its name) holding
regular files under one top folder. `walk` decompresses it as a stream and calls back for each
regular file with its data; before any callback it refuses, with one line naming the member and
the reason:

- an absolute name, a `..` component, an empty or `.` component, a name outside the top folder;
- a symlink or hardlink (the writer never writes links; one whose target leaves the root says so);
- a character or block device, a FIFO, a sparse file or any other non-regular type;
- a name given twice, or a name that is both a file and a folder;
- an archive that expands past `max_bytes`: the bytes actually decompressed are counted (tar
  headers and padding included) and the walk stops as soon as the count passes the limit; the
  sizes the headers declare are summed too, so a lying header is caught before its data is read.

A stream that ends before the archive's end-of-archive block (a file cut short) or whose headers
stop making sense is "truncated or corrupt". Member data is read in chunks into one reused buffer
(`Data.chunks`), so a member's bytes are decompressed once and copied no further than the callback
takes them. `writer_into` writes members under a folder; the caller removes that folder when the
walk refuses anything (archive.py extracts into a fresh temporary folder, one pass).
"""

from __future__ import annotations

import errno
import gzip
import os
import posixpath
import re
import tarfile
import zlib
from pathlib import Path
from typing import BinaryIO, Callable, Iterator

from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.samples import name_problem

DEFAULT_MAX_BYTES = 32 * 1024 ** 3
GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
CHUNK = 1 << 20
PULL = 1 << 16                  # the least a header read asks of the decompressor
MAX_HEADER = 1 << 23            # a pax or GNU long-name header longer than this is refused
_ZERO_BLOCK = bytes(tarfile.BLOCKSIZE)
_CONTROL = re.compile("[\x00-\x1f]")


class ArchiveError(DuplexEvalError):
    """An archive that cannot be read, is unsafe to extract, or cannot be written: one line."""


class _Limit(Exception):
    pass


class _Truncated(Exception):
    pass


class _HugeHeader(Exception):
    pass


class _Source:
    """The decompressed stream as the file object TarFile reads: read, tell and forward seeks.

    Every byte is counted: handing out more than `limit` raises _Limit, and the decompressor is
    never asked for more than `limit` + 1 bytes. Small reads (headers) are served from a buffer; member data goes through
    `view`, which decompresses straight into one reused buffer. `short` is set once the stream
    has ended; `zero` says whether the last header block read was all zeros (the end-of-archive
    block), so an archive that ends early or on a header TarFile cannot parse is told apart from
    a complete one."""

    def __init__(self, stream, limit: int):
        self.stream, self.limit = stream, limit
        self.count = 0               # bytes taken from the decompressor
        self.pos = 0                 # bytes handed out
        self.buf, self.off = b"", 0  # bytes taken but not yet handed out: buf[off:]
        self.scratch = memoryview(bytearray(CHUNK))
        self.short = False
        self.zero = False

    def _room(self, n: int) -> int:
        if self.count > self.limit:
            raise _Limit()
        return min(n, self.limit + 1 - self.count)

    def _pull(self, n: int) -> bytes:
        data = self.stream.read(self._room(n))
        self.count += len(data)
        if not data:
            self.short = True
        return data

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:
            raise ValueError("read to the end is not supported")
        if n > MAX_HEADER:
            raise _HugeHeader()
        have = len(self.buf) - self.off
        if have >= n:
            out = self.buf[self.off:self.off + n]
            self.off += n
        else:
            parts = [self.buf[self.off:]] if have else []
            need = n - have
            while need > 0:
                data = self._pull(max(need, PULL))
                if not data:
                    break
                parts.append(data)
                need -= len(data)
            self.buf = b"".join(parts)
            out = self.buf[:n]
            self.off = len(out)
        self.pos += len(out)
        if self.pos > self.limit:
            raise _Limit()
        if n == tarfile.BLOCKSIZE:
            self.zero = out == _ZERO_BLOCK
        return out

    def view(self, n: int) -> memoryview:
        """Up to n bytes (at least one unless the stream ended), valid until the next call."""
        have = len(self.buf) - self.off
        if have:
            k = min(n, have)
            out = memoryview(self.buf)[self.off:self.off + k]
            self.off += k
        else:
            k = self.stream.readinto(self.scratch[:self._room(min(n, CHUNK))])
            self.count += k
            if not k:
                self.short = True
            out = self.scratch[:k]
        self.pos += k
        if self.pos > self.limit:
            raise _Limit()
        return out

    def tell(self) -> int:
        return self.pos

    def seek(self, pos: int, whence: int = 0) -> int:
        if whence != 0 or pos < self.pos:
            raise tarfile.ReadError("the archive stream only reads forward")
        while self.pos < pos:
            if not len(self.view(pos - self.pos)):
                break
        return self.pos

    def drain(self) -> None:
        """Read the rest of the stream (the padding after the end-of-archive block), so the
        decompressor checks what it checks at its end (gzip CRC, zstd content checksum)."""
        self.buf, self.off = b"", 0
        while len(self.view(CHUNK)):
            pass


class Data:
    """One member's data as `walk` hands it to `on_file`: read in full, or not at all."""

    def __init__(self, src: _Source, size: int):
        self._src, self.left = src, size

    def chunks(self) -> Iterator[memoryview]:
        """The data in chunks of at most CHUNK bytes; each is valid until the next one."""
        while self.left:
            mv = self._src.view(min(CHUNK, self.left))
            if not len(mv):
                raise _Truncated()
            self.left -= len(mv)
            yield mv

    def read(self, n: int = -1) -> bytes:
        """Up to n bytes (all that is left when n < 0) as bytes; b"" at the end."""
        want = self.left if n is None or n < 0 else min(n, self.left)
        parts = []
        while want:
            mv = self._src.view(min(CHUNK, want))
            if not len(mv):
                raise _Truncated()
            parts.append(bytes(mv))
            want -= len(mv)
            self.left -= len(mv)
        return b"".join(parts)


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
    if _CONTROL.search(name):
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


def walk(path: Path, on_file: Callable[[str, tarfile.TarInfo, Data], None] | None = None,
         max_bytes: int | None = None) -> str:
    """One pass over the archive; `on_file(name, member, data)` for each regular file (`data`, a
    Data, read in full or not at all). Returns the top folder's name. Raises ArchiveError."""
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
    src: _Source | None = None
    truncated = ArchiveError(f"{path.name}: not a readable archive (truncated or corrupt: its data ends before "
                             "the archive's end)")

    def refuse(name: str, why: str) -> ArchiveError:
        return ArchiveError(f"{path.name}: refused member {name!r}: {why}; nothing extracted")

    try:
        with open(path, "rb") as raw, _decompressed(raw, k) as stream:
            src = _Source(stream, limit)
            with tarfile.TarFile(fileobj=src, mode="r") as tar:
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
                        if src.tell() != member.offset_data:
                            src.seek(member.offset_data)
                        on_file(name, member, Data(src, member.size))
                # TarFile ends quietly on a header it cannot parse or on a stream that stops:
                # a complete archive ends with a whole zero block
                if src.short or not src.zero:
                    raise truncated
                src.drain()
    except _Limit:
        raise ArchiveError(f"{path.name}: refused member {current!r}: the archive expands past the size "
                           f"limit of {limit} bytes; nothing extracted") from None
    except _HugeHeader:
        raise ArchiveError(f"{path.name}: refused member after {current!r}: a tar header of more than "
                           f"{MAX_HEADER} bytes; nothing extracted") from None
    except (_Truncated, EOFError):
        raise truncated from None
    except ArchiveError:
        raise
    except (tarfile.TarError, OSError, zlib.error, ValueError) as exc:
        if src is not None and src.short:
            raise truncated from None
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


def read_all(reader, sink: Callable[[bytes], None]) -> int:
    """Feed every chunk of a member's data (a Data, or any reader with read(n)) to `sink`."""
    n = 0
    if isinstance(reader, Data):
        for mv in reader.chunks():
            sink(mv)
            n += len(mv)
        return n
    while chunk := reader.read(CHUNK):
        sink(chunk)
        n += len(chunk)
    return n


class NoRoom(Exception):
    """The members would pass the room given to `writer_into` (or filled the device)."""


def writer_into(folder: Path, room: int | None = None,
                tap: Callable[[str], Callable[[memoryview], None] | None] | None = None
                ) -> Callable[[str, tarfile.TarInfo, Data], None]:
    """An `on_file` that writes each regular file under `folder` (created exclusively, no links
    followed, mode 0644). `room`: the most bytes to write there; a member that would pass it, or
    a full device, raises NoRoom (the caller extracts elsewhere). `tap(name)`: a function given
    every chunk of that member as it is written (its hash), or None."""
    folder = Path(folder)
    base = os.path.realpath(folder)
    made: set[str] = set()
    used = [0]

    def directory(rel: str) -> None:
        if rel in made or not rel:
            return
        directory(posixpath.dirname(rel))
        d = os.path.join(folder, rel)
        try:
            os.mkdir(d, 0o755)
        except FileExistsError:
            pass
        real = os.path.realpath(d)
        if not real.startswith(base + os.sep):
            raise ArchiveError(f"member folder {rel!r} would be written outside the extraction folder")
        made.add(rel)

    def write(name: str, member: tarfile.TarInfo, data: Data) -> None:
        if room is not None and used[0] + member.size > room:
            raise NoRoom()
        used[0] += member.size
        feed = tap(name) if tap is not None else None
        try:
            directory(posixpath.dirname(name))
            fd = os.open(os.path.join(folder, name),
                         os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
            got = 0
            try:
                for mv in data.chunks():
                    if feed is not None:
                        feed(mv)
                    done = 0
                    while done < len(mv):
                        done += os.write(fd, mv[done:])
                    got += len(mv)
            finally:
                os.close(fd)
        except OSError as exc:
            if room is not None and exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise NoRoom() from None
            raise ArchiveError(f"cannot extract member {name!r} into {folder}: "
                               f"{exc.strerror or exc}") from None
        if got != member.size:
            raise ArchiveError(f"member {name!r}: {got} bytes where its header says {member.size}")
    return write
