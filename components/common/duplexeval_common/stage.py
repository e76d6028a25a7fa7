"""The stage contract: the per-sample loop every component runs.

`<component> run --input DIR... --output DIR --config FILE` maps each sample
to files in `samples/<subset>/<id>/` of the output folder. A sample's files
are written into a hidden partial folder that is renamed into place only when
the sample is complete, so a killed stage leaves nothing half-written and a
rerun completes only what is missing. `stage.json` records what produced the
outputs and what they hash to.

Exit codes have one meaning each: 0 every sample ok (samples skipped because an upstream stage
failed them are not this stage's failures), 1 some samples failed but the stage completed and
wrote stage.json, 2 an error that stopped the stage (bad settings, a missing model), 3 a crash.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from . import schemas, wavio
from .errors import DuplexEvalError, SampleError
from .hashing import sha256_file
from .jsonio import atomic_write_bytes, atomic_write_json, atomic_write_text, dumps, jsonl_text, read_json
from .progress import Progress, log
from .samples import DONE, SAMPLES, STAGE_RECORD, Inputs, Sample, inside
from .secrets import redact

EXIT_OK = 0
EXIT_SAMPLES_FAILED = 1
EXIT_STOPPED = 2
EXIT_CRASH = 3

# Variables that change numeric kernels or thread counts, and so results: recorded in every
# stage record, and passed into containers by the docker runtime.
NUMERIC_ENV_PREFIXES = ("OPENBLAS_", "OMP_", "MKL_", "GOTO_", "BLIS_", "VECLIB_", "NUMEXPR_",
                        "KMP_", "ORT_", "CT2_", "TORCH_NUM_", "DNNL_", "ONEDNN_")


def numeric_environment(environ: dict | None = None) -> dict[str, str]:
    """The variables of the environment that can change a number, sorted by name."""
    environ = os.environ if environ is None else environ
    return {k: environ[k] for k in sorted(environ) if k.startswith(NUMERIC_ENV_PREFIXES)}


# a header line as the email parser's feedparser tells one: a name of printable characters but the
# colon, then a colon ("From " lines aside); or a continuation line
_HEADER_LINE = re.compile(r"^([\041-\071\073-\176]*:|[\t ])")


def _header_fields(text: str, wanted: tuple[str, ...]) -> dict[str, str] | None:
    """The first value of each `wanted` header (lower-case names) of a core metadata file, read as
    the email parser reads it (value after the colon, leading blanks dropped), from its header
    lines alone; None where a wanted header is missing or continues on the next line, for the
    caller to parse the whole file instead."""
    found: dict[str, str] = {}
    last = None
    for line in text.splitlines():
        if not line.strip() or not _HEADER_LINE.match(line):
            break  # the body starts here, for the email parser too
        if line[0] in " \t":
            if last in wanted:
                return None
            continue
        name, colon, value = line.partition(":")
        last = name.lower() if colon else None
        if colon and last in wanted and last not in found:
            found[last] = value.lstrip(" \t")
    return found if all(w in found for w in wanted) else None


def _name_and_version(dist) -> tuple[str, str]:
    """(Name, Version) of one distribution, as its `metadata["Name"]` and `version` give them,
    from the header lines of its METADATA (or PKG-INFO): the email parser that `metadata` runs
    reads the whole file, long description included, twice (once for the name, once for the
    version), which made this a second of every stage's start on a loaded machine."""
    text = dist.read_text("METADATA") or dist.read_text("PKG-INFO")
    fields = _header_fields(text, ("name", "version")) if text else None
    if fields is None:
        return (dist.metadata["Name"] or ""), dist.version
    return fields["name"], fields["version"]


def installed_packages() -> dict[str, str]:
    """{distribution: version} of everything importable here (where a name is installed twice on
    the path, the later one's version, as before)."""
    import importlib.metadata as md
    out: dict[str, str] = {}
    for d in md.distributions():
        name, version = _name_and_version(d)
        name = name.lower()
        if name:
            out[name] = version
    return dict(sorted(out.items()))


def environment_record() -> dict:
    from .hashing import sha256_json
    packages = installed_packages()
    return {"python": platform.python_version(), "platform": platform.platform(),
            "machine": platform.machine(), "cpu_count": os.cpu_count(),
            "numeric": numeric_environment(),
            "packages_sha256": sha256_json(packages), "packages": packages}


