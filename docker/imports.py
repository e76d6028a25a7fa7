"""The third-party modules the duplexeval code of an image can import, for its bytecode.

    python3 docker/imports.py FOLDER...      one module per line on stdout

Each image's dependency layers install their wheels with `pip install --no-compile` and then run
docker/compile_imports.py on this list: Python writes the bytecode of what those imports load,
and only that. pip's default compiles every installed file (the tests of scipy, sympy and
networkx, each of transformers' hundreds of model folders), which was three quarters of an
install step's CPU (docs/performance.md, "CI"). A module left out is compiled in memory when a
container imports it, as Python does where it may not write (the containers' user cannot write
site-packages): slower to start, never different.

The list comes from the sources, parsed (ast), not imported: every `import a.b` (a.b), every
`from a.b import c` (a.b:c, the attribute asked for, so that a package that loads its
submodules lazily loads c's), and the module names given as string constants to
duplexeval_common.optional's import_optional and require and to importlib.import_module,
wherever they are (inside functions too: the heavy libraries are imported where they are used).
Relative imports, the standard library and duplexeval's own packages (installed after this
layer, compiled by pip as they install) are left out. Sorted, one per line: the same sources
give the same bytes, so a layer's cache key moves only when an import does.
"""

from __future__ import annotations

import ast
import functools
import sys
from pathlib import Path

SKIP_DIRS = {"__pycache__", "tests", "build", "dist"}
CALLS = {"import_optional": 1, "import_module": 0}  # function name -> index of the module argument


def _own(name: str) -> bool:
    top = name.split(":", 1)[0].split(".", 1)[0]
    return top.startswith("duplexeval") or top in sys.stdlib_module_names or top == "__future__"


def _strings(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return []


def _called(func: ast.AST) -> str:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def module_imports(tree: ast.AST) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add(node.module)
            out.update(f"{node.module}:{a.name}" for a in node.names if a.name != "*")
        elif isinstance(node, ast.Call):
            name = _called(node.func)
            if name in CALLS and len(node.args) > CALLS[name]:
                out.update(_strings(node.args[CALLS[name]]))
            elif name == "require" and len(node.args) > 1:
                out.update(_strings(node.args[1]))
    return {m for m in out if m and not _own(m)}


@functools.lru_cache(maxsize=None)
def folder_imports(folder: Path) -> frozenset[str]:
    """module_imports of every .py file under folder (not under SKIP_DIRS), once per process:
    staging every image reads the common library's sources for each of them."""
    out: set[str] = set()
    for path in sorted(folder.rglob("*.py")):
        if SKIP_DIRS & set(path.relative_to(folder).parts[:-1]):
            continue
        try:
            tree = ast.parse(path.read_bytes(), filename=str(path))
        except SyntaxError:
            continue
        out |= module_imports(tree)
    return frozenset(out)


def imports(folders: list[Path]) -> list[str]:
    return sorted(set().union(*(folder_imports(Path(f).resolve()) for f in folders)))


def main(argv: list[str]) -> None:
    for name in imports([Path(a) for a in argv]):
        print(name)


if __name__ == "__main__":
    main(sys.argv[1:])
