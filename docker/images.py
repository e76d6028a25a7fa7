"""The duplexeval images: which exist, where each one's package lives, what it installs.

    python3 docker/images.py list                 every image name, one a line: each component
                                                  with a Dockerfile, then runner-<name> for each
                                                  runner package with one
    python3 docker/images.py dir NAME             the package folder of image NAME
    python3 docker/images.py version NAME         its [project] version (the image's tag)
    python3 docker/images.py kind NAME            `runner` or `component`
    python3 docker/images.py packages NAME        the duplexeval packages a runner image installs
                                                  beyond common and the core: its duplexeval
                                                  runner dependencies (transitively), then itself
    python3 docker/images.py requirements NAME..  the requirements.txt files these images install
                                                  from, one a line (for the wheelhouse)
    python3 docker/images.py needs-torch NAME     exit 0 when the image needs torch (torch-base)
    python3 docker/images.py buildable NAME       exit 0 when NAME can be built on the bases here; else
                                                  exit 1 and say why in one line (a package whose
                                                  [tool.duplexeval] python is not the bases' Python)
    python3 docker/images.py skipped              the images `list` leaves out, one a line, with why
    .venv/bin/python docker/images.py benchmark-digests   {benchmark: source digest} of the benchmark
                                                  packages under benchmarks/ (those the component
                                                  images hold: their label)

Image names: a component components/<name>/ (with a Dockerfile) gives duplexeval/<name>; a runner
package components/runners/<name>/ gives duplexeval/runner-<name>. Every runner image holds the
common library, the schemas, the runner core (components/duplex-runner, whose `duplex-runner`
command is the entrypoint), the runner package and the duplexeval runner packages it depends on
(its pyproject.toml dependencies named duplexeval-*). The core has no image of its own.

A runner package that asks for another Python than the bases' (`[tool.duplexeval] python = "3.12"`
in its pyproject.toml: its own local environment is made with that interpreter) is left out of
`list` (so of `make images`), and building it is refused with the reason: the bases are Debian
bookworm's Python 3.11 (docker/base-image.sh, Dockerfile.base) and the wheelhouse holds wheels for it.
"""

from __future__ import annotations

import re
import sys
import tomllib
from functools import lru_cache
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import reqs  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
COMPONENTS = REPO / "components"
RUNNERS = COMPONENTS / "runners"
RUNNER_PREFIX = "runner-"
CORE = "duplex-runner"      # the runner core's folder under components/
SHARED = ("common", CORE)   # installed in every runner image by their own steps


class ImageError(Exception):
    pass


def is_runner(name: str) -> bool:
    return name.startswith(RUNNER_PREFIX)


def package_dir(name: str) -> Path:
    """components/runners/<x> for runner-<x>, else components/<name>."""
    d = RUNNERS / name[len(RUNNER_PREFIX):] if is_runner(name) else COMPONENTS / name
    if not (d / "pyproject.toml").is_file():
        raise ImageError(f"{name}: no {d.relative_to(REPO)}/pyproject.toml")
    return d


def _project(d: Path) -> dict:
    with open(d / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]


def version(name: str) -> str:
    return _project(package_dir(name))["version"]


BASE_PYTHON = "3.11"  # the bases' Python: Debian bookworm's python3 (docker/base-image.sh)


def _all_image_names() -> list[str]:
    comps = sorted(d.name for d in COMPONENTS.iterdir()
                   if (d / "Dockerfile").is_file() and (d / "pyproject.toml").is_file())
    runners = sorted(RUNNER_PREFIX + d.name for d in RUNNERS.iterdir()
                     if (d / "Dockerfile").is_file() and (d / "pyproject.toml").is_file()) if RUNNERS.is_dir() else []
    return comps + runners


def unbuildable_reason(name: str) -> str | None:
    """Why image NAME cannot be built on the bases here, or None."""
    with open(package_dir(name) / "pyproject.toml", "rb") as f:
        want = str(tomllib.load(f).get("tool", {}).get("duplexeval", {}).get("python", "") or "")
    if want and want != BASE_PYTHON:
        return (f"{name}: its package asks for Python {want} ([tool.duplexeval] python in "
                f"{package_dir(name).relative_to(REPO)}/pyproject.toml) but the bases have Python {BASE_PYTHON} "
                f"(Debian bookworm); it runs in its own local environment (scripts/setup-runner-venv.sh)")
    return None


def image_names() -> list[str]:
    """Every image that can be built here (those of `make images`)."""
    return [n for n in _all_image_names() if unbuildable_reason(n) is None]


def skipped_images() -> dict[str, str]:
    return {n: r for n in _all_image_names() if (r := unbuildable_reason(n)) is not None}


