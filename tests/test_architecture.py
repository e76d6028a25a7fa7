"""The architecture README.md and docs/architecture.md state, checked on the source itself.

- Components never import each other: a component's modules import the standard library,
  third-party packages, duplexeval_common and their own package only (a runner package: also the
  runner core, duplexeval_runner, and the runner packages its pyproject.toml depends on).
- A benchmark package imports duplexeval_common and itself only (its tests aside): whatever a hook
  needs of a component comes as the hook's arguments.
- No import cycle inside any package (module-level imports).
- Components know no benchmark by name: no string literal under components/ is the name of an
  installed benchmark (or of the next ones, fdb-v1.5 and fdb-v2).
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
COMPONENTS = REPO / "components"
BENCHMARKS = REPO / "benchmarks"
STDLIB = set(sys.stdlib_module_names)


def packages_under(root: Path) -> dict[str, Path]:
    """{top-level package name: its folder} of every package folder directly in root/*/."""
    out = {}
    for d in sorted(root.glob("*/*/__init__.py")):
        out[d.parent.name] = d.parent
    for d in sorted(root.glob("runners/*/*/__init__.py")):
        out[d.parent.name] = d.parent
    return out


def modules(pkg_dir: Path, skip_tests: bool = True):
    for p in sorted(pkg_dir.rglob("*.py")):
        if skip_tests and "tests" in p.relative_to(pkg_dir).parts:
            continue
        yield p


def imports(path: Path, top_level_only: bool = False) -> list[tuple[str, int]]:
    """(absolute module name, line) of every import in a file (relative ones resolved)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    parts = list(path.with_suffix("").parts)
    out = []
    nodes = tree.body if top_level_only else ast.walk(tree)
    for node in nodes:
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                pkg_parts = _package_parts(path)
                base = pkg_parts[: len(pkg_parts) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
                if node.module is None:  # from . import a, b
                    out += [(f"{mod}.{a.name}", node.lineno) for a in node.names]
                else:
                    out.append((mod, node.lineno))
            else:
                out.append((node.module, node.lineno))
    del parts
    return out


def _package_parts(path: Path) -> list[str]:
    """The dotted package of a module file, from the __init__.py files above it."""
    parts, d = [], path.parent
    while (d / "__init__.py").is_file():
        parts.insert(0, d.name)
        d = d.parent
    return parts


def runner_deps(pkg_dir: Path) -> set[str]:
    """The duplexeval runner packages a runner package's pyproject.toml depends on (modules)."""
    pp = pkg_dir.parent / "pyproject.toml"
    deps = tomllib.loads(pp.read_text()).get("project", {}).get("dependencies", []) if pp.is_file() else []
    return {d.replace("-", "_").replace("duplexeval_runner_", "duplexeval_runner_") for d in deps
            if d.startswith("duplexeval-runner")} | {"duplexeval_runner"}


OURS = re.compile(r"^duplexeval(_[a-z0-9_]+)?$")


def test_components_import_only_common_and_themselves():
    comps = packages_under(COMPONENTS)
    bad = []
    for name, d in comps.items():
        allowed = {name, "duplexeval_common"}
        if "runners" in d.parts:
            allowed |= runner_deps(d)
        for path in modules(d):
            for mod, line in imports(path):
                top = mod.split(".")[0]
                if OURS.match(top) and top not in allowed:
                    bad.append(f"{path.relative_to(REPO)}:{line} imports {mod}")
    assert not bad, "components import each other:\n" + "\n".join(bad)


def test_benchmarks_import_only_common_and_themselves():
    bad = []
    for name, d in packages_under(BENCHMARKS).items():
        for path in modules(d):
            for mod, line in imports(path):
                top = mod.split(".")[0]
                if OURS.match(top) and top not in (name, "duplexeval_common"):
                    bad.append(f"{path.relative_to(REPO)}:{line} imports {mod}")
    assert not bad, "a benchmark imports a component:\n" + "\n".join(bad)


def _cycles(pkg_dir: Path) -> list[list[str]]:
    pkg = pkg_dir.name
    graph: dict[str, set[str]] = {}
    names = {}
    for path in modules(pkg_dir):
        mod = ".".join(_package_parts(path) + ([] if path.name == "__init__.py" else [path.stem]))
        names[mod] = path
    for mod, path in names.items():
        graph[mod] = set()
        for imp, _ in imports(path, top_level_only=True):
            if not imp.startswith(pkg):
                continue
            # `from pkg import sub` names the submodule when there is one
            target = imp if imp in names else imp.rsplit(".", 1)[0] if imp.rsplit(".", 1)[0] in names else None
            if target and target != mod and not mod.startswith(target + "."):  # a package's own __init__
                graph[mod].add(target)
    found, state = [], {}

    def visit(m: str, stack: list[str]) -> None:
        state[m] = 1
        for n in sorted(graph.get(m, ())):
            if state.get(n) == 1:
                found.append(stack[stack.index(n):] + [n] if n in stack else [m, n])
            elif n not in state:
                visit(n, stack + [n])
        state[m] = 2
    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    return found


@pytest.mark.parametrize("root", [COMPONENTS, BENCHMARKS], ids=["components", "benchmarks"])
def test_no_import_cycles(root):
    cycles = {name: c for name, d in packages_under(root).items() if (c := _cycles(d))}
    assert not cycles, f"module-level import cycles: {cycles}"


def test_components_know_no_benchmark_by_name():
    from duplexeval_common.benchmarks import names
    known = set(names()) | {"fdb-v1.5", "fdb-v2"}
    known |= {n.replace("-", "_") for n in known}
    bad = []
    for path in sorted(COMPONENTS.rglob("*.py")):
        if any(part.endswith(".egg-info") for part in path.parts):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in known:
                bad.append(f"{path.relative_to(REPO)}:{node.lineno} {node.value!r}")
    assert not bad, "a component names a benchmark:\n" + "\n".join(bad)


def test_readme_states_what_these_tests_check():
    readme = (REPO / "README.md").read_text()
    assert "Components never import each other" in readme
    assert "benchmarks/<name>/" in readme
