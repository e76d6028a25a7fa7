"""The HTML templates travel with their packages: a wheel built from each package that has a
templates/ folder (what the images install, docker/Dockerfile.component and Dockerfile.benchmarks)
holds every template of its source."""

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# every package of the repository with templates (a benchmark added later is checked too)
PACKAGES = sorted(p.parent.relative_to(REPO).as_posix()
                  for top in ("components", "benchmarks", "docs/examples")
                  for p in (REPO / top).glob("**/pyproject.toml")
                  if any(p.parent.rglob("templates/*.html")))


def test_the_packages_with_templates_are_found():
    assert {"components/common", "components/orchestrator", "benchmarks/fdb-v1", "benchmarks/fdb-v1.5",
            "benchmarks/fdb-v2", "benchmarks/mtr", "docs/examples/hello-benchmark"} <= set(PACKAGES)


@pytest.mark.parametrize("folder", PACKAGES)
def test_a_wheel_holds_every_template(folder, tmp_path):
    src = REPO / folder
    templates = sorted(p.relative_to(src).as_posix() for p in src.rglob("templates/*.html"))
    assert templates, folder
    copy = tmp_path / "src"
    shutil.copytree(src, copy, ignore=shutil.ignore_patterns("tests", "datasets", "build", "*.egg-info",
                                                             "__pycache__"))
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                        "-q", "-w", str(tmp_path / "wheel"), str(copy)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    wheel, = (tmp_path / "wheel").glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert [t for t in templates if t not in names] == []
