"""The docker runtime: each stage runs in its component's image.

A component's identity here is its image ID, so rebuilding or swapping one
image changes that stage's key and every key downstream. Inputs are mounted
read-only, the stage's output folder is the only writable mount besides the
result cache, and only stages that reach a model server or an API get a
network.
"""

from __future__ import annotations

import re
from pathlib import Path

from duplexeval_common.errors import DuplexEvalError

from .paths import COMPONENTS
from .runtime_docker import image_id, run_stage_in_container

SECRET_ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL")


def component_version(component: str) -> str:
    text = (COMPONENTS / component / "pyproject.toml").read_text()
    m = re.search(r'^version\s*=\s*"([^"]+)"', text, re.M)
    if not m:
        raise DuplexEvalError(f"no version in components/{component}/pyproject.toml")
    return m.group(1)


class DockerRuntime:
    name = "docker"

    def __init__(self, images: dict[str, str] | None = None):
        self.images = dict(images or {})
        self._ids: dict[str, str] = {}

    def image(self, component: str) -> str:
        return self.images.get(component) or f"duplexeval/{component}:{component_version(component)}"

    def identity(self, component: str) -> str:
        if component not in self._ids:
            self._ids[component] = f"image:{image_id(self.image(component))}"
        return self._ids[component]

    def run(self, component: str, key: str, inputs: list[Path], output: Path, config: Path,
            network: bool = False, cache: Path | None = None) -> int:
        mounts = [(d, f"/in/{i}", True) for i, d in enumerate(inputs)]
        mounts += [(config, "/config/stage.json", True), (output, "/out", False)]
        env = {"DUPLEXEVAL_IDENTITY": self.identity(component), "DUPLEXEVAL_STAGE_KEY": key}
        if cache is not None:
            mounts.append((cache, "/cache", False))
            env["DUPLEXEVAL_CACHE"] = "/cache"
        args = ["run", "--output", "/out", "--config", "/config/stage.json"]
        for i in range(len(inputs)):
            args += ["--input", f"/in/{i}"]
        return run_stage_in_container(self.image(component), args, mounts, network,
                                      env_names=SECRET_ENV if network else (), env_values=env)