@lru_cache(maxsize=1)
def _projects() -> dict[str, Path]:
    """Normalized project name -> folder, for every duplexeval package in the repository."""
    out = {}
    for p in sorted([*COMPONENTS.glob("*/pyproject.toml"), *RUNNERS.glob("*/pyproject.toml")]):
        try:
            out[reqs.norm(_project(p.parent)["name"])] = p.parent
        except (KeyError, tomllib.TOMLDecodeError):
            continue
    return out


_DEP = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def _local_deps(d: Path) -> list[Path]:
    out = []
    for dep in _project(d).get("dependencies", []):
        m = _DEP.match(dep)
        name = reqs.norm(m.group(1)) if m else ""
        if not name.startswith("duplexeval"):
            continue
        if name not in _projects():
            raise ImageError(f"{d.relative_to(REPO)}: depends on {name}, which is no package here")
        out.append(_projects()[name])
    return out


def packages(name: str) -> list[Path]:
    """A runner image's duplexeval packages beyond common and the core, dependencies first."""
    if not is_runner(name):
        raise ImageError(f"{name} is no runner image (runner-<name>)")
    shared = {COMPONENTS / s for s in SHARED}
    order: list[Path] = []
    visiting: list[Path] = []

    def visit(d: Path) -> None:
        if d in order or d in shared:
            return
        if d in visiting:
            raise ImageError(f"dependency cycle: {' -> '.join(p.name for p in [*visiting, d])}")
        visiting.append(d)
        for dep in _local_deps(d):
            visit(dep)
        visiting.pop()
        order.append(d)

    visit(package_dir(name))
    for d in order:
        if d.parent != RUNNERS:
            raise ImageError(f"{name}: depends on {d.relative_to(REPO)}, which is not a runner package")
    return order


def requirement_files(name: str) -> list[Path]:
    """The requirements.txt files image NAME installs from (a runner's: the core's, its
    dependencies', its own)."""
    dirs = [COMPONENTS / CORE, *packages(name)] if is_runner(name) else [package_dir(name)]
    return [d / "requirements.txt" for d in dirs if (d / "requirements.txt").is_file()]


def runner_requirements(name: str) -> str:
    """The pinned requirement lines of a runner image's packages (dependencies', then its own),
    each name once: the text its own install step splits (docker/reqs.py)."""
    seen: dict[str, tuple[str, Path]] = {}
    for d in packages(name):
        f = d / "requirements.txt"
        if not f.is_file():
            continue
        for n, line in reqs.requirement_lines(f):
            if n in seen and seen[n][0].replace(" ", "") != line.replace(" ", ""):
                raise ImageError(f"{name}: {seen[n][1].relative_to(REPO)} asks for {seen[n][0]!r} but "
                                 f"{f.relative_to(REPO)} for {line!r}")
            seen.setdefault(n, (line, f))
    return "".join(f"{line}\n" for line, _ in seen.values())


def needs_torch(name: str) -> bool:
    return any(n == "torch" for f in requirement_files(name) for n, _ in reqs.requirement_lines(f))


def main(argv: list[str]) -> int:
    try:
        if argv == ["list"]:
            print("\n".join(image_names()))
        elif len(argv) == 2 and argv[0] == "dir":
            print(package_dir(argv[1]))
        elif len(argv) == 2 and argv[0] == "version":
            print(version(argv[1]))
        elif len(argv) == 2 and argv[0] == "kind":
            print("runner" if is_runner(argv[1]) else "component")
        elif len(argv) == 2 and argv[0] == "packages":
            print("\n".join(str(d) for d in packages(argv[1])))
        elif len(argv) >= 2 and argv[0] == "requirements":
            files = dict.fromkeys(f for n in argv[1:] for f in requirement_files(n))
            print("\n".join(str(f) for f in files))
        elif argv == ["skipped"]:
            for n, why in skipped_images().items():
                print(why)
        elif len(argv) == 2 and argv[0] == "buildable":
            why = unbuildable_reason(argv[1])
            if why:
                print(f"images.py: cannot build {why}", file=sys.stderr)
                return 1
        elif len(argv) == 2 and argv[0] == "needs-torch":
            return 0 if needs_torch(argv[1]) else 1
        elif argv == ["benchmark-digests"]:  # (run by the repository's python: it imports the common library)
            from duplexeval_common import benchmarks
            import json
            repo = (Path(__file__).resolve().parent.parent / "benchmarks").resolve()
            baked = {n: benchmarks.get(n) for n in benchmarks.names()}  # only those the images hold
            print(json.dumps({n: b.digest() for n, b in baked.items() if b.folder.parent == repo},
                             sort_keys=True, separators=(",", ":")))
        else:
            print(__doc__, file=sys.stderr)
            return 2
    except ImageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