@dataclass
class SampleContext:
    """What `process` gets for one sample: its inputs and a place to write."""

    sample: Sample
    inputs: Inputs
    config: dict
    work: Path
    written: list[str] = field(default_factory=list)
    # Why this sample, though written, should be made again by the next run (e.g. a realtime
    # session whose pacing drifted): its seal says so, so a rerun redoes it and no other.
    retry: str | None = None

    @property
    def id(self) -> str:
        return self.sample.key

    def input_path(self, name: str) -> Path:
        p = self.inputs.find(self.sample, name)
        if p is None:
            raise SampleError(self.id, f"{name} is missing")
        return p

    def has_input(self, name: str) -> bool:
        return self.inputs.find(self.sample, name) is not None

    def read_wav(self, name: str, **kw) -> tuple[np.ndarray, int]:
        return wavio.read_wav(self.input_path(name), self.id, **kw)

    def read_json(self, name: str, schema: str | None = None) -> Any:
        path = self.input_path(name)
        try:
            obj = read_json(path)
        except RecursionError:
            raise SampleError(self.id, f"{name} is nested too deeply to be read") from None
        except (ValueError, UnicodeDecodeError) as exc:
            raise SampleError(self.id, f"{name} is not valid JSON ({exc})") from None
        return schemas.validate(schema, obj, self.id) if schema else obj

    def _target(self, name: str) -> Path:
        self.written.append(name)
        return self.work / name

    def write_json(self, name: str, obj: Any, schema: str | None = None) -> None:
        if schema:
            schemas.validate(schema, obj, self.id)
        atomic_write_text(self._target(name), dumps(obj))

    def write_jsonl(self, name: str, rows: list, schema: str | None = None) -> None:
        for row in rows if schema else ():
            schemas.validate(schema, row, self.id)
        atomic_write_text(self._target(name), jsonl_text(rows))

    def write_wav(self, name: str, audio: np.ndarray, sr: int) -> None:
        wavio.write_wav(self._target(name), audio, sr)

    def write_bytes(self, name: str, data: bytes) -> None:
        """A file whose bytes the caller made (e.g. a WAV in its source's own sample format)."""
        atomic_write_bytes(self._target(name), data)

    def copy_input(self, name: str) -> None:
        shutil.copyfile(self.input_path(name), self._target(name))


@dataclass
class StageContext:
    """What `finalize` gets: the whole stage, after every sample ran."""

    inputs: Inputs
    config: dict
    output: Path
    statuses: dict[str, dict]
    # Numbers about this invocation (API calls made, cache hits): recorded in stage.json, which is
    # not an output, so the outputs stay the same bytes whether they were computed or cached.
    invocation: dict = field(default_factory=dict)

    def ok_samples(self) -> list[Sample]:
        return [s for s in self.inputs.samples() if self.statuses.get(s.key, {}).get("status") == "ok"]

    def write_json(self, name: str, obj: Any, schema: str | None = None) -> None:
        if schema:
            schemas.validate(schema, obj, name)
        atomic_write_json(self.output / name, obj)


Process = Callable[[SampleContext], None]
Finalize = Callable[[StageContext], None]


