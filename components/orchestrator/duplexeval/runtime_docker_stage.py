"""The docker runtime: each stage runs in its component's image.

A component's identity here is its image ID, so rebuilding or swapping one image changes that
stage's key and every key downstream. A component image built by docker/build-image.sh carries
the benchmark packages on top of the component (docker/Dockerfile.benchmarks) and two labels: the
ID of the image without them (org.duplexeval.engine), which is then the identity, and the source
digest of each benchmark baked in (org.duplexeval.benchmarks). The engine adds the digest of the
stage's benchmark to the identity (engine.Engine.identity), so a change to one benchmark re-runs
that benchmark's stages only; an image whose baked benchmark differs from the repository's is
refused with one line (rebuild it) instead of running old rules under a new key. Inputs are mounted read-only; the stage's output folder
and the cache are the only writable mounts; only stages that reach a model server or an API get
a network. The numeric environment (OPENBLAS_*, OMP_*, MKL_*, thread counts) is passed in, so a
container computes with the same kernels as the local runtime on the same machine.
"""

from __future__ import annotations

import re

from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.watchdog import watchdog

from .paths import component_dir, is_runner
from .runtime import Call, Limits, LogRelay, Outcome, numeric_env
from .runtime_docker import docker_host, image_id, image_labels, over_engine, run_stage_in_container

ENGINE_LABEL = "org.duplexeval.engine"
BENCHMARKS_LABEL = "org.duplexeval.benchmarks"


def component_version(component: str) -> str:
    text = (component_dir(component) / "pyproject.toml").read_text()
    m = re.search(r'^version\s*=\s*"([^"]+)"', text, re.M)
    if not m:
        raise DuplexEvalError(f"no version in {component_dir(component)}/pyproject.toml")
    return m.group(1)


class DockerRuntime:
    name = "docker"

    def __init__(self, images: dict[str, str] | None = None):
        self.images = dict(images or {})
        self._ids: dict[str, str] = {}
        self._labels_of: dict[str, dict[str, str]] = {}

    def image(self, component: str) -> str:
        # RUNNER_IMAGE / --image duplex-runner=IMAGE swaps whichever runner package the model uses
        swapped = self.images.get(component) or (self.images.get("duplex-runner") if is_runner(component) else None)
        return swapped or f"duplexeval/{component}:{component_version(component)}"

    def _labels(self, component: str) -> dict[str, str]:
        if component not in self._labels_of:
            self._labels_of[component] = image_labels(self.image(component))
        return self._labels_of[component]

    def identity(self, component: str) -> str:
        if component not in self._ids:
            # the engine's ID, so that rebuilding only the benchmark layer moves no component's
            # identity; but only for an image that is that engine and its benchmark layer (a label
            # is inherited by any image made FROM it, whatever that image adds)
            engine = self._labels(component).get(ENGINE_LABEL)
            image = self.image(component)
            self._ids[component] = f"image:{engine if engine and over_engine(image, engine) else image_id(image)}"
        return self._ids[component]

    def check_benchmark(self, component: str, name: str, digest: str) -> None:
        """One line when the component's image holds another version of benchmark `name` than
        the repository's (or none of it)."""
        import json
        try:
            baked = json.loads(self._labels(component).get(BENCHMARKS_LABEL) or "{}")
        except ValueError:
            baked = {}
        if not isinstance(baked, dict) or name not in baked:
            raise DuplexEvalError(f"image {self.image(component)} does not hold benchmark {name} (an image holds "
                                  "the packages under the repository's benchmarks/ folder: put it there and "
                                  f"rebuild, make image NAME={component}, or run with --runtime local)")
        if baked.get(name) != digest:
            raise DuplexEvalError(f"image {self.image(component)} holds benchmark {name} at {str(baked[name])[:12]}..., "
                                  f"the repository's is at {digest[:12]}...: rebuild it (make image NAME={component})")

    def provenance(self, component: str) -> dict:
        return {"identity": self.identity(component), "image": self.image(component)}

    def container(self, call: Call) -> tuple[list[str], list[tuple], dict[str, str]]:
        """(args after the entrypoint, mounts (host, container, read_only), plain env) of one call:
        the one source of the mounts and settings, for `run` here and for the Slurm executor's
        `docker run` command line."""
        mounts = [(d, f"/in/{i}", True) for i, d in enumerate(call.inputs)]
        mounts.append((call.config, "/config/stage.json", True))
        mounts += [(p, p, True) for p in call.host_paths]  # at the same path: the setting stays valid
        args = [call.action, "--config", "/config/stage.json"]
        if call.action == "run":
            mounts.append((call.output, "/out", False))
            args += ["--output", "/out"]
            for i in range(len(call.inputs)):
                args += ["--input", f"/in/{i}"]
        env = {**numeric_env(), **call.env(self.identity(call.component))}
        if call.cache is not None:
            mounts.append((call.cache, "/cache", False))
            env["DUPLEXEVAL_CACHE"] = "/cache"
        return args, mounts, env

    def run(self, call: Call, limits: Limits) -> Outcome:
        args, mounts, env = self.container(call)
        image = self.image(call.component)
        relay = LogRelay(call.log_file, call.quiet)
        # Named, and registered with the orchestrator's watchdog before it exists: should the
        # orchestrator be killed outright, the watchdog removes the container (and holds the
        # stage's locks until it has).
        name = container_name(call)
        wd = watchdog()
        token = wd.watch("call", ["duplexeval.runtime_docker", "remove_container", [docker_host(), name]],
                         fds=call.lock_fds)
        try:
            rc, reason = run_stage_in_container(
                image, args, mounts, call.network, env_names=call.pass_env,
                env_values=env, secret_values=call.secret_env, timeout_s=limits.timeout_s,
                memory_bytes=limits.memory_bytes, cpus=limits.cpus, log=relay.feed, name=name)
        finally:
            relay.close()
            wd.drop(token)
        return Outcome(rc, reason, relay.last_error)


def container_name(call: Call) -> str:
    """duplexeval-<component>-<stage key, 12>-<invocation, 8>: unique per invocation."""
    return f"duplexeval-{call.component}-{(call.key or call.action)[:12]}-{call.invocation[:8]}"
