"""The local runtime: components run as commands of this virtualenv.

A component's identity here is the hash of its source, its requirements, the
shared library and the schemas, so editing any of them changes the stage key.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.hashing import sha256_tree

from .paths import COMPONENTS, REPO


class LocalRuntime:
    name = "local"

    def __init__(self):
        self._ids: dict[str, str] = {}

    def identity(self, component: str) -> str:
        if component not in self._ids:
            src = COMPONENTS / component
            if not src.is_dir():
                raise DuplexEvalError(f"no component {component!r} in {COMPONENTS}")
            digest = sha256_tree(src, COMPONENTS / "common", REPO / "schemas")
            self._ids[component] = f"source:sha256:{digest}"
        return self._ids[component]

    def command(self, component: str) -> str:
        exe = Path(sys.executable).parent / component
        found = str(exe) if exe.is_file() else shutil.which(component)
        if not found:
            raise DuplexEvalError(f"command {component!r} not found: run `make setup`")
        return found

    def run(self, component: str, key: str, inputs: list[Path], output: Path, config: Path,
            network: bool = False, cache: Path | None = None) -> int:
        args = [self.command(component), "run", "--output", str(output), "--config", str(config)]
        for d in inputs:
            args += ["--input", str(d)]
        env = {**os.environ, "DUPLEXEVAL_IDENTITY": self.identity(component), "DUPLEXEVAL_STAGE_KEY": key}
        if cache is not None:
            env["DUPLEXEVAL_CACHE"] = str(cache)
        return subprocess.run(args, env=env).returncode
