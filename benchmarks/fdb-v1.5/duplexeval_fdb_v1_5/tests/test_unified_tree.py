"""The unified column on the golden fixture tree: the intended cases come out as built
(golden/README.md, "The tree")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import soundfile as sf

from duplexeval_fdb_v1_5.score import adaptation, checks, unified, vad

TREE = Path(__file__).resolve().parent / "golden" / "tree"


def _load(d: Path):
    info = checks.audio_info(d / "input.flac")
    for name in ("input", "output"):
        checks.check_twin(d.name, f"{name}.wav", checks.audio_info(d / f"{name}.flac"),
                          checks.audio_info(d / f"clean_{name}.flac"))
    S, E = checks.overlap_window(d.name, json.loads((d / "metadata.json").read_text()), info.seconds)
    segs = {}
    for name in ("output", "clean_output"):
        a, _ = sf.read(d / f"{name}.flac", dtype="float32")
        segs[name] = unified.segments_us(vad.speech_probs(a), len(a), int(info.seconds * 1e6))
    return unified.row((S, E), info.seconds, segs["output"], segs["clean_output"])


@pytest.fixture(scope="module")
def rows():
    return {d.name: dict(_load(d), eligible=True) for d in sorted((TREE / "user_interruption").iterdir())}


def test_cases(rows):
    r = rows
    assert r["0"]["exercised"] and r["0"]["credited_stop"] and r["0"]["outcome"] == "response"
    assert r["0"]["credited_response"] and 0.55 < r["0"]["latency_s"] < 0.65
    assert r["2"]["exercised"] and not r["2"]["credited_stop"] and r["2"]["yielded_s"] == 0   # keeps talking
    assert not r["3"]["exercised"] and r["3"]["stop_s"] is None                            # silent at S
    assert r["4"]["exercised"] and r["4"]["stop_in_clean"] and not r["4"]["credited_stop"]  # stops anyway
    assert r["6"]["credited_stop"] and r["6"]["outcome"] == "no_response"
    assert not r["9"]["exercised"] and r["9"]["outcome"] == "response"
    assert all(x["yielded_s"] >= 0 for x in r.values())


def test_summary(rows):
    s = unified.summary(list(rows.values()))
    assert s["counts"]["selected"] == 10 and s["counts"]["exercised"] == 8
    assert s["metrics"]["stop_in_clean_rate"]["count"] >= 1
    assert s["metrics"]["yielded_s"]["value"] > 0 and s["metrics"]["yielded_s"]["interval"][0] > 0


def test_window_features_pair_the_same_window():
    import numpy as np
    d = TREE / "user_interruption" / "0"
    out, _ = sf.read(d / "output.flac", dtype="float32", always_2d=True)
    cl, _ = sf.read(d / "clean_output.flac", dtype="float32", always_2d=True)
    words = json.loads((d / "output.json").read_text())["chunks"]
    cwords = json.loads((d / "clean_output.json").read_text())["chunks"]
    split = adaptation.split_time(json.loads((d / "metadata.json").read_text())["timestamps"][1], words, 7.5)
    w = adaptation.window_features(vad.adaptation_feed(out, 16000), words, vad.adaptation_feed(cl, 16000), cwords,
                                   split)
    assert w["post"]["wpm"] > 0 and w["clean_post"]["wpm"] > 0
    d = unified.adaptation_pairs([w], "wpm")
    assert d["n"] == 1 and d["value"] == pytest.approx(w["post"]["wpm"] - w["clean_post"]["wpm"])
    assert np.isfinite(d["interval"]).all()
