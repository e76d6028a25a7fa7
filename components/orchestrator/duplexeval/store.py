"""The store: one folder per stage key, immutable once complete."""

from __future__ import annotations

import os
import time
from pathlib import Path

from duplexeval_common.hashing import sha256_json
from duplexeval_common.jsonio import atomic_write_json, read_json

from .paths import runs_dir, store_dir


def stage_key(component: str, identity: str, config: dict, input_keys: list[str]) -> str:
    return sha256_json({"component": component, "identity": identity, "config": config,
                        "inputs": input_keys})


class Store:
    def __init__(self, root: Path | None = None):
        self.root = store_dir(root)
        self.runs = runs_dir(root)

    def stage_dir(self, key: str) -> Path:
        return self.root / key

    def config_path(self, key: str) -> Path:
        return self.root / "configs" / f"{key}.json"

    def write_config(self, key: str, config: dict) -> Path:
        path = self.config_path(key)
        atomic_write_json(path, config)
        return path

    def complete(self, key: str) -> dict | None:
        """The stage record when the stage finished with no failed sample."""
        rec = self.stage_dir(key) / "stage.json"
        if not rec.is_file():
            return None
        record = read_json(rec)
        if any(s["status"] == "failed" for s in record["samples"].values()):
            return None
        return record

    def new_run_id(self, tag: str) -> str:
        return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + f"-{tag[:8]}"

    def write_run(self, run_id: str, record: dict) -> Path:
        path = self.runs / run_id / "run.json"
        atomic_write_json(path, record)
        link = self.runs / "latest"
        tmp = self.runs / f".latest.{os.getpid()}"
        if tmp.is_symlink():
            tmp.unlink()
        os.symlink(run_id, tmp)
        os.replace(tmp, link)
        return path

    def resolve_run(self, ref: str) -> Path:
        path = self.runs / ref
        if not (path / "run.json").is_file():
            from duplexeval_common.errors import DuplexEvalError
            raise DuplexEvalError(f"no run {ref!r} in {self.runs} (see `duplexeval runs`)")
        return path.resolve()

    def list_runs(self) -> list[dict]:
        out = []
        for p in sorted(self.runs.glob("*/run.json")):
            if p.parent.is_symlink():
                continue
            out.append(read_json(p))
        return out
