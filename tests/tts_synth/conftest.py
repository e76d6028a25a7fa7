"""Fixtures of the tts-synth tests: a small synthesized fdb-mini, built once per session."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DATASET = REPO / "benchmarks" / "fdb-v1" / "datasets" / "fdb-mini"
SUBSETS = ("synthetic_backchannel", "synthetic_pause_handling", "synthetic_turn_taking", "synthetic_user_interruption")


def run_cli(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "duplexeval_tts.cli", *map(str, args)],
                          capture_output=True, text=True)


def write_config(path: Path, cfg: dict) -> Path:
    path.write_text(json.dumps(cfg))
    return path


def synthesize(benchmark: str, source: Path, out: Path, **config) -> Path:
    """The dataset stage (tts-synth's, with the benchmark's builder) on a script folder, in this process."""
    from duplexeval_tts.cli import make_stage
    config = {"benchmark": benchmark, **config}
    code = make_stage(config).run([source], out, config)
    assert code == 0, (out / "stage.json").read_text()
    return out


@pytest.fixture(scope="session")
def mini(tmp_path_factory) -> Path:
    """The first sample of each fdb-mini subset (pause sample 0 has two pauses), by the real command."""
    root = tmp_path_factory.mktemp("tts")
    cfg = write_config(root / "cfg.json", {"benchmark": "fdb-v1", "dataset": "fdb-mini", "limit": 1})
    r = run_cli(["run", "--input", DATASET, "--output", root / "out", "--config", cfg])
    assert r.returncode == 0, r.stderr
    return root / "out"
