"""This benchmark's tests never write the real user cache (~/.cache/duplexeval): the shared
package-scoped fixture of tests/conftest.py, autouse here. `mini` is the whole fdb-v1.5-mini,
synthesized once per session with 2 worker processes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import isolated_user_cache  # noqa: F401  (the fixture used below)
from tests.tts_synth import conftest as tts_synth_conftest

REPO = Path(__file__).resolve().parents[4]
DATASETS = REPO / "benchmarks" / "fdb-v1.5" / "datasets"
MINI = DATASETS / "fdb-v1.5-mini"
SYNTH = DATASETS / "fdb-v1.5-synth"
SR = 16000


@pytest.fixture(scope="package", autouse=True)
def _isolated_user_cache(isolated_user_cache):
    yield


def synthesize(source: Path, out: Path, **config) -> Path:
    """The dataset stage (tts-synth's, with this benchmark's builder) on a script folder."""
    return tts_synth_conftest.synthesize("fdb-v1.5", source, out, **config)


@pytest.fixture(scope="session")
def mini(tmp_path_factory) -> Path:
    """Every fdb-v1.5-mini sample, with 2 worker processes."""
    return synthesize(MINI, tmp_path_factory.mktemp("v15mini") / "out", dataset="fdb-v1.5-mini", jobs=2)
