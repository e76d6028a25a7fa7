"""The docker runtime's stage container ends with the orchestrator: on SIGTERM (killed and removed
by the runtime) and on kill -9 (removed by the orchestrator's watchdog, by its name).

Needs a Docker engine (docker/dockerd.sh start; skipped without one). The image is made here:
a 2 MB root file system of the host's `sh` and `sleep` (`docker import`), whose entrypoint sleeps
whatever arguments the stage is given, so no component image has to be built.
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from ..conftest import wait_for

IMAGE = "duplexeval-test/sleeper:1"


def _engine():
    try:
        from duplexeval.runtime_docker import _client
        return _client()
    except Exception:  # noqa: BLE001 - no docker package or no engine: the tests are skipped
        return None


@pytest.fixture(scope="module")
def docker_client():
    client = _engine()
    if client is None:
        pytest.skip("no Docker engine (docker/dockerd.sh start)")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        libs = set()
        for exe in ("/bin/sh", "/usr/bin/sleep"):
            out = subprocess.run(["ldd", os.path.realpath(exe)], capture_output=True, text=True).stdout
            libs |= {w for w in out.split() if w.startswith("/")}
        for name, src in [("bin/sh", "/bin/sh"), ("usr/bin/sleep", "/usr/bin/sleep")] + \
                         [(lib.lstrip("/"), lib) for lib in sorted(libs)]:
            t.add(os.path.realpath(src), arcname=name)
        d = tarfile.TarInfo("tmp")
        d.type, d.mode = tarfile.DIRTYPE, 0o1777
        t.addfile(d)
    client.api.import_image_from_data(buf.getvalue(), repository=IMAGE.split(":")[0], tag=IMAGE.split(":")[1],
                                      changes=['ENTRYPOINT ["/bin/sh", "-c", "exec /usr/bin/sleep 300", "stage"]'])
    yield client
    client.close()


_ORCHESTRATOR = r"""
import sys
from pathlib import Path
from duplexeval.runtime import Call, Limits, exit_code, interrupt_on_signals
from duplexeval.runtime_docker_stage import DockerRuntime, container_name
cfg, out = Path(sys.argv[1]), Path(sys.argv[2])
rt = DockerRuntime({"judge": sys.argv[3]})
call = Call("judge", "run", cfg, "ab" * 32, [], out)
print(container_name(call), flush=True)
try:
    with interrupt_on_signals():
        rt.run(call, Limits(timeout_s=600))
except KeyboardInterrupt as exc:
    print("interrupted", flush=True)
    sys.exit(exit_code(exc))
"""


def _start(tmp_path: Path):
    cfg = tmp_path / "config.json"
    cfg.write_text("{}\n")
    p = subprocess.Popen([sys.executable, "-c", _ORCHESTRATOR, str(cfg), str(tmp_path / "out"), IMAGE],
                         stdout=subprocess.PIPE, text=True)
    return p, p.stdout.readline().strip()


def _containers(client, name: str, running: bool = False) -> list:
    # The low-level list: one request and no inspection of each container afterwards. The high-level
    # `containers.list` inspects every container it listed, and one that the watchdog removes in
    # between answers 404 (a CI run failed on that race, not on the watchdog).
    return [c["Id"] for c in client.api.containers(all=not running, filters={"name": name})
            if "/" + name in (c.get("Names") or [])]


def _wait(cond, timeout: float, what: str):
    wait_for(cond, timeout, what, interval=0.2)


def test_sigterm_kills_and_removes_the_container(docker_client, tmp_path):
    p, name = _start(tmp_path)
    try:
        assert name.startswith("duplexeval-judge-abababababab-")
        _wait(lambda: _containers(docker_client, name, running=True), 60, "the container to run")
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=60) == 143
    finally:
        if p.poll() is None:
            p.kill()
    assert _containers(docker_client, name) == []


def test_kill_9_the_watchdog_removes_the_container(docker_client, tmp_path):
    p, name = _start(tmp_path)
    try:
        _wait(lambda: _containers(docker_client, name, running=True), 60, "the container to run")
        p.kill()
        p.wait(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
    _wait(lambda: not _containers(docker_client, name), 30, "the watchdog to remove the container")
