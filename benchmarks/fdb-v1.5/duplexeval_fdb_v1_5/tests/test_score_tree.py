"""`aggregator score --benchmark fdb-v1.5` (`make score BENCHMARK=fdb-v1.5 TREE=... OUT=...`) on a
tree in upstream's layout: the golden fixture tree (tests/golden/tree, stored as FLAC, written out
as WAV here), whose numbers upstream's unchanged scripts produced (golden.json): the whole scorer
gives the same latency lists, behaviour ratios and adaptation means. Then the bad inputs of the
issue, each one line naming its sample, the others scored, nothing half-written."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from pathlib import Path

import pytest
import soundfile as sf

from duplexeval_common.jsonio import read_json, read_jsonl

from tests.conftest import command

GOLDEN = Path(__file__).parent / "golden"
G = json.loads((GOLDEN / "golden.json").read_text())


def wav_tree(dst: Path) -> Path:
    for p in sorted((GOLDEN / "tree").rglob("*")):
        rel = p.relative_to(GOLDEN / "tree")
        if p.is_dir():
            (dst / rel).mkdir(parents=True, exist_ok=True)
        elif p.suffix == ".flac":
            data, sr = sf.read(str(p), dtype="int16", always_2d=True)
            sf.write(str(dst / rel.with_suffix(".wav")), data, sr, subtype="PCM_16")
        else:
            shutil.copyfile(p, dst / rel)
    return dst


def score(tree: Path, out: Path, *args):
    return subprocess.run([command("aggregator"), "score", "--benchmark", "fdb-v1.5", "--tree", str(tree),
                           "--out", str(out), "--quiet", *args], capture_output=True, text=True)


def close(a, b, where=""):
    if isinstance(b, dict):
        assert set(a) == set(b), where
        for k in b:
            close(a[k], b[k], f"{where}.{k}")
    elif isinstance(b, float):
        assert math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9), (where, a, b)
    else:
        assert a == b, where


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    root = tmp_path_factory.mktemp("tree")
    tree = wav_tree(root / "tree")
    r = score(tree, root / "out")
    assert r.returncode == 0, r.stderr
    return tree, root / "out"


def test_the_scorer_equals_upstreams_scripts_on_the_golden_tree(scored):
    _, out = scored
    metrics = read_json(out / "metrics.json")
    rows = {r["sample_id"]: r for r in read_jsonl(out / "samples.jsonl")}
    for subset, g in G["subsets"].items():
        for sid, lists in g["timing"].items():
            assert rows[f"{subset}/{sid}"]["latency_intervals"] == lists, (subset, sid)
        b = metrics["subsets"][subset]["official"]["behaviour"]
        tags = [t for p in sorted((GOLDEN / "tree" / subset).glob("*/content_tag.json"))
                for t in json.loads(p.read_text())["behaviour"]]
        if tags:  # the tree's own labels, counted per tag as eval_behavior.py's stats_by_axis does
            assert b["rounded"] == {"C": {t: round(tags.count(t) / len(tags), 2) for t in sorted(set(tags))}}
        else:
            assert b is None
        pytest.importorskip("parselmouth")
        close(metrics["subsets"][subset]["official"]["adaptation"]["trimmed_means"], g["general_aggregate"], subset)
    assert (out / "report.md").read_text().startswith("# duplexeval report: Full-Duplex-Bench v1.5")


def _break(tree: Path, how: str) -> str:
    d = tree / "user_interruption" / "1"
    if how == "clean-length":
        data, sr = sf.read(str(d / "clean_input.wav"), dtype="int16")
        sf.write(str(d / "clean_input.wav"), data[:-160], sr, subtype="PCM_16")
        return "clean_input.wav has"
    if how == "window-outside":
        meta = json.loads((d / "metadata.json").read_text())
        meta["timestamps"] = [meta["timestamps"][0], 999.0]
        (d / "metadata.json").write_text(json.dumps(meta))
        return "lies outside the audio"
    if how == "window-reversed":
        meta = json.loads((d / "metadata.json").read_text())
        meta["timestamps"] = [meta["timestamps"][1], meta["timestamps"][0]]
        (d / "metadata.json").write_text(json.dumps(meta))
        return "reversed"
    (d / "clean_output.wav").unlink()
    return "clean_output.wav is missing"


@pytest.mark.parametrize("how", ["clean-length", "window-outside", "window-reversed", "missing-clean"])
def test_bad_input_is_one_line_and_the_rest_is_scored(tmp_path, how):
    tree = wav_tree(tmp_path / "tree")
    text = _break(tree, how)
    r = score(tree, tmp_path / "strict")
    assert r.returncode == 2 and r.stderr.startswith("error: user_interruption/1: ") and text in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "strict").exists()
    r = score(tree, tmp_path / "out", "--exclude-invalid")
    assert r.returncode == 0, r.stderr
    assert "excluded: user_interruption/1:" in r.stderr
    m = read_json(tmp_path / "out" / "metrics.json")
    (bad,) = m["subsets"]["user_interruption"]["invalid"]
    assert bad["sample_id"] == "user_interruption/1" and text in bad["problem"]
    rows = {x["sample_id"]: x for x in read_jsonl(tmp_path / "out" / "samples.jsonl")}
    assert not rows["user_interruption/1"]["eligible"]
    assert sum(x["eligible"] for x in rows.values()) == len(rows) - 1
