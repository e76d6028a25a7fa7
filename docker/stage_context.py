"""Stage the build contexts of the duplexeval images under .build/context.

    python3 docker/stage_context.py --wheelhouse DIR --context ROOT [--python PY] NAME...

ROOT/_<target> (python-base, common-base, torch-base of docker/Dockerfile.base) and ROOT/<name>
(the install steps, then the image's own Dockerfile) each hold just what that build needs
(hard links), changing only what differs (so BuildKit's context transfer and layer cache stay
warm):
  constraints.txt            the repo's constraints (torch pin)
  reqs/<set>/{deps,nodeps}.txt    reqs/common for the base targets; reqs/component for a
                             component; reqs/core and reqs/runner for a runner image
  reqs/<set>/imports.txt, reqs/<set>/compile_imports.py   (an image's sets, not the bases') the
                             third-party modules the duplexeval code going into the image imports
                             (docker/imports.py: of common and the component with the benchmark
                             packages; of common and the core; of those and the runner packages),
                             whose bytecode the layer writes after a `pip install --no-compile`
  wheels/<set>/              hard links to just the wheels one install step needs, so that a
                             new wheel for one image does not invalidate another's layers:
                             tools (pip and the build backend, setuptools and wheel, which
                             python-base installs once: every duplexeval package then builds
                             with --no-build-isolation), torch and common for the base targets;
                             component, or core and runner, for an image
  src/common/, src/component/   sources without build leftovers (a component: docker/Dockerfile.component)
  src/benchmarks/<folder>/   every benchmark package (benchmarks/<folder>/: its pyproject.toml and
                             its Python package; not its datasets or tests), which
                             docker/Dockerfile.benchmarks installs with --no-deps on top of the
                             component's install image: every component runs its stage's
                             benchmark's hooks (pure Python over the component's own packages).
  src/common/, src/core/, src/runners/<package>/   (a runner image runner-<x>: docker/Dockerfile.runner;
                             the core is components/duplex-runner, the packages are runners/<x> and
                             the duplexeval runner packages it depends on, docker/images.py)
  schemas/                   the JSON Schemas (images only)
The folders are named by their role (`component`, `core`, ...), not by the image: one
Dockerfile.component serves every component and one Dockerfile.runner every runner image, and
the engine's built-in Dockerfile frontend expands no variables in RUN --mount options. The same
role with the same content gives the same cache key in every image (reqs/core and wheels/core:
one shared layer under every runner image on the same base).
"""

from __future__ import annotations

import argparse
import filecmp
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path
from urllib.parse import unquote, urlparse

sys.path.insert(0, str(Path(__file__).parent))
import images  # noqa: E402
import imports  # noqa: E402
import reqs  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
BASE_TARGETS = ("python-base", "common-base", "torch-base")  # targets of docker/Dockerfile.base
SKIP_DIRS = {"__pycache__", "build", "dist", "store", "runs", ".pytest_cache", "tests"}


def skip(name: str) -> bool:
    return name in SKIP_DIRS or name.endswith(".egg-info") or name.endswith(".pyc")


def sync_tree(src: Path, dst: Path) -> None:
    """Mirror src into dst: copy changed files, delete extra ones."""
    dst.mkdir(parents=True, exist_ok=True)
    want = set()
    for entry in sorted(src.iterdir()):
        if skip(entry.name):
            continue
        want.add(entry.name)
        target = dst / entry.name
        if entry.is_dir():
            if target.exists() and not target.is_dir():
                target.unlink()
            sync_tree(entry, target)
        elif entry.is_file():
            if target.is_dir():
                shutil.rmtree(target)
            if not (target.exists() and filecmp.cmp(entry, target, shallow=False)):
                shutil.copy2(entry, target)
    for extra in dst.iterdir():
        if extra.name not in want:
            shutil.rmtree(extra) if extra.is_dir() and not extra.is_symlink() else extra.unlink()