@dataclass
class Stage:
    component: str
    version: str
    process: Process
    finalize: Finalize | None = None
    select: Callable[[Inputs, dict], list[Sample]] | None = None
    setup: Callable[[dict], None] | None = None
    check: Callable[[dict], None] | None = None  # validate settings without loading anything
    # samples processed at once (threads), e.g. network sessions of a runner; or a function of the
    # number of samples selected (a stage whose workers cost a start-up each)
    workers: int | Callable[[int], int] = 1

    def run(self, input_dirs: list[Path], output: Path, config: dict,
            allow_failures: bool = False, shard: tuple[int, int] = (0, 1)) -> int:
        t0 = time.time()
        inputs = Inputs(input_dirs)
        output = Path(output)
        if output.exists() and not output.is_dir():
            raise DuplexEvalError(f"output {output} exists and is not a folder")
        for d in inputs.dirs:
            if inside(d, output):
                raise DuplexEvalError(f"output {output} lies inside the input {d}")
        samples = (self.select or (lambda i, c: i.samples()))(inputs, config)
        if len(set(samples)) != len(samples):
            raise DuplexEvalError(f"{self.component}: the same sample was selected twice")
        _check_output_tree(output)
        (output / SAMPLES).mkdir(parents=True, exist_ok=True)
        samples = [s for n, s in enumerate(samples) if n % shard[1] == shard[0]]
        _remove_partials(output, samples)  # only this shard's: a sibling shard may be writing its own
        self._ready = False
        self._setup_lock = threading.Lock()
        statuses = self._run_samples(samples, inputs, config, output)
        notes: dict = {}
        if shard[1] == 1 and self.finalize:
            self._setup_once(config)
            sctx = StageContext(inputs, config, output, statuses)
            self.finalize(sctx)
            notes = sctx.invocation
        failed = [k for k, s in statuses.items() if s["status"] == "failed"]
        self._write_record(output, inputs, config, statuses, t0, shard, notes)
        if failed:
            log(f"[{self.component}] {len(failed)} of {len(statuses)} samples failed")
        return EXIT_SAMPLES_FAILED if failed and not allow_failures else EXIT_OK

    def _setup_once(self, config: dict) -> None:
        """Load models when first needed: a resumed stage whose samples all verify loads them
        only for its finalize step, if it has one."""
        with self._setup_lock:
            if self.setup and not self._ready:
                self.setup(config)
            self._ready = True

    def _run_samples(self, samples, inputs, config, output) -> dict[str, dict]:
        statuses: dict[str, dict] = {}
        bar = Progress(self.component, len(samples))
        done = threading.Lock()

        def one(sample) -> None:
            status = self._run_one(sample, inputs, config, output)
            with done:
                statuses[sample.key] = status
                note = "" if status["status"] == "ok" and not status.get("cached") else \
                    ("cached" if status.get("cached") else f"{status['status']}: {status.get('reason', '')}")
                bar.step(sample.key, note)
        workers = self.workers(len(samples)) if callable(self.workers) else self.workers
        try:
            if workers <= 1 or len(samples) <= 1:
                for sample in samples:
                    one(sample)
            else:
                with ThreadPoolExecutor(max_workers=workers, thread_name_prefix=self.component) as pool:
                    for fut in [pool.submit(one, s) for s in samples]:
                        fut.result()  # a stage-stopping error (a bad setting) surfaces here
        finally:
            bar.close()
        return {s.key: statuses[s.key] for s in samples if s.key in statuses}

    def _run_one(self, sample: Sample, inputs: Inputs, config: dict, output: Path) -> dict:
        final = output / SAMPLES / sample.subset / sample.id
        if not inside(output, final.parent):
            raise DuplexEvalError(f"{sample.key}: samples/{sample.subset} of the output is a link "
                                  f"leaving {output}")
        if _verified(final):
            return {"status": "ok", "cached": True, "seconds": 0.0}
        upstream = inputs.upstream_failure(sample)
        if upstream:
            _rmtree(final)
            return {"status": "skipped", "reason": upstream, "seconds": 0.0}
        self._setup_once(config)  # outside the per-sample try: a bad setting stops the stage
        work = final.parent / f".{sample.id}.partial"
        _rmtree(work)
        work.mkdir(parents=True)
        t = time.monotonic()
        try:
            ctx = SampleContext(sample, inputs, config, work)
            self.process(ctx)
            _seal(work, ctx.written, ctx.retry)
            _rmtree(final)
            os.replace(work, final)
            return {"status": "ok", "seconds": round(time.monotonic() - t, 3),
                    **({"retry": ctx.retry} if ctx.retry else {})}
        except SampleError as exc:
            reason = exc.problem
        except DuplexEvalError as exc:
            reason = str(exc)
        except Exception as exc:  # keep the other samples going; keep the trace in the log
            log(traceback.format_exc().rstrip())
            reason = f"internal error: {type(exc).__name__}: {exc}"
        _rmtree(work)
        log(f"error: {sample.key}: {reason}")
        return {"status": "failed", "reason": reason, "seconds": round(time.monotonic() - t, 3)}

    def _write_record(self, output, inputs, config, statuses, t0, shard, notes=None) -> None:
        outputs = {p.relative_to(output).as_posix(): sha256_file(p)
                   for p in sorted(output.rglob("*"))
                   if p.is_file() and not _is_record(p.name) and ".partial" not in p.as_posix()
                   and not p.name.startswith(".")}
        record = {
            "component": self.component,
            "version": self.version,
            "identity": os.environ.get("DUPLEXEVAL_IDENTITY", "unrecorded (run outside the orchestrator)"),
            "key": os.environ.get("DUPLEXEVAL_STAGE_KEY", ""),
            "invocation": os.environ.get("DUPLEXEVAL_INVOCATION", ""),
            "config": redact(config),
            "inputs": [{"path": str(d), "key": k} for d, k in zip(inputs.dirs, inputs.keys())],
            "outputs": outputs,
            "samples": {k: redact(statuses[k]) for k in sorted(statuses)},  # reasons may quote a URL
            "shard": list(shard),
            "environment": environment_record(),
            "timings": {"started": round(t0, 3), "seconds": round(time.time() - t0, 3), **peak_memory()},
        }
        if notes:
            record["invocation_notes"] = redact(notes)
        name = STAGE_RECORD if shard[1] == 1 else f"stage.shard-{shard[0]}-of-{shard[1]}.json"
        schemas.validate("stage", record, name)
        atomic_write_json(output / name, record)


