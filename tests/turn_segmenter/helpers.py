"""Running the turn-segmenter stage in this process or as its command."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from duplexeval_common.cli import check_config
from duplexeval_common.jsonio import read_json
from duplexeval_segmenter.stage import make_stage

from ..conftest import command


def run_stage(inputs: Path, out: Path, config: dict) -> tuple[int, dict]:
    """(exit code, stage.json) of an in-process run."""
    check_config("turn-segmenter", config)
    rc = make_stage(config).run([inputs], out, config)
    return rc, read_json(out / "stage.json")


def run_cli(tmp_path: Path, inputs: Path, config: dict, out: str = "out", env: dict | None = None,
            sub: str = "run") -> subprocess.CompletedProcess:
    cfg = tmp_path / f"cfg-{out}.json"
    cfg.write_text(json.dumps(config))
    e = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    e.update(env or {})
    args = [command("turn-segmenter"), sub, "--config", str(cfg)]
    if sub == "run":
        args += ["--input", str(inputs), "--output", str(tmp_path / out)]
    return subprocess.run(args, capture_output=True, text=True, env=e, timeout=120)


def segmentation(out: Path, key: str) -> dict:
    return read_json(out / "samples" / key / "segmentation.json")


def boundaries_within(got: list[dict], truth: list[tuple[float, float]], tol: float = 0.1) -> bool:
    return len(got) == len(truth) and all(abs(g["start"] - s) <= tol and abs(g["end"] - e) <= tol
                                          for g, (s, e) in zip(got, truth))
