"""Docker engine primitives of the orchestrator's docker runtime.

Two calls, independent of the rest of the orchestrator:
  image_id(image)                 the image's sha256 ID (a component's identity in this runtime)
  run_stage_in_container(...)     one stage in one throw-away container; its logs go to stderr

Containers run as uid 1000 (`duplexeval` in the images), with a read-only root file system and
a private /tmp, every capability dropped, inputs mounted read-only and only the output
directory writable, and no network unless the stage asks for one. Secrets reach a container
only as environment variables named in `env_names` (the values are read here from our own
environment, like `docker run -e NAME`, and never logged or returned).

The engine is $DOCKER_HOST; when that is unset, the project's own dockerd (`make docker-up`)
when its socket exists, else the engine's default socket.
"""

from __future__ import annotations

import codecs
import hashlib
import os
import stat
import sys
from pathlib import Path
from typing import IO, Iterable, Mapping

from duplexeval_common.errors import DuplexEvalError

CONTAINER_USER = "1000:1000"
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


def _writable_by(path: Path, user: str) -> None:
    """Create an output directory the container's user can write to."""
    path.mkdir(parents=True, exist_ok=True)
    uid, _, gid = user.partition(":")
    if os.geteuid() == 0 and uid.isdigit():
        for p in [path, *path.rglob("*")]:
            st = p.lstat()
            if st.st_uid != int(uid):
                os.lchown(p, int(uid), int(gid) if gid.isdigit() else int(uid))


def _readable_by_all(path: Path) -> None:
    """Let the container's user read an input: o+r on files, o+rx on folders, where missing.

    Files written through temporary files (mkstemp) are 0600; when the orchestrator runs as
    root, uid 1000 could not read them. Only permission bits inside the mounted tree change
    (a bind mount needs none on the folders above it), never content.
    """
    if os.geteuid() != 0:
        return
    for p in [path, *(path.rglob("*") if path.is_dir() else [])]:
        st = p.lstat()
        if stat.S_ISLNK(st.st_mode):
            continue
        want = stat.S_IROTH | (stat.S_IXOTH if stat.S_ISDIR(st.st_mode) else 0)
        if st.st_mode & want != want:
            os.chmod(p, stat.S_IMODE(st.st_mode) | want)


def run_stage_in_container(image: str, args: list[str],
                           mounts: Iterable[tuple[str | os.PathLike, str, bool]],
                           network: bool, env_names: Iterable[str] = (),
                           user: str = CONTAINER_USER, *,
                           env_values: Mapping[str, str] | None = None,
                           read_only_root: bool = True,
                           log: IO[str] | None = None) -> int:
    """Run `image` with `args` (after its entrypoint) and return the exit code.

    mounts: (host_path, container_path, read_only); read-only ones must exist and are made
    readable by others where they are not (when we are root: see _readable_by_all);
    read-write host paths are created and handed to `user` (when we are root). network: False gives --network none; True the default
    bridge, or $DUPLEXEVAL_DOCKER_NETWORK (e.g. `host` for a model server on localhost).
    env_names: variables passed through from our environment (secrets); env_values: plain
    non-secret settings (stage key, identity). The container is removed in every case.
    """
    import docker.errors
    from docker.types import Mount

    out = log or sys.stderr
    binds = []
    for host, target, ro in mounts:
        host = Path(host).resolve()
        if ro:
            if not host.exists():
                raise DuplexEvalError(f"input {host} does not exist")
            _readable_by_all(host)
        else:
            _writable_by(host, user)
        binds.append(Mount(target=target, source=str(host), type="bind", read_only=bool(ro)))
    environment = {"HOME": "/tmp"}
    environment.update(env_values or {})
    environment.update({n: os.environ[n] for n in env_names if n in os.environ})
    network_mode = (os.environ.get("DUPLEXEVAL_DOCKER_NETWORK") or "bridge") if network else "none"

    client = _client()
    container = None
    try:
        try:
            container = client.containers.create(
                image, command=list(args), mounts=binds, environment=environment, user=user,
                network_mode=network_mode, read_only=read_only_root,
                tmpfs={"/tmp": "rw,exec,nosuid,size=4g"}, cap_drop=["ALL"],
                security_opt=["no-new-privileges"], working_dir="/tmp", detach=True)
        except docker.errors.ImageNotFound:
            name = image.split("/")[-1].split(":")[0]
            raise DuplexEvalError(f"image {image} not found: run `make image NAME={name}`") from None
        container.start()
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        for chunk in container.logs(stream=True, follow=True, stdout=True, stderr=True):
            out.write(decoder.decode(chunk))
            out.flush()
        out.write(decoder.decode(b"", final=True))
        return int(container.wait().get("StatusCode", 1))
    except KeyboardInterrupt:
        if container is not None:
            container.kill()
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
