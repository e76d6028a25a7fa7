"""The runner images duplexeval/runner-<name>, one per runner package components/runners/<name>.

The first tests read only the repository (docker/images.py, docker/lib.sh, the Dockerfiles) and
always run. The others need a Docker engine and the images (`make docker-up images`); .ci/run
provides both and sets DUPLEXEVAL_DOCKER_TESTS=1. They check every runner image whose package
exists: `list` shows exactly the runners of its package and of the runner packages it depends
on, all available; the client-only images hold no torch; each sits on the right base, and the
core's dependency layer is one layer shared by the runner images on the same base.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tomllib
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _load_images():
    """docker/images.py (a script folder, not a package), under a name no other module uses."""
    spec = importlib.util.spec_from_file_location("duplexeval_docker_images", REPO / "docker" / "images.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


images = _load_images()

# The runner packages that only talk to a server or play a file: their images must hold no torch.
CLIENT_ONLY = {"controls", "freeze-omni", "moshi-ws", "openai-realtime", "gemini-live", "replay", "half-duplex"}
# Those that run a model in-process with torch.
WITH_TORCH = {"cascade", "moshi", "dgslm"}
RUNNER_IMAGES = [n for n in images.image_names() if images.is_runner(n)]
DOCKER = os.environ.get("DUPLEXEVAL_DOCKER_TESTS") == "1"
needs_docker = pytest.mark.skipif(not DOCKER, reason="needs a Docker engine and the images (DUPLEXEVAL_DOCKER_TESTS=1)")


def short(image: str) -> str:
    return image[len(images.RUNNER_PREFIX):]


# ---- the layout (no engine needed) --------------------------------------------------------------

def test_every_runner_package_has_an_image_and_the_core_has_none():
    pkgs = sorted(p.parent.name for p in (REPO / "components" / "runners").glob("*/pyproject.toml"))
    # every package but those asking for another Python than the bases' (nova-sonic: 3.12)
    other_python = {short(n) for n in images.skipped_images()}
    assert other_python == {"nova-sonic"}
    assert pkgs and RUNNER_IMAGES == [f"runner-{p}" for p in pkgs if p not in other_python]
    assert images.CORE not in images.image_names()
    assert not (REPO / "components" / images.CORE / "Dockerfile").exists()
    assert {"controls", "cascade", "freeze-omni"} <= set(pkgs)


def test_an_image_for_another_python_is_refused_in_one_line_and_left_out_of_make_images():
    r = subprocess.run([sys.executable, str(REPO / "docker" / "images.py"), "buildable", "runner-nova-sonic"],
                       capture_output=True, text=True)
    assert r.returncode == 1 and r.stderr.count("\n") == 1
    assert "Python 3.12" in r.stderr and "bases have Python 3.11" in r.stderr
    r = subprocess.run([sys.executable, str(REPO / "docker" / "images.py"), "buildable", "runner-moshi"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    listed = subprocess.run([sys.executable, str(REPO / "docker" / "images.py"), "list"],
                            capture_output=True, text=True, check=True).stdout.split()
    assert "runner-nova-sonic" not in listed and "runner-moshi" in listed


@pytest.mark.parametrize("name", sorted(CLIENT_ONLY | WITH_TORCH | {"nova-sonic"}))
def test_each_runner_dockerfile_adds_its_title_and_the_core_entrypoint(name):
    text = (REPO / "components" / "runners" / name / "Dockerfile").read_text()
    assert f"ARG INSTALLED=duplexeval/runner-{name}-install:latest" in text
    assert f'LABEL org.opencontainers.image.title="duplexeval-runner-{name}"' in text
    assert 'ENTRYPOINT ["/opt/venv/bin/duplex-runner"]' in text


def test_component_version_and_folder_accept_runner_names():
    """docker/lib.sh's component_version runner-<x> reads components/runners/<x>/pyproject.toml,
    the convention the orchestrator's docker runtime uses for duplexeval/runner-<x>:<version>."""
    script = f'. "{REPO}/docker/lib.sh"; for n in "$@"; do component_dir "$n"; component_version "$n"; done'
    names = ["runner-controls", "runner-cascade", "judge"]
    r = subprocess.run(["bash", "-c", script, "-", *names], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    out = r.stdout.split()
    for i, n in enumerate(names):
        d = REPO / "components" / ("runners/" + short(n) if n.startswith("runner-") else n)
        with open(d / "pyproject.toml", "rb") as f:
            assert out[2 * i:2 * i + 2] == [str(d), tomllib.load(f)["project"]["version"]]
    r = subprocess.run([sys.executable, str(REPO / "docker" / "images.py"), "version", "runner-nope"],
                       capture_output=True, text=True)
    assert r.returncode == 3 and "components/runners/nope/pyproject.toml" in r.stderr


def test_a_runner_image_installs_its_duplexeval_runner_dependencies_and_their_requirements():
    assert [d.name for d in images.packages("runner-cascade")] == ["controls", "half-duplex", "cascade"]
    assert [d.name for d in images.packages("runner-controls")] == ["controls"]
    files = [f.relative_to(REPO).as_posix() for f in images.requirement_files("runner-cascade")]
    assert files == ["components/duplex-runner/requirements.txt", "components/runners/controls/requirements.txt",
                     "components/runners/half-duplex/requirements.txt", "components/runners/cascade/requirements.txt"]
    text = images.runner_requirements("runner-cascade")
    assert text.count("onnxruntime==") == 1 and "torch==2.13.0" in text
    with pytest.raises(images.ImageError, match="no runner image"):
        images.packages("judge")


@pytest.mark.parametrize("image", RUNNER_IMAGES)
def test_torch_base_exactly_for_the_runners_that_need_torch(image):
    if short(image) in CLIENT_ONLY:
        assert not images.needs_torch(image)
    if short(image) in WITH_TORCH:
        assert images.needs_torch(image)


def test_silero_vad_is_installed_without_its_declared_torch():
    """silero-vad declares torch; the controls use only its ONNX file, so the images install it
    with --no-deps and a client-only image stays free of torch."""
    r = subprocess.run([sys.executable, str(REPO / "docker" / "reqs.py"), "nodeps"], capture_output=True, text=True,
                       env={k: v for k, v in os.environ.items() if k != "DUPLEXEVAL_NODEPS_PACKAGES"})
    assert "silero-vad" in r.stdout.split()


# ---- the images (engine needed) -----------------------------------------------------------------

def _host() -> str:
    from duplexeval.runtime_docker import docker_host
    return docker_host()


def _docker(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", *args], capture_output=True, text=True,
                          env={**os.environ, "DOCKER_HOST": _host()})


def tag(image: str) -> str:
    return f"duplexeval/{image}:{images.version(image)}"


def expected_runners(image: str) -> set[str]:
    """The runner names registered by the image's runner packages: their registration modules
    (which import nothing heavy), read from the sources."""
    targets = []
    for d in images.packages(image):
        with open(d / "pyproject.toml", "rb") as f:
            targets += tomllib.load(f)["project"]["entry-points"]["duplexeval.runners"].values()
    code = ("import importlib, json, sys\n"
            "names = []\n"
            "for t in sys.argv[1:]:\n"
            "    m, _, a = t.partition(':')\n"
            "    names += [e['name'] for e in getattr(importlib.import_module(m), a)]\n"
            "print(json.dumps(names))\n")
    path = os.pathsep.join([*(str(d) for d in images.packages(image)), os.environ.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, "-c", code, *targets], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": path})
    assert r.returncode == 0, r.stderr[-2000:]
    return set(json.loads(r.stdout))


@lru_cache(maxsize=1)
def probes() -> dict[str, dict]:
    """Per runner image (run at once, a few at a time): `list`, `python -c "import torch"`, and
    its inspect data."""
    def probe(image: str) -> dict:
        t = tag(image)
        listed = _docker("run", "--rm", "--network", "none", t, "list")
        torch = _docker("run", "--rm", "--network", "none", "--entrypoint", "/opt/venv/bin/python", t,
                        "-c", "import torch; print(torch.__version__)")
        inspect = _docker("image", "inspect", t)
        return {"list": listed, "torch": torch,
                "inspect": json.loads(inspect.stdout)[0] if inspect.returncode == 0 else None}
    with ThreadPoolExecutor(4) as pool:
        return dict(zip(RUNNER_IMAGES, pool.map(probe, RUNNER_IMAGES)))


def parse_list(stdout: str) -> dict[str, str | None]:
    """`duplex-runner list`: `name  summary`, then an indented note when it is not available."""
    out: dict[str, str | None] = {}
    last = None
    for line in stdout.splitlines():
        if line.startswith(" "):
            out[last] = line.strip()
        elif line.strip():
            last = line.split()[0]
            out[last] = None
    return out


@needs_docker
@pytest.mark.parametrize("image", RUNNER_IMAGES)
def test_runner_image_lists_exactly_its_runners_as_available_without_network(image):
    p = probes()[image]
    assert p["inspect"] is not None, f"{tag(image)} not built: make image NAME={image}"
    assert p["list"].returncode == 0, p["list"].stderr[-2000:]
    listed = parse_list(p["list"].stdout)
    assert set(listed) == expected_runners(image)
    assert all(note is None for note in listed.values()), listed


@needs_docker
@pytest.mark.parametrize("image", RUNNER_IMAGES)
def test_runner_image_entrypoint_title_and_torch(image):
    p = probes()[image]
    cfg = p["inspect"]["Config"]
    assert cfg["Entrypoint"] == ["/opt/venv/bin/duplex-runner"]
    assert cfg["Labels"]["org.opencontainers.image.title"] == f"duplexeval-{image}"
    assert cfg["Labels"]["org.opencontainers.image.version"] == images.version(image)
    if images.needs_torch(image):
        assert p["torch"].returncode == 0 and p["torch"].stdout.startswith("2.13.0"), p["torch"].stderr[-1000:]
    else:
        assert p["torch"].returncode == 1 and "No module named 'torch'" in p["torch"].stderr, p["torch"]


@needs_docker
def test_runner_images_sit_on_their_base_and_share_the_core_dependency_layer():
    """Each image's layers start with its base's (torch-base exactly when it needs torch); the next
    layer, the core's pinned requirements, is one layer for every runner image on that base."""
    common_v = images.version("common")
    bases = {}
    for b in ("common-base", "torch-base"):
        r = _docker("image", "inspect", "-f", "{{json .RootFS.Layers}}", f"duplexeval/{b}:{common_v}")
        assert r.returncode == 0, r.stderr
        bases[b] = json.loads(r.stdout)
    core_layer: dict[str, set[str]] = {b: set() for b in bases}
    for image, p in probes().items():
        assert p["inspect"] is not None, f"{tag(image)} not built"
        layers = p["inspect"]["RootFS"]["Layers"]
        base = "torch-base" if images.needs_torch(image) else "common-base"
        assert layers[:len(bases[base])] == bases[base], image
        core_layer[base].add(layers[len(bases[base])])
    assert all(len(s) <= 1 for s in core_layer.values()), core_layer
