"""The images' bytecode (docker/imports.py, docker/compile_imports.py; docs/containers.md,
"Bytecode"), with no Docker engine: the import list read from sources, and compile_imports.py
writing the bytecode of what those imports load and of nothing else."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"duplexeval_docker_{name}", REPO / "docker" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_list_is_every_third_party_import_of_the_sources(tmp_path):
    pkg = tmp_path / "src" / "pkg"
    (pkg / "tests").mkdir(parents=True)
    (pkg / "__init__.py").write_text("import os, json\nimport numpy.linalg as la\nfrom . import sibling\n")
    (pkg / "lazy.py").write_text(
        "from __future__ import annotations\n"
        "from duplexeval_common import optional\n"
        "import duplexeval_asr.cli\n"
        "def f():\n"
        "    from transformers import AutoModel, AutoTokenizer\n"
        "    m = optional.import_optional('the backend', 'faster_whisper', 'pip install it')\n"
        "    optional.require('VAD', ['silero_vad', 'onnxruntime'], {})\n"
        "    import importlib\n"
        "    return importlib.import_module('scipy.signal')\n"
        "def g(name):\n"
        "    return optional.import_optional('x', name, 'hint')  # not a constant: not listed\n")
    (pkg / "tests" / "test_it.py").write_text("import pytest_only_in_tests\n")
    (pkg / "broken.py").write_text("def (:\n")
    got = load("imports").imports([tmp_path / "src"])
    assert got == ["faster_whisper", "numpy.linalg", "onnxruntime", "scipy.signal", "silero_vad", "transformers",
                   "transformers:AutoModel", "transformers:AutoTokenizer"]


def test_the_same_sources_give_the_same_bytes(tmp_path):
    out = [subprocess.run([sys.executable, str(REPO / "docker" / "imports.py"), str(REPO / "components" / "common"),
                           str(REPO / "components" / "judge")], capture_output=True, text=True, check=True).stdout
           for _ in range(2)]
    assert out[0] == out[1] and "transformers\n" in out[0] and "duplexeval" not in out[0]


def test_compile_imports_writes_the_bytecode_of_what_loads_and_nothing_else(tmp_path):
    site = tmp_path / "site"
    (site / "lib" / "sub").mkdir(parents=True)
    (site / "lib" / "__init__.py").write_text("from . import used\n")
    (site / "lib" / "used.py").write_text("X = 1\n")
    (site / "lib" / "unused.py").write_text("Y = 2\n")
    (site / "lib" / "sub" / "__init__.py").write_text("def __getattr__(name):\n"
                                                     "    import importlib\n"
                                                     "    return importlib.import_module('lib.sub.' + name)\n")
    (site / "lib" / "sub" / "lazy.py").write_text("Z = 3\n")
    (site / "lib" / "sub" / "other.py").write_text("W = 4\n")
    (site / "bad.py").write_text("raise ImportError('no native library here')\n")
    listing = tmp_path / "imports.txt"
    listing.write_text("lib\nlib.sub:lazy\nbad\nnot_a_module\nlib:not_an_attribute\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(site)
    r = subprocess.run([sys.executable, str(REPO / "docker" / "compile_imports.py"), str(listing)], env=env,
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("compile_imports: 2 of 5 imports loaded;"), r.stdout
    compiled = sorted(p.name.split(".")[0] for p in site.rglob("*.pyc"))
    # bad.py compiled before it raised; unused.py and sub/other.py, which nothing loaded, are not
    assert compiled == ["__init__", "__init__", "bad", "lazy", "used"]
    # with PYTHONDONTWRITEBYTECODE set it would write nothing: it says so and fails
    r = subprocess.run([sys.executable, str(REPO / "docker" / "compile_imports.py"), str(listing)],
                       env={**env, "PYTHONDONTWRITEBYTECODE": "1"}, capture_output=True, text=True)
    assert r.returncode == 1 and "PYTHONDONTWRITEBYTECODE" in r.stderr
