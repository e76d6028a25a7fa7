"""Docker engine primitives of the orchestrator's docker runtime.

Two calls, independent of the rest of the orchestrator:
  image_id(image)                 the image's sha256 ID (a component's identity in this runtime)
  run_stage_in_container(...)     one stage in one throw-away container; its logs go to stderr

Containers run as the invoking user's uid and gid, with a read-only root file system and a
private /tmp, every capability dropped, inputs mounted read-only and only the output directory
and the cache writable, within the stage's timeout, memory and CPU limits, and with no network
unless the stage asks for one. Secrets reach a container only as environment variables (passed
by name from our environment, like `docker run -e NAME`, or given by value for the
DUPLEXEVAL_SECRET_* references of a config) and are never logged or returned.

The engine is $DOCKER_HOST; when that is unset, the project's own dockerd (`make docker-up`)
when its socket exists, else the engine's default socket.
"""

from __future__ import annotations

import hashlib
import os
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Iterable, Mapping

from duplexeval_common.errors import DuplexEvalError

_REPO = Path(__file__).resolve().parents[3]


def docker_host() -> str:
    """The engine address used: $DOCKER_HOST, the project's dockerd, or the default socket."""
    if os.environ.get("DOCKER_HOST"):
        return os.environ["DOCKER_HOST"]
    run_dir = os.environ.get("DUPLEXEVAL_DOCKER_RUN") or \
        "/run/duplexeval-docker-" + hashlib.sha256(str(_REPO).encode()).hexdigest()[:8]
    sock = Path(run_dir) / "docker.sock"
    if sock.is_socket():
        return f"unix://{sock}"
    return "unix:///var/run/docker.sock"


def _client():
    host = docker_host()
    unreachable = DuplexEvalError(f"no Docker engine at {host}: run `make docker-up`")
    try:
        import docker
    except ImportError:
        raise DuplexEvalError("the docker runtime needs the `docker` package: pip install docker==7.2.0") from None
    try:
        client = docker.DockerClient(base_url=host, timeout=120)
        client.ping()
    except Exception:
        raise unreachable from None
    return client


def image_id(image: str) -> str:
    """The sha256 ID of a local image, e.g. 'sha256:3f2a...'."""
    import docker.errors
    client = _client()
    try:
        return client.images.get(image).id
    except docker.errors.ImageNotFound:
        name = image.split("/")[-1].split(":")[0]
        raise DuplexEvalError(f"image {image} not found: run `make image NAME={name}`") from None
    finally:
        client.close()


def over_engine(image: str, engine: str) -> bool:
    """Whether `image` is the engine image `engine` (an ID) plus at most one layer (the benchmark
    packages that docker/build-image.sh adds), with the engine's environment, user and working
    folder: only then may the image's identity be the engine's. An image made FROM it with another
    layer or setting (a swapped image) is not, and a missing engine image proves nothing."""
    import docker.errors
    client = _client()
    try:
        own, base = client.images.get(image).attrs, client.images.get(engine).attrs
    except docker.errors.ImageNotFound:
        return False
    finally:
        client.close()
    mine, under = own["RootFS"].get("Layers") or [], base["RootFS"].get("Layers") or []
    if mine[:len(under)] != under or len(mine) > len(under) + 1:
        return False
    return all((own.get("Config") or {}).get(k) == (base.get("Config") or {}).get(k)
               for k in ("Env", "User", "WorkingDir"))


def image_labels(image: str) -> dict[str, str]:
    """The labels of a local image ({} when it has none)."""
    import docker.errors
    client = _client()
    try:
        return dict(client.images.get(image).labels or {})
    except docker.errors.ImageNotFound:
        name = image.split("/")[-1].split(":")[0]
        raise DuplexEvalError(f"image {image} not found: run `make image NAME={name}`") from None
    finally:
        client.close()


def invoking_user() -> str:
    """`uid:gid` of the user running the orchestrator: the containers run as that user, so the
    outputs they write belong to whoever started the run (root or not)."""
    return f"{os.getuid()}:{os.getgid()}"


