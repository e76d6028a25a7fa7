"""The store: one folder per stage key, immutable once complete; and the runs.

Keys are content keys. A stage's key is the sha256 of its component, the component's identity,
its canonical settings (secrets removed) and, for each input, the *digest of that input's
content*: for a stage, the sha256 of its outputs' hashes and of every sample's status and
reason (stage.json); for a source folder of the repository, the hash of its files. So any
change upstream (a repaired sample, a rebuilt image, an edited script) changes exactly the keys
that depend on it, and nothing stale is ever reused.

Stages are locked by key (an advisory file lock in store/locks/): a second run that needs a
stage another run is computing waits for it, then reuses it. Run ids carry random bits and their
folders are created exclusively, so two runs never share one.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets as _random
import time
from pathlib import Path
from typing import Callable, Iterator

from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.hashing import sha256_json
from duplexeval_common.jsonio import atomic_write_json, atomic_write_text, read_json
from duplexeval_common.samples import STAGE_RECORD

from .paths import runs_dir, store_dir


@contextlib.contextmanager
def _writing(what: str) -> Iterator[None]:
    """An OSError (a read-only home, a full disk) as one line naming what was being written."""
    try:
        yield
    except OSError as exc:
        raise DuplexEvalError(f"cannot write {what}: {exc.strerror or exc}") from None


def mark_interrupted(path: str, reason: str) -> bool:
    """Rewrite a run.json that still says `running` as `interrupted` with `reason` (the watchdog
    calls this once a killed orchestrator's stages are stopped; `Store.settle` for a run whose
    orchestrator is gone). True when it was rewritten."""
    try:
        rec = read_json(Path(path))
    except (OSError, ValueError):
        return False
    if not isinstance(rec, dict) or rec.get("status") != "running":
        return False
    rec.update(status="interrupted", reason=reason)
    try:
        atomic_write_json(Path(path), rec)
    except OSError:
        return False
    return True


def stage_key(component: str, identity: str, config: dict, input_digests: list[str],
              numeric: dict | None = None) -> str:
    """numeric: the numeric environment (OPENBLAS_*, OMP_*, ...), which can change a number."""
    return sha256_json({"component": component, "identity": identity, "config": config,
                        "inputs": input_digests, "numeric": numeric or {}})


def content_digest(record: dict) -> str:
    """What a stage's outputs are: each output file's sha256 and each sample's status and reason."""
    samples = {k: {"status": v.get("status"), "reason": v.get("reason", "")}
               for k, v in sorted(record.get("samples", {}).items())}
    return "stage:sha256:" + sha256_json({"outputs": record.get("outputs", {}), "samples": samples})


def not_ok(record: dict) -> dict[str, str]:
    """{sample: reason} of the samples a stage did not complete (failed or skipped)."""
    return {k: f"{v['status']}: {v.get('reason', '')}" for k, v in sorted(record.get("samples", {}).items())
            if v.get("status") != "ok"}


