"""Run a plan: reuse stages whose key is in the store, run the rest in order."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.hashing import sha256_tree
from duplexeval_common.progress import log

from .plan import Source, StageSpec
from .store import Store, stage_key

SAMPLE_FAILURES = 1  # a stage's exit code when only some samples failed


@dataclass
class StageResult:
    name: str
    component: str
    key: str
    identity: str
    cached: bool
    status: str
    seconds: float
    failed_samples: int
    config: dict

    def record(self) -> dict:
        return dict(self.__dict__)


def _failed_count(store: Store, key: str) -> int:
    from duplexeval_common.jsonio import read_json
    rec = store.stage_dir(key) / "stage.json"
    if not rec.is_file():
        return 0
    return sum(s["status"] == "failed" for s in read_json(rec)["samples"].values())


class Engine:
    def __init__(self, store: Store, runtime):
        self.store, self.runtime = store, runtime

    def _inputs(self, spec: StageSpec, done: dict[str, StageResult]) -> tuple[list[str], list[Path]]:
        keys, dirs = [], []
        for inp in spec.inputs:
            if isinstance(inp, Source):
                keys.append(f"source:{inp.name}:sha256:{sha256_tree(inp.path)}")
                dirs.append(inp.path)
            else:
                keys.append(done[inp].key)
                dirs.append(self.store.stage_dir(done[inp].key))
        return keys, dirs

    def run(self, plan: list[StageSpec]) -> list[StageResult]:
        done: dict[str, StageResult] = {}
        for spec in plan:
            result = self._run_stage(spec, done)
            done[spec.name] = result
            if result.status == "failed":
                break
        return list(done.values())

    def _run_stage(self, spec: StageSpec, done: dict[str, StageResult]) -> StageResult:
        identity = self.runtime.identity(spec.component)
        input_keys, input_dirs = self._inputs(spec, done)
        key = stage_key(spec.component, identity, spec.config, input_keys)
        t0 = time.monotonic()
        if self.store.complete(key):
            log(f"==> {spec.name:10} {spec.component:14} {key[:12]}  cached")
            return StageResult(spec.name, spec.component, key, identity, True, "ok", 0.0, 0, spec.config)
        log(f"==> {spec.name:10} {spec.component:14} {key[:12]}  running")
        config = self.store.write_config(key, spec.config)
        rc = self.runtime.run(spec.component, key, input_dirs, self.store.stage_dir(key), config,
                              network=spec.network, cache=self.store.root / "cache")
        seconds = round(time.monotonic() - t0, 2)
        failed = _failed_count(self.store, key)
        if rc == 0:
            status = "ok"
        elif rc == SAMPLE_FAILURES and (self.store.stage_dir(key) / "stage.json").is_file():
            status = "partial"
        else:
            status = "failed"
        log(f"    {spec.name} {status} in {seconds:.1f}s" + (f" ({failed} samples failed)" if failed else ""))
        if status == "failed":
            log(f"error: stage {spec.name} ({spec.component}) exited with code {rc}")
        return StageResult(spec.name, spec.component, key, identity, False, status, seconds, failed, spec.config)


def require_ok(results: list[StageResult]) -> None:
    if results and results[-1].status == "failed":
        raise DuplexEvalError(f"stage {results[-1].name} failed; see the messages above")
