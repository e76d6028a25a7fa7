"""Run a plan: check it whole, reuse complete stages, run the rest in order, each under its lock.

Before anything runs, every stage that will run has its settings checked by its own component
(`<component> check`: names, arguments, installed packages; no model is loaded) and every
endpoint of a networked stage is tried, so a typo in `--judge` or an unreachable server stops the
run at once with one line instead of after three stages.

A stage's outcome is classified from its exit code and from a stage.json written by *this*
invocation (its `invocation` field): 0 ok, 1 partial (some samples failed; the stage completed),
2 stopped (bad settings, missing model), 3 crashed; a stage killed for its timeout or memory
limit is failed with that reason. An old stage.json left by an earlier run never turns a crash
into a partial result.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.hashing import sha256_tree
from duplexeval_common.jsonio import atomic_write_json, read_json
from duplexeval_common.progress import log
from duplexeval_common.secrets import expand, extract, redact, redact_url
from duplexeval_common.watchdog import watchdog
from duplexeval_common.stage import (EXIT_CRASH, EXIT_OK, EXIT_SAMPLES_FAILED, EXIT_STOPPED,
                                     numeric_environment)

from .plan import Source, StageSpec, endpoints, key_config
from .runtime import Call, Limits
from .store import Store, content_digest, not_ok, stage_key

CHECK_LIMITS = Limits(timeout_s=300.0)


@dataclass
class StageResult:
    name: str
    component: str
    key: str
    identity: str
    cached: bool
    status: str                       # ok | partial | failed
    seconds: float
    failed_samples: int
    skipped_samples: int
    config: dict
    inputs: list[str]
    reason: str = ""
    not_ok: dict = field(default_factory=dict)  # sample -> "failed: reason" / "skipped: reason"
    provenance: dict = field(default_factory=dict)

    def record(self) -> dict:
        d = {k: v for k, v in self.__dict__.items() if k != "not_ok"}
        return redact(d)


@dataclass
class _Prepared:
    spec: StageSpec
    config: dict                      # secrets replaced by ${DUPLEXEVAL_SECRET_n} references
    secret_env: dict[str, str]


class Engine:
    def __init__(self, store: Store, runtime, limits: Limits | None = None, run_dir: Path | None = None,
                 cache: Path | None = None):
        self.store, self.runtime = store, runtime
        self.limits = limits or Limits()
        self.run_dir = run_dir
        self.cache = cache
        self._sources: dict[Path, str] = {}
        self._run_token: str | None = None

    # ---- helpers -----------------------------------------------------------------------------

    def _prepare(self, plan: list[StageSpec]) -> list[_Prepared]:
        out = []
        for spec in plan:
            config, env = extract(spec.config)
            out.append(_Prepared(spec, config, env))
        return out

    def identity(self, spec: StageSpec) -> str:
        """The stage's component identity, and the source digest of the benchmark whose hooks it
        runs (its settings name it): editing one benchmark's rules re-runs its stages only."""
        ident = self.runtime.identity(spec.component)
        bench = spec.config.get("benchmark")
        if not bench:
            return ident
        from duplexeval_common.benchmarks import get
        digest = get(bench).digest()
        check = getattr(self.runtime, "check_benchmark", None)  # the docker runtime: the image holds this one
        if check is not None:
            check(spec.component, bench, digest)
        return f"{ident}+benchmark:{bench}:sha256:{digest}"

    def _source_digest(self, src: Source) -> str:
        if src.path not in self._sources:
            self._sources[src.path] = f"source:{src.name}:sha256:{sha256_tree(src.path)}"
        return self._sources[src.path]

    def _inputs(self, spec: StageSpec, done: dict[str, dict]) -> tuple[list[str], list[Path], set[str]] | None:
        """(digests, folders, samples not completed upstream), or None when an input is unknown."""
        digests, dirs, upstream = [], [], set()
        for inp in spec.inputs:
            if isinstance(inp, Source):
                digests.append(self._source_digest(inp))
                dirs.append(inp.path)
            elif inp in done:
                rec = done[inp]
                digests.append(content_digest(rec))
                dirs.append(self.store.stage_dir(rec["key"]))
                upstream |= set(not_ok(rec))
            else:
                return None
        return digests, dirs, upstream

    def _log_file(self, name: str) -> Path | None:
        if self.run_dir is None:
            return None
        (self.run_dir / "logs").mkdir(parents=True, exist_ok=True)
        return self.run_dir / "logs" / f"{name}.log"

    def _complete(self, key: str, upstream: set[str], p: _Prepared, restore: bool) -> dict | None:
        """The stage's record when it is complete *with its config*: store/configs/<key>.json must
        hold settings of this key. A missing (or unreadable, or edited) config is written again
        (`restore`) when this run's settings are exactly those the stage's record says it ran with;
        otherwise the stage is not complete and runs again (its sealed samples are kept)."""
        record = self.store.complete(key, upstream)
        if record is None:
            return None
        try:
            on_disk = read_json(self.store.config_path(key))
        except (OSError, ValueError):
            on_disk = None
        if isinstance(on_disk, dict) and key_config(on_disk) == key_config(p.config):
            return record
        try:
            same = record.get("config") == redact(expand(p.config, p.secret_env))
        except DuplexEvalError:
            same = False
        if not same:
            return None
        if restore:
            self.store.write_config(key, p.config)
            log(f"    {p.spec.name}: store/configs/{key[:12]}....json was missing or changed; written again")
        return record

    # ---- the whole plan, checked first -------------------------------------------------------

    def check(self, plan: list[StageSpec], given: dict[str, dict] | None = None) -> list[str]:
        """Check every stage that will run; return their names. Raises DuplexEvalError.

        given: complete stages the plan's stages read by name ({name: stage record with "key"})."""
        self._watch_run()
        prepared = self._prepare(plan)
        done: dict[str, dict] = dict(given or {})
        to_check: list[_Prepared] = []
        for p in prepared:
            ins = self._inputs(p.spec, done)
            if ins is not None:
                key = stage_key(p.spec.component, self.identity(p.spec), key_config(p.config), ins[0],
                                numeric_environment())
                rec = self._complete(key, ins[2], p, restore=False)
                if rec is not None:
                    done[p.spec.name] = {**rec, "key": key}
                    continue
            to_check.append(p)
        for p in to_check:
            for url in endpoints(p.spec) if p.spec.network else []:
                reachable(url, p.spec.name)
        for p in to_check:
            self._check_stage(p)
        return [p.spec.name for p in to_check]

    def _check_stage(self, p: _Prepared) -> None:
        cfg_dir = (self.run_dir or self.store.root) / "checks"
        cfg_dir.mkdir(parents=True, exist_ok=True)
        cfg = cfg_dir / f"{p.spec.name}.json"
        atomic_write_json(cfg, p.config)
        call = Call(p.spec.component, "check", cfg, secret_env=p.secret_env, pass_env=p.spec.keys,
                    log_file=self._log_file(f"check-{p.spec.name}"), quiet=True,
                    host_paths=p.spec.host_paths())
        outcome = self.runtime.run(call, CHECK_LIMITS)
        if outcome.rc != EXIT_OK:
            why = outcome.last_error or outcome.reason or f"exit code {outcome.rc}"
            raise DuplexEvalError(f"stage {p.spec.name} ({p.spec.component}): {why}")

    # ---- running -----------------------------------------------------------------------------

    def _watch_run(self) -> None:
        """Should the orchestrator be killed outright, its watchdog marks the run interrupted."""
        path = self.run_dir / "run.json" if self.run_dir is not None else None
        if self._run_token is None and path is not None and path.is_file():
            self._run_token = watchdog().watch("finally", ["duplexeval.store", "mark_interrupted", [
                str(path), f"the orchestrator (pid {os.getpid()}) was killed; its stages were stopped "
                           "(the stages it completed stay in the store; `eval` again resumes)"]])

    def run(self, plan: list[StageSpec], given: dict[str, dict] | None = None) -> list[StageResult]:
        done_records: dict[str, dict] = dict(given or {})
        results: list[StageResult] = []
        self._watch_run()
        try:
            for p in self._prepare(plan):
                result, record = self._run_stage(p, done_records)
                results.append(result)
                if record is not None:
                    done_records[p.spec.name] = {**record, "key": result.key}
                if result.status == "failed":
                    break
        finally:
            watchdog().drop(self._run_token)
            self._run_token = None
        return results

    def _run_stage(self, p: _Prepared, done: dict[str, dict]) -> tuple[StageResult, dict | None]:
        spec = p.spec
        identity = self.identity(spec)
        ins = self._inputs(spec, done)
        assert ins is not None, f"stage {spec.name} runs before its inputs"
        digests, dirs, upstream = ins
        key = stage_key(spec.component, identity, key_config(p.config), digests, numeric_environment())
        t0 = time.monotonic()
        prov = self.runtime.provenance(spec.component)

        def result(cached: bool, status: str, record: dict | None, reason: str = "") -> StageResult:
            bad = not_ok(record) if record else {}
            failed = sum(v.startswith("failed") for v in bad.values())
            return StageResult(spec.name, spec.component, key, identity, cached, status,
                               round(time.monotonic() - t0, 2), failed, len(bad) - failed, p.config, digests,
                               reason, bad, prov)

        def waiting() -> None:
            log(f"    {spec.name}: another run is computing stage {key[:12]}; waiting for it")

        input_keys = sorted({done[i]["key"] for i in spec.inputs if not isinstance(i, Source)})
        with contextlib.ExitStack() as held:
            # read-locks: no run repairs an input while this stage reads it
            fds = [held.enter_context(self.store.lock(k, shared=True)) for k in input_keys]
            fds.append(held.enter_context(self.store.lock(key, waiting)))
            record = self._complete(key, upstream, p, restore=True)
            if record is not None:
                log(f"==> {spec.name:12} {spec.component:15} {key[:12]}  cached")
                return result(True, "ok", record), record
            log(f"==> {spec.name:12} {spec.component:15} {key[:12]}  running")
            config = self.store.write_config(key, p.config)
            call = Call(spec.component, "run", config, key, dirs, self.store.stage_dir(key), self.cache,
                        spec.network, p.secret_env, spec.keys, spec.host_paths(), self._log_file(spec.name),
                        lock_fds=[fd for fd in fds if isinstance(fd, int)])
            outcome = self.runtime.run(call, self.limits)
            record = self.store.record(key)
            fresh = record is not None and record.get("invocation") == call.invocation
            status, reason = classify(outcome, fresh)
        res = result(False, status, record if fresh else None, reason)
        note = f" ({res.failed_samples} samples failed)" if res.failed_samples else ""
        log(f"    {spec.name} {status} in {res.seconds:.1f}s{note}")
        if status == "failed":
            log(f"error: stage {spec.name} ({spec.component}) failed: {reason}")
        return res, (record if fresh and status != "failed" else None)