def peak_memory() -> dict:
    """The peak resident memory so far, in MiB, of this program (Linux: VmHWM, since it was started) and
    of the largest of its ended child processes (worker pools, an engine's subprocess; getrusage, which
    counts what a forked child shared with its parent: an upper bound); the stage record's timings."""
    try:
        import resource
    except ImportError:  # not a POSIX system
        return {}
    kib = lambda who: resource.getrusage(who).ru_maxrss  # noqa: E731  (Linux: KiB)
    own = kib(resource.RUSAGE_SELF)
    try:  # since this program started: ru_maxrss keeps the peak of the process it was forked from
        with open("/proc/self/status") as f:
            own = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    except (OSError, StopIteration, ValueError):
        pass
    return {"peak_rss_mib": round(own / 1024, 1),
            "peak_rss_children_mib": round(kib(resource.RUSAGE_CHILDREN) / 1024, 1)}


def _is_record(name: str) -> bool:
    """stage.json and its per-shard siblings: records about the outputs, not outputs."""
    return name == STAGE_RECORD or (name.startswith("stage.") and name.endswith(".json"))


def _seal(work: Path, written: list[str], retry: str | None = None) -> None:
    files = {n: sha256_file(work / n) for n in sorted(set(written))}
    atomic_write_json(work / DONE, {"files": files, **({"retry": retry} if retry else {})})


def _verified(final: Path) -> bool:
    """A sample is done when its seal exists and every sealed file still hashes the same."""
    seal = final / DONE
    if not seal.is_file():
        return False
    try:
        done = read_json(seal)
        if done.get("retry"):
            return False  # written, but to be made again (SampleContext.retry)
        files = done["files"]
        return all((final / n).is_file() and sha256_file(final / n) == h for n, h in files.items())
    except (ValueError, KeyError):
        return False


def _check_output_tree(output: Path) -> None:
    """Refuse an output whose samples/, samples/<subset>/ or sample folders are links: the stage
    writes and removes only inside its output folder, and never through a link."""
    samples = output / SAMPLES
    if samples.is_symlink():
        raise DuplexEvalError(f"{samples} is a link leaving {output}: refusing to write through it")
    if not samples.is_dir():
        return
    for sub in samples.iterdir():
        if sub.is_symlink():
            raise DuplexEvalError(f"{SAMPLES}/{sub.name} of the output is a link leaving {output}: "
                                  "refusing to write through it")
        if sub.is_dir():
            for d in sub.iterdir():
                if d.is_symlink():
                    raise DuplexEvalError(f"{SAMPLES}/{sub.name}/{d.name} of the output is a link leaving "
                                          f"{output}: refusing to write through it")


def _remove_partials(output: Path, samples: list[Sample]) -> None:
    """Leftovers of a killed earlier run of these samples (never another shard's work)."""
    for s in samples:
        p = output / SAMPLES / s.subset / f".{s.id}.partial"
        if p.exists() or p.is_symlink():
            _rmtree(p)


def _rmtree(p: Path) -> None:
    if p.is_symlink():
        p.unlink()
    elif p.is_dir():
        shutil.rmtree(p)
