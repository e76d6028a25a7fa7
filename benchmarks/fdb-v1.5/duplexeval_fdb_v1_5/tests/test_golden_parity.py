"""The official column of the v1.5 scoring library equals what upstream's unchanged scripts
computed on tests/golden/tree (golden.json; golden/README.md says how it was made)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from duplexeval_fdb_v1_5.score import adaptation, behavior, significance, timing, vad

GOLDEN = Path(__file__).resolve().parent / "golden"
G = json.loads((GOLDEN / "golden.json").read_text())
SUBSETS = sorted(G["subsets"])
TOL = 1e-9
# Upstream computes pitch and intensity in float32 (adaptation.py follows it), and numpy's float32
# kernels (log10, mean, std) are picked by the CPU's SIMD features: golden.json's silent clean run
# has -100.00000762939453 dB where a machine with AVX2 and no AVX-512 computes -100.0 from the same
# formula. Those features compare to float32 precision (a few ulps), everything else to TOL.
FLOAT32_FEATURES = {"mean_pitch", "std_pitch", "mean_intensity", "std_intensity"}
FLOAT32_REL = 4 * 2.0 ** -23



def _read(d: Path, name: str):
    data, sr = sf.read(d / f"{name}.flac", dtype="float32", always_2d=True)
    return data, sr


def _json(d: Path, name: str):
    return json.loads((d / name).read_text())


def _samples(subset: str) -> list[Path]:
    return sorted(p for p in (GOLDEN / "tree" / subset).iterdir() if p.is_dir())


def close(a, b, path="") -> None:
    if isinstance(b, dict):
        assert isinstance(a, dict) and sorted(a) == sorted(b), f"{path}: keys {sorted(a)} != {sorted(b)}"
        for k in b:
            close(a[k], b[k], f"{path}.{k}")
    elif isinstance(b, list):
        assert isinstance(a, list) and len(a) == len(b), f"{path}: {a} != {b}"
        for i, (x, y) in enumerate(zip(a, b)):
            close(x, y, f"{path}[{i}]")
    elif isinstance(b, float):
        if math.isnan(b):
            assert math.isnan(a), f"{path}: {a} != nan"
        else:
            rel = FLOAT32_REL if path.rsplit(".", 1)[-1] in FLOAT32_FEATURES else 0
            assert a == pytest.approx(b, abs=TOL, rel=rel), f"{path}: {a} != {b}"
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


@pytest.fixture(scope="module", params=["onnx", "jit"])
def backend(request):
    return request.param


@pytest.fixture(scope="module")
def ours(backend):
    """Our official quantities for every sample of the tree, with one VAD backend (the adaptation
    features need praat-parselmouth, pinned in the aggregator's requirements)."""
    probs = lambda x: vad.speech_probs(x, backend)  # noqa: E731
    have_praat = importlib.util.find_spec("parselmouth") is not None
    out = {}
    for subset in SUBSETS:
        timing_, general = {}, {}
        for d in _samples(subset):
            u, usr = _read(d, "input")
            m, msr = _read(d, "output")
            uf, mf = vad.timing_feed(u, usr), vad.timing_feed(m, msr)
            timing_[d.name] = timing.latency_intervals(vad.segments(probs(uf), len(uf), vad.TIMING_SETTINGS),
                                                       vad.segments(probs(mf), len(mf), vad.TIMING_SETTINGS))
            if not have_praat:
                continue
            c, csr = _read(d, "clean_output")
            E = _json(d, "metadata.json")["timestamps"][1]
            general[d.name] = adaptation.sample_features(
                vad.adaptation_feed(m, msr), _json(d, "output.json")["chunks"], E,
                vad.adaptation_feed(c, csr), _json(d, "clean_output.json")["chunks"], probs, sample=f"{subset}/{d.name}")
        out[subset] = {"timing": timing_, "general": general if have_praat else None}
    return out


def _general(ours, subset):
    if ours[subset]["general"] is None:
        pytest.skip("the official pitch and intensity need praat-parselmouth")
    return ours[subset]["general"]


@pytest.mark.parametrize("subset", SUBSETS)
def test_latency_intervals(ours, subset):
    assert ours[subset]["timing"] == G["subsets"][subset]["timing"]


@pytest.mark.parametrize("subset", SUBSETS)
def test_general_split(ours, subset):
    close(_general(ours, subset), G["subsets"][subset]["general"], subset)


@pytest.mark.parametrize("subset", SUBSETS)
def test_general_aggregate(ours, subset):
    g = G["subsets"][subset]
    results = [_general(ours, subset)[sid] for sid in g["general_order"]]
    close(adaptation.aggregate(results), g["general_aggregate"], subset)


@pytest.mark.parametrize("subset", SUBSETS)
def test_significance(ours, subset):
    g = G["subsets"][subset]["significance"]
    tags = {d.name: (_json(d, "content_tag.json") if (d / "content_tag.json").exists() else None)
            for d in _samples(subset)}
    general = _general(ours, subset)
    rows = significance.rows({sid: (general[sid], tags[sid]) for sid in tags})
    if "error" in g:
        assert rows == [] and g["error"].startswith("FileNotFoundError: No C_RESPOND samples")
        return
    got, skipped = significance.tests(rows, G["significance_metrics"])
    assert [r["measure"] for r in got] == [r["measure"] for r in g["tests"]]
    assert [name for name, _ in skipped] == ["pre_vs_post:utmosv2", "clean_vs_post:utmosv2"]
    for ours_r, up in zip(got, g["tests"]):
        for k, v in up.items():
            if k == "conclusion":
                assert ours_r[k] == v
            else:
                close(ours_r[k], v, f"{up['measure']}.{k}")
    assert [r["conclusion"] for r in got] == g["pair_t"]


@pytest.mark.parametrize("subset", SUBSETS)
def test_behaviour_requests(subset):
    g = G["subsets"][subset]["behaviour"]
    for d in _samples(subset):
        key = f"{subset}/{d.name}"
        transcripts = {f: _json(d, f) for f in behavior.FILES.values()}
        sent = g["requests"][key]
        mine = behavior.requests(transcripts, max_attempts=len(sent))
        for req, up in zip(mine, sent):
            assert sorted(req) == up["keys"] and req["model"] == up["model"] and req["seed"] == up["seed"]
            assert [m["role"] for m in req["messages"]] == up["roles"]
            digest = hashlib.sha256(json.dumps(req["messages"], ensure_ascii=False, sort_keys=True)
                                    .encode("utf-8")).hexdigest()
            assert digest == up["messages_sha256"], key
        assert behavior.check_overlap(key, transcripts["input.json"], transcripts["output.json"]) in (0, 1)
    if "example_user_message" in g:
        d = GOLDEN / "tree" / subset / "3"
        msgs = behavior.messages({f: _json(d, f) for f in behavior.FILES.values()})
        assert msgs[1]["content"] == g["example_user_message"]
    # the stub's answers, parsed as upstream parsed them, and upstream's ratios
    for sid, tag in g["content_tags"].items():
        reply = 'Reasoning first. {"note": "no label here"} Final: {"behaviour": ["%s"]}' % tag["behaviour"][0]
        assert behavior.parse_reply(reply) == tag
    assert behavior.parse_reply("The model responds to the overlap; label C_RESPOND.") is None
    ratios = behavior.official_ratios(g["content_tags"])
    assert ratios["rounded"] == g["ratios"]


def test_golden_provenance():
    assert G["commit"] == "d7336bda1385872b83b48a8d45d9c0003836a60d"
    assert G["general_config"]["utmosv2"] is False and G["general_config"]["squim"] is False
    assert set(G["shimmed"]) <= {"torch.hub.load", "torchaudio.load", "utmosv2", "dotenv"}


def test_resampler_matches_torchaudio():
    torch = pytest.importorskip("torch")
    F = pytest.importorskip("torchaudio.functional")
    rng = np.random.default_rng(3)
    for orig, length in ((24000, 24011), (48000, 4801), (22050, 22050), (8000, 800)):
        x = (rng.standard_normal(length) * 0.3).astype(np.float32)
        ref = F.resample(torch.from_numpy(x), orig, 16000).numpy()
        got = vad.torchaudio_resample(x, orig, 16000)
        assert got.shape == ref.shape and np.abs(got - ref).max() < 1e-6