def run_stage_in_container(image: str, args: list[str],
                           mounts: Iterable[tuple[str | os.PathLike, str, bool]],
                           network: bool, env_names: Iterable[str] = (),
                           user: str | None = None, *,
                           env_values: Mapping[str, str] | None = None,
                           secret_values: Mapping[str, str] | None = None,
                           read_only_root: bool = True,
                           timeout_s: float | None = None,
                           memory_bytes: int | None = None,
                           cpus: float | None = None,
                           log: Callable[[bytes], None] | None = None,
                           name: str | None = None) -> tuple[int | None, str]:
    """Run `image` with `args` (after its entrypoint); return (exit code or None, kill reason).

    mounts: (host_path, container_path, read_only); read-only ones must exist, read-write ones
    are created. user: `uid:gid`, default the invoking user's. network: False gives --network
    none; True the default bridge, or $DUPLEXEVAL_DOCKER_NETWORK (e.g. `host` for a model server on
    localhost). env_names: variables passed through from our environment (keys), like
    `docker run -e NAME`; secret_values: secret variables given by value (DUPLEXEVAL_SECRET_*);
    env_values: plain settings. Limits: `timeout_s` (the container is killed when passed),
    `memory_bytes` (the engine's memory cap; an OOM kill is reported) and `cpus`. `name`: the
    container's name (the orchestrator's watchdog removes it by that name should the orchestrator
    be killed outright; see remove_container). A KeyboardInterrupt (Ctrl-C, or SIGTERM/SIGHUP as
    runtime.Terminated) kills it. The container is removed in every case.
    """
    import docker.errors
    from docker.types import Mount

    write = log or (lambda b: (sys.stderr.write(b.decode("utf-8", "replace")), sys.stderr.flush()))
    binds = []
    for host, target, ro in mounts:
        host = Path(host).resolve()
        if ro:
            if not host.exists():
                raise DuplexEvalError(f"input {host} does not exist")
        else:
            host.mkdir(parents=True, exist_ok=True)
        binds.append(Mount(target=target, source=str(host), type="bind", read_only=bool(ro)))
    environment = {"HOME": "/tmp"}
    environment.update(env_values or {})
    environment.update({n: os.environ[n] for n in env_names if n in os.environ})
    environment.update(secret_values or {})
    network_mode = (os.environ.get("DUPLEXEVAL_DOCKER_NETWORK") or "bridge") if network else "none"
    limits = {}
    if memory_bytes:
        limits.update(mem_limit=int(memory_bytes), memswap_limit=int(memory_bytes))
    if cpus:
        limits["nano_cpus"] = int(float(cpus) * 1e9)

    client = _client()
    container = None
    try:
        try:
            container = client.containers.create(
                image, command=list(args), mounts=binds, environment=environment,
                user=user or invoking_user(), network_mode=network_mode, read_only=read_only_root,
                tmpfs={"/tmp": "rw,exec,nosuid,size=4g"}, cap_drop=["ALL"],
                security_opt=["no-new-privileges"], working_dir="/tmp", detach=True,
                **({"name": name} if name else {}), **limits)
        except docker.errors.ImageNotFound:
            name = image.split("/")[-1].split(":")[0]
            raise DuplexEvalError(f"image {image} not found: run `make image NAME={name}`") from None
        container.start()

        def stream() -> None:
            try:
                for chunk in container.logs(stream=True, follow=True, stdout=True, stderr=True):
                    write(chunk)
            except Exception:  # noqa: BLE001 - the container went away; the exit code tells why
                pass

        reader = threading.Thread(target=stream, daemon=True)
        reader.start()
        t0 = time.monotonic()
        reason = ""
        while True:
            left = None if timeout_s is None else timeout_s - (time.monotonic() - t0)
            if left is not None and left <= 0:
                reason = f"timed out after {timeout_s:g} s (the stage timeout) and was killed"
                container.kill()
                break
            try:
                code = int(container.wait(timeout=min(left, 5.0) if left else 5.0).get("StatusCode", 1))
                break
            except Exception as exc:  # noqa: BLE001 - a wait timeout: poll again
                if "timed out" not in str(exc).lower() and "timeout" not in type(exc).__name__.lower():
                    raise
        reader.join(timeout=10)
        if reason:
            return None, reason
        container.reload()
        if container.attrs.get("State", {}).get("OOMKilled"):
            return None, (f"ran out of memory (its limit is {memory_bytes / 1024 ** 3:.2f} GiB) and was "
                          "killed" if memory_bytes else "ran out of memory and was killed")
        return code, ""
    except KeyboardInterrupt:
        if container is not None:
            try:
                container.kill()
            except docker.errors.APIError:  # already gone
                pass
        raise
    except docker.errors.APIError as e:
        raise DuplexEvalError(f"docker: {e.explanation or e}") from None
    finally:
        if container is not None:
            try:
                container.remove(force=True)
            except docker.errors.APIError:
                pass
        client.close()


def remove_container(host: str, name: str) -> None:
    """Kill and remove the container of this name at engine `host`, if there is one (the
    orchestrator's watchdog calls this when the orchestrator was killed; also a container that
    was created but not yet started)."""
    import docker
    import docker.errors
    client = docker.DockerClient(base_url=host, timeout=60)
    try:
        client.containers.get(name).remove(force=True)
    except docker.errors.NotFound:
        pass
    finally:
        client.close()