class Store:
    def __init__(self, root: Path | None = None):
        self.root = store_dir(root)
        self.runs = runs_dir(root)
        self._verified: dict[str, tuple] = {}  # key -> the file stats verified in this process

    # ---- stages ------------------------------------------------------------------------------

    def stage_dir(self, key: str) -> Path:
        return self.root / key

    def config_path(self, key: str) -> Path:
        return self.root / "configs" / f"{key}.json"

    def write_config(self, key: str, config: dict) -> Path:
        path = self.config_path(key)
        with _writing(str(path)):
            atomic_write_json(path, config)
        return path

    def record(self, key: str) -> dict | None:
        rec = self.stage_dir(key) / STAGE_RECORD
        if not rec.is_file():
            return None
        try:
            return read_json(rec)
        except ValueError:
            return None

    def complete(self, key: str, upstream_not_ok: set[str] | None = None) -> dict | None:
        """The stage record when the stage is complete for this run, else None.

        Complete means: stage.json exists, no sample failed or asks to be made again (`retry`: a
        realtime sample whose pacing drifted), and every sample it skipped is one
        that an input stage did not complete (`upstream_not_ok`): a skip whose upstream reason
        has gone (a repair) makes the stage incomplete.
        """
        record = self.record(key)
        if record is None:
            return None
        samples = record.get("samples", {})
        if any(s.get("status") == "failed" or s.get("retry") for s in samples.values()):
            return None
        if not self._intact(key, record):
            return None
        if upstream_not_ok is not None:
            skipped = {k for k, s in samples.items() if s.get("status") == "skipped"}
            if not skipped <= upstream_not_ok:
                return None
        return record

    def _intact(self, key: str, record: dict) -> bool:
        """Every output stage.json lists still hashes the same, and every sample it calls ok has a
        seal among them: a stage edited or damaged by hand is run again, never reused."""
        from duplexeval_common.hashing import sha256_file
        d = self.stage_dir(key)
        outputs = record.get("outputs", {})
        try:  # hashed once per run (the plan check, then the run), unless a file changed since
            stats = tuple((rel, (d / rel).lstat().st_size, (d / rel).lstat().st_mtime_ns)
                          for rel in [STAGE_RECORD, *sorted(outputs)])
        except OSError:
            return False
        if self._verified.get(key) == stats:
            return True
        for rel, digest in outputs.items():
            p = d / rel
            if not p.is_file() or p.is_symlink() or sha256_file(p) != digest:
                return False
        for sample, status in record.get("samples", {}).items():
            if status.get("status") == "ok" and f"samples/{sample}/_done.json" not in outputs:
                return False
        self._verified[key] = stats
        return True

    def digest(self, key: str) -> str:
        record = self.record(key)
        if record is None:
            raise DuplexEvalError(f"stage {key[:12]} has no stage.json in {self.root}")
        return content_digest(record)

    @contextlib.contextmanager
    def lock(self, key: str, waiting: Callable[[], None] | None = None, shared: bool = False) -> Iterator[int]:
        """Hold the lock of one stage key; `waiting()` is called once if another run holds it.
        Yields the locked descriptor: the runtime passes it to the stage's processes (and the
        watchdog holds it while the stage runs), so the lock stays held while anything that runs
        the stage lives, even when the orchestrator is killed; leaving the block releases it.

        Exclusive to compute or repair a stage; shared to read a complete stage as an input, so
        that no run repairs a stage in place while another run's stage reads it. Locks are taken
        inputs first, then the stage itself, following the plan's order (no cycles)."""
        path = self.root / "locks" / f"{key}.lock"
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
        try:
            try:
                fcntl.flock(fd, mode | fcntl.LOCK_NB)
            except BlockingIOError:
                if waiting:
                    waiting()
                fcntl.flock(fd, mode)
            yield fd
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    # ---- runs --------------------------------------------------------------------------------

    def new_run(self) -> str:
        """A fresh run id whose folder this call created (never shared with another run)."""
        home = f"(the home {self.runs.parent} must be writable: --home or DUPLEXEVAL_HOME)"
        try:
            self.runs.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise DuplexEvalError(f"cannot create {self.runs}: {exc.strerror or exc} {home}") from None
        for _ in range(100):
            run_id = time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + _random.token_hex(4)
            try:
                (self.runs / run_id).mkdir()
                return run_id
            except FileExistsError:
                continue
            except OSError as exc:
                raise DuplexEvalError(f"cannot create a run folder in {self.runs}: {exc.strerror or exc} "
                                      f"{home}") from None
        raise DuplexEvalError(f"could not create a new run folder in {self.runs}")

    def write_packages(self, run_id: str, lines: list[str]) -> Path:
        """runs/<run_id>/packages.txt, one `name==version` a line."""
        path = self.runs / run_id / "packages.txt"
        with _writing(str(path)):
            atomic_write_text(path, "".join(f"{line}\n" for line in lines))
        return path

    def run_dir(self, run_id: str) -> Path:
        return self.runs / run_id

    def write_run(self, run_id: str, record: dict, latest: bool = True) -> Path:
        path = self.runs / run_id / "run.json"
        with _writing(str(path)):
            atomic_write_json(path, record)
            if latest:
                link = self.runs / "latest"
                tmp = self.runs / f".latest.{os.getpid()}.{_random.token_hex(2)}"
                os.symlink(run_id, tmp)
                os.replace(tmp, link)
        return path

    def link_in_run(self, run_id: str, name: str, target: Path) -> Path:
        """runs/<run_id>/<name> -> target as a relative link (replaced atomically), so the run
        folder still opens when the home folder is moved as a whole."""
        link = self.runs / run_id / name
        rel = os.path.relpath(os.path.realpath(target), os.path.realpath(link.parent))
        tmp = link.parent / f".{name}.{os.getpid()}.{_random.token_hex(2)}"
        os.symlink(rel, tmp)
        try:
            if link.is_dir() and not link.is_symlink():
                raise DuplexEvalError(f"{link} is a folder, not a link: not replaced")
            os.replace(tmp, link)
        except BaseException:
            os.unlink(tmp)
            raise
        return link

    def resolve_run(self, ref: str) -> Path:
        if not ref or "/" in ref or ref.startswith("."):
            raise DuplexEvalError(f"no run {ref!r} in {self.runs} (see `duplexeval runs`)")
        path = self.runs / ref
        if not (path / "run.json").is_file():
            raise DuplexEvalError(f"no run {ref!r} in {self.runs} (see `duplexeval runs`)")
        return path.resolve()

    def read_run(self, ref: str) -> dict:
        """A run's record, or a one-line error naming the file."""
        path = self.resolve_run(ref) / "run.json"
        try:
            rec = read_json(path)
        except (OSError, ValueError) as exc:
            raise DuplexEvalError(f"{path}: not readable JSON ({exc})") from None
        problem = _run_problem(rec)
        if problem:
            raise DuplexEvalError(f"{path}: {problem}")
        return self.settle(rec, path)

    @staticmethod
    def settle(rec: dict, path: Path) -> dict:
        """A run that says `running` but whose orchestrator has certainly ended (killed with
        kill -9 along with its watchdog, or the machine went down) is interrupted: rewritten so
        (provenance.orchestrator_gone: same host, and its pid is gone or now another process's)."""
        from .provenance import orchestrator_gone
        if rec.get("status") == "running" and orchestrator_gone((rec.get("environment") or {}).get("orchestrator")):
            pid = rec["environment"]["orchestrator"].get("pid")
            if mark_interrupted(str(path), f"its orchestrator (pid {pid}) ended without finishing the run "
                                           "(killed?); the stages it completed stay in the store"):
                try:
                    return read_json(path)
                except (OSError, ValueError):
                    pass
        return rec

    def list_runs(self) -> list[dict]:
        """Every run's record; one that cannot be read is {"run_id", "unreadable": why}."""
        out = []
        for p in sorted(self.runs.glob("*/run.json")):
            if p.parent.is_symlink():
                continue
            try:
                rec = read_json(p)
                problem = _run_problem(rec)
            except (OSError, ValueError) as exc:
                rec, problem = None, f"not JSON ({exc})"
            out.append(self.settle(rec, p) if not problem else {"run_id": p.parent.name, "unreadable": problem})
        return out


def _run_problem(rec) -> str | None:
    from duplexeval_common import schemas
    if not isinstance(rec, dict):
        return "not a run record (expected a JSON object)"
    if rec.get("status") == "running":
        return None if isinstance(rec.get("run_id"), str) else "not a run record"
    return schemas.problem("run", rec)