def classify(outcome, fresh: bool) -> tuple[str, str]:
    """(status, reason) of one stage invocation."""
    if outcome.rc is None:
        return "failed", outcome.reason
    if outcome.rc in (EXIT_OK, EXIT_SAMPLES_FAILED):
        if not fresh:
            return "failed", f"exited with code {outcome.rc} without writing its stage record"
        return ("ok", "") if outcome.rc == EXIT_OK else ("partial", "")
    if outcome.rc == EXIT_STOPPED:
        return "failed", f"stopped: {outcome.last_error or 'see the messages above'}"
    if outcome.rc == EXIT_CRASH:
        return "failed", f"crashed: {outcome.last_error or 'see the traceback above'}"
    return "failed", f"exited with code {outcome.rc}" + (f": {outcome.last_error}" if outcome.last_error else "")


def reachable(url: str, stage: str, timeout_s: float = 5.0) -> None:
    """A one-line error naming the endpoint (without credentials) when nothing answers there."""
    parts = urlsplit(url)
    host = parts.hostname
    if not host:
        raise DuplexEvalError(f"stage {stage}: endpoint {redact_url(url)!r} has no host")
    port = parts.port or {"https": 443, "wss": 443, "http": 80, "ws": 80}.get(parts.scheme, 443)
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            pass
    except OSError as exc:
        raise DuplexEvalError(f"stage {stage}: cannot reach {redact_url(url)} "
                              f"({exc.strerror or exc})") from None


def missing_samples(results: list[StageResult]) -> dict[str, str]:
    """Samples some stage did not complete, with the first (root) stage's reason."""
    out: dict[str, str] = {}
    for r in results:
        for k, why in r.not_ok.items():
            if k not in out:
                out[k] = f"{r.name}: {why}"
    return out
