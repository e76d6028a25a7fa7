"""Where things live: the repository, the store and the runs."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
COMPONENTS = REPO / "components"
DATASETS = REPO / "datasets"


def home() -> Path:
    """The folder holding store/ and runs/ ($DUPLEXEVAL_HOME, default: the current folder)."""
    return Path(os.environ.get("DUPLEXEVAL_HOME", ".")).resolve()


def store_dir(root: Path | None = None) -> Path:
    return (root or home()) / "store"


def runs_dir(root: Path | None = None) -> Path:
    return (root or home()) / "runs"


def datasets_dir(root: Path | None = None) -> Path:
    """Imported datasets, one folder each: <home>/datasets/<name>/ (`duplexeval import`)."""
    return (root or home()) / "datasets"


# Each model's runner is a package of its own, components/runners/<name>, run by the core's
# `duplex-runner` command; its stage component (image duplexeval/runner-<name>, local command,
# identity) is named `runner-<name>`.
RUNNER_PREFIX = "runner-"
VENVS = REPO / ".venvs"


def is_runner(component: str) -> bool:
    return component.startswith(RUNNER_PREFIX)


def component_dir(component: str) -> Path:
    if is_runner(component):
        return COMPONENTS / "runners" / component[len(RUNNER_PREFIX):]
    return COMPONENTS / component


def component_command(component: str) -> str:
    """The command a component's stage runs: every runner package runs the core's."""
    return "duplex-runner" if is_runner(component) else component


def _project(component: str) -> str:
    p = component_dir(component) / "pyproject.toml"
    return p.read_text() if p.is_file() else ""


def component_sources(component: str) -> list[Path]:
    """The source folders a component's stage runs: a runner package, the runner packages it
    depends on (duplexeval-runner-<name> in its pyproject.toml) and the core."""
    import re
    if not is_runner(component):
        return [component_dir(component)]
    out, todo = [], [component]
    while todo:
        c = todo.pop()
        d = component_dir(c)
        if d in out:
            continue
        out.append(d)
        todo += [RUNNER_PREFIX + n for n in re.findall(r'"duplexeval-runner-([a-z0-9-]+)', _project(c))]
    return out + [COMPONENTS / "duplex-runner"]


def own_environment(component: str) -> Path | None:
    """The virtualenv of a runner package whose pins conflict with the others'
    (`environment = "own"` in its pyproject.toml; made by scripts/setup-runner-venv.sh)."""
    import re
    if is_runner(component) and re.search(r'^environment\s*=\s*"own"', _project(component), re.M):
        return VENVS / component
    return None