def write_if_changed(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def link_set(wheelhouse: Path, dst: Path, files: set[str]) -> None:
    dst.mkdir(parents=True, exist_ok=True)
    for f in files:
        src, target = wheelhouse / f, dst / f
        if not src.is_file():
            sys.exit(f"error: wheel {f} is not in {wheelhouse}: run `make wheelhouse`")
        if target.exists() and os.path.samefile(src, target):
            continue
        if target.exists():
            target.unlink()
        try:
            os.link(src, target)
        except OSError:
            shutil.copy2(src, target)
    for extra in dst.iterdir():
        if extra.name not in files:
            extra.unlink()


_CACHE: dict[str, list[str]] = {}


def _key(wheelhouse: Path, args: list[str]) -> str:
    h = hashlib.sha256(json.dumps(args).encode())
    for a in args:
        if Path(a).is_file():
            h.update(Path(a).read_bytes())
    for w in sorted(wheelhouse.glob("*.whl")):
        h.update(f"{w.name}:{w.stat().st_size}\n".encode())
    return h.hexdigest()


def resolve(py: str, wheelhouse: Path, args: list[str]) -> set[str]:
    """Wheel file names that `pip install ARGS` takes from the wheelhouse alone."""
    if not args:
        return set()
    key = _key(wheelhouse, args)
    if key in _CACHE:
        return set(_CACHE[key])
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env["PIP_CONFIG_FILE"] = os.devnull  # only the wheelhouse, none of the host's indexes
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        cmd = [py, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--no-index",
               "--disable-pip-version-check", "-q", "--find-links", str(wheelhouse),
               "--report", str(report), *args]
        r = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if r.returncode:
            sys.exit(f"error: the wheelhouse cannot satisfy {' '.join(args)}: run `make wheelhouse`\n{r.stderr[-2000:]}")
        data = json.loads(report.read_text())
    names = set()
    for item in data.get("install", []):
        url = item.get("download_info", {}).get("url", "")
        names.add(Path(unquote(urlparse(url).path)).name)
    _CACHE[key] = sorted(names)
    return names


def stage_reqs(wh: Path, py: str, req: Path | str, rdir: Path) -> set[str]:
    """rdir/{deps,nodeps}.txt from a requirements file (or its text); returns the wheel files they need."""
    rdir.mkdir(parents=True, exist_ok=True)
    if isinstance(req, str):
        write_if_changed(rdir / "requirements.txt", req)
        req = rdir / "requirements.txt"
    reqs.main(["split", str(req), str(rdir)])
    deps, nodeps = rdir / "deps.txt", rdir / "nodeps.txt"
    constraints = REPO / "constraints.txt"
    files = resolve(py, wh, ["-c", str(constraints), "-r", str(deps)]) if deps.read_text().strip() else set()
    if nodeps.read_text().strip():
        files |= resolve(py, wh, ["--no-deps", "-r", str(nodeps)])
    return files


BENCHMARK_SKIP = {"datasets", "tests"}  # a benchmark folder's parts no image needs


def stage_imports(rdir: Path, folders: list[Path]) -> None:
    """rdir/imports.txt (what the sources in `folders` import) and rdir/compile_imports.py."""
    write_if_changed(rdir / "imports.txt", "".join(f"{m}\n" for m in imports.imports(folders)))
    write_if_changed(rdir / "compile_imports.py", (Path(__file__).parent / "compile_imports.py").read_text())


def benchmark_folders() -> dict[str, Path]:
    """{folder name: benchmarks/<folder>} of every benchmark package of the repository."""
    return {p.parent.name: p.parent for p in sorted((REPO / "benchmarks").glob("*/pyproject.toml"))}


def sync_benchmark(src: Path, dst: Path) -> None:
    """A benchmark folder without its datasets and tests (the images run its hooks only)."""
    dst.mkdir(parents=True, exist_ok=True)
    keep = set()
    for entry in sorted(src.iterdir()):
        if entry.name in BENCHMARK_SKIP or skip(entry.name):
            continue
        keep.add(entry.name)
        if entry.is_dir():
            sync_tree(entry, dst / entry.name)
        elif entry.is_file():
            if not ((dst / entry.name).exists() and filecmp.cmp(entry, dst / entry.name, shallow=False)):
                shutil.copy2(entry, dst / entry.name)
    for extra in dst.iterdir():
        if extra.name not in keep:
            shutil.rmtree(extra) if extra.is_dir() else extra.unlink()


def stage(wh: Path, py: str, ctx: Path, name: str | None) -> None:
    """One context folder: a base target's (name None), one component's or one runner image's."""
    constraints = REPO / "constraints.txt"
    comps = REPO / "components"
    ctx.mkdir(parents=True, exist_ok=True)
    write_if_changed(ctx / "constraints.txt", constraints.read_text())
    nested: dict[str, dict[str, Path]] = {}  # src/<top>/<sub> from a folder
    if name is None:  # base: pip, torch and the common library's dependencies
        torch_pin = [l.strip() for l in constraints.read_text().splitlines() if l.strip().startswith("torch==")]
        sets = {"tools": resolve(py, wh, ["pip", "setuptools", "wheel"]),
                "torch": resolve(py, wh, ["-c", str(constraints), *torch_pin]),
                "common": stage_reqs(wh, py, comps / "common" / "requirements.txt", ctx / "reqs" / "common")}
        srcs, req_names = {}, ["common"]
    elif images.is_runner(name):  # runner image: the core's deps, the runner's, then the sources
        sync_tree(REPO / "schemas", ctx / "schemas")
        pkgs = images.packages(name)
        sets = {"core": stage_reqs(wh, py, comps / images.CORE / "requirements.txt", ctx / "reqs" / "core"),
                "runner": stage_reqs(wh, py, images.runner_requirements(name), ctx / "reqs" / "runner")}
        stage_imports(ctx / "reqs" / "core", [comps / "common", comps / images.CORE])
        stage_imports(ctx / "reqs" / "runner", [comps / "common", comps / images.CORE, *pkgs])
        srcs, req_names = {"common": comps / "common", "core": comps / images.CORE}, ["core", "runner"]
        nested["runners"] = {d.name: d for d in pkgs}
    else:  # component: its dependencies, then the common library, schemas and its source
        sync_tree(REPO / "schemas", ctx / "schemas")
        sets = {"component": stage_reqs(wh, py, comps / name / "requirements.txt", ctx / "reqs" / "component")}
        stage_imports(ctx / "reqs" / "component", [comps / "common", comps / name, *benchmark_folders().values()])
        srcs, req_names = {"common": comps / "common", "component": comps / name}, ["component"]
        nested["benchmarks"] = benchmark_folders()
    for dest, src in srcs.items():  # src/<dest>
        sync_tree(src, ctx / "src" / dest)
    for top, subs in nested.items():  # src/<top>/<sub>, nothing else in src/<top>
        for sub, src in subs.items():
            (sync_benchmark if top == "benchmarks" else sync_tree)(src, ctx / "src" / top / sub)
        for extra in (ctx / "src" / top).iterdir():
            if extra.name not in subs:
                shutil.rmtree(extra) if extra.is_dir() else extra.unlink()
    for s, files in sets.items():
        link_set(wh, ctx / "wheels" / s, files)
    for top, keep in (("wheels", set(sets)), ("src", set(srcs) | set(nested)), ("reqs", set(req_names))):
        if (ctx / top).is_dir():
            for extra in (ctx / top).iterdir():
                if extra.name not in keep:
                    shutil.rmtree(extra)
    if name is None and (ctx / "schemas").is_dir():
        shutil.rmtree(ctx / "schemas")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--wheelhouse", type=Path, required=True)
    ap.add_argument("--context", type=Path, required=True, help="root: one folder per context under it")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    root, wh = a.context, a.wheelhouse.resolve()
    root.mkdir(parents=True, exist_ok=True)
    cache_file = root / ".resolve-cache.json"
    if cache_file.is_file():
        _CACHE.update(json.loads(cache_file.read_text()))
    # One context folder per build: BuildKit keeps each folder's last transfer and sends only
    # what changed, so separate folders keep every build's context warm.
    for target in BASE_TARGETS:
        stage(wh, a.python, root / f"_{target}", None)
    for name in a.names:
        try:
            stage(wh, a.python, root / name, name)
        except images.ImageError as exc:
            sys.exit(f"error: {exc}")
    cache_file.write_text(json.dumps(_CACHE, indent=0, sort_keys=True))


if __name__ == "__main__":
    main()
