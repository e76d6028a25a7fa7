"""The dataset stage (tts-synth with fdb-v2's builder) on the built-in task sets: a valid
live.json and sample.json for every task, the manifest, --limit and --subset."""

from __future__ import annotations

import json

import pytest

from duplexeval_common import schemas
from duplexeval_fdb_v2.live import DEFAULT_DURATION_S, check_live
from duplexeval_fdb_v2.tasks import load_tasks

from tests.tts_synth.conftest import synthesize

from .conftest import BUILTIN, MINI


def build(source, out, **config):
    return synthesize("fdb-v2", source, out, **config)


@pytest.fixture(scope="module")
def builtin(tmp_path_factory):
    return build(BUILTIN, tmp_path_factory.mktemp("v2ds") / "out", dataset="fdb-v2-builtin")


def test_every_builtin_task_gets_a_valid_live_json(builtin):
    tasks = load_tasks(BUILTIN)
    manifest = json.loads((builtin / "manifest.json").read_text())
    schemas.validate("manifest", manifest, "manifest.json")
    assert len(manifest["samples"]) == 24
    for row in manifest["samples"]:
        folder = builtin / "samples" / row["subset"] / row["id"]
        assert sorted(p.name for p in folder.iterdir() if not p.name.startswith(("_", "."))) == ["live.json", "sample.json"]
        assert set(row["files"]) == {"live.json", "sample.json"}
        live = json.loads((folder / "live.json").read_text())
        assert check_live(live, row["id"]) == []
        task = tasks[row["id"]]
        assert row["subset"] == row["task"] == task.kind
        assert live["duration_s"] == DEFAULT_DURATION_S and live["sample_rate"] == 16000
        assert live["examiner"]["opening"] == task.opening
        assert [g["say"] for g in live["examiner"]["goals"]] == [g.say for g in task.goals]
        sample = json.loads((folder / "sample.json").read_text())
        schemas.validate("sample", sample, row["id"])
        assert sample["segments"] == [] and sample["task"] == task.kind and sample["dataset"] == "fdb-v2-builtin"


def test_limit_and_subsets(tmp_path):
    out = build(BUILTIN, tmp_path / "a", limit=1, subsets=["safety", "daily"])
    rows = json.loads((out / "manifest.json").read_text())["samples"]
    assert [(r["subset"], r["id"]) for r in rows] == [("daily", "daily-01"), ("safety", "safety-01")]
    out = build(MINI, tmp_path / "b")
    assert len(json.loads((out / "manifest.json").read_text())["samples"]) == 4
