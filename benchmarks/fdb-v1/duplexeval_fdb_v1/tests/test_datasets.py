"""The built-in datasets: fdb-mini (all subsets) and a seeded tenth of fdb-synth, synthesized here.

Checks: Silero VAD (ONNX, one thread, the aggregator's code) against the pause, turn-end,
interruption and TRP annotations; the backchannel ground-truth file; the voices recorded per
sample; byte-identical output for 1 and 2 worker processes; the generator's --check; and the
one-line errors of the new script and config keys.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from duplexeval_common import schemas
from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.hashing import sha256_file
from duplexeval_common.jsonio import read_json
from duplexeval_tts import voices as voicemix
from duplexeval_fdb_v1.dataset.compose import BIN_S, backchannel_gt
from duplexeval_fdb_v1.dataset.stage import DatasetStage
from duplexeval_tts.synth import SYNTH as ENGINES
from duplexeval_fdb_v1.dataset.scripts import load_scripts, parse_entry

from tests.conftest import assert_same_sample_files, check_generator
from tests.tts_synth import conftest as tts_synth_conftest
from tests.tts_synth.conftest import run_cli, write_config

REPO = Path(__file__).resolve().parents[4]
MINI = REPO / "benchmarks" / "fdb-v1" / "datasets" / "fdb-mini"
SYNTH = REPO / "benchmarks" / "fdb-v1" / "datasets" / "fdb-synth"
SR = 16000
OFFICIAL_SIZES = {"synthetic_pause_handling": 137, "conversational_pause_handling": 216,
                  "conversational_turn_taking": 119, "synthetic_user_interruption": 200,
                  "synthetic_backchannel": 55}

# VAD agreement. Silero may not reach more than SILENCE_SIDE_S into an annotated silence (the
# annotation says digital zeros there), and must find speech within SPEECH_SIDE_S of each
# annotated speech edge: soft endings (fricatives, decays) that are above the trim threshold but
# that Silero does not call speech put its boundary up to ~0.16 s inside the speech.
SILENCE_SIDE_S = 0.030
SPEECH_SIDE_S = 0.200


def synthesize(source: Path, out: Path, **config) -> Path:
    return tts_synth_conftest.synthesize("fdb-v1", source, out, **config)


@pytest.fixture(scope="module")
def mini_all(tmp_path_factory) -> Path:
    """Every fdb-mini sample, with 2 worker processes."""
    return synthesize(MINI, tmp_path_factory.mktemp("mini") / "out", dataset="fdb-mini", jobs=2)


def tenth_keys() -> list[str]:
    """A seeded random tenth of fdb-synth (ceil(n / 10) of each subset)."""
    rng = random.Random(20261201)
    keys = []
    for subset, n in OFFICIAL_SIZES.items():
        keys += [f"{subset}/{i}" for i in sorted(rng.sample(range(n), math.ceil(n / 10)))]
    return keys


@pytest.fixture(scope="module")
def synth_tenth(tmp_path_factory) -> Path:
    return synthesize(SYNTH, tmp_path_factory.mktemp("synth") / "out", dataset="fdb-synth", jobs=2,
                      samples=tenth_keys())


# -- VAD --------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def onsets():
    """audio (16 kHz) -> onset times in s of Silero's speech segments (threshold 0.5, min speech 50 ms,
    min silence 100 ms, no padding: a short first word such as "Oh," counts)."""
    pytest.importorskip("silero_vad")
    from duplexeval_common import vad, vadcache
    vadcache._init_worker("onnx")  # one onnxruntime thread

    def run(audio: np.ndarray) -> list[float]:
        probs = vadcache.speech_probs(np.ascontiguousarray(audio, dtype=np.float32))
        segs = vad.segments_from_probs(probs, len(audio), threshold=0.5, min_speech_duration_ms=50,
                                       min_silence_duration_ms=100, speech_pad_ms=0)
        return [s["start"] / SR for s in segs]
    return run


def boundaries(sample: dict) -> list[tuple[str, str, float]]:
    """(what, "start" or "end" of speech, time) of each annotated edge next to a silence."""
    out = []
    for k, (a, b) in enumerate(sample.get("pauses", [])):
        out += [(f"pause {k} start", "end", a), (f"pause {k} end", "start", b)]
    if sample["task"] == "smooth_turn_taking":
        out.append(("turn end", "end", sample["turn_end_s"]))
    if "interrupt" in sample:
        out += [("interruption start", "start", sample["interrupt"]["start"]),
                ("interruption end", "end", sample["interrupt"]["end"])]
    for k, t in enumerate(sample.get("backchannel", {}).get("trps", [])):
        out.append((f"TRP {k}", "end", t))
    return out


def report(what: str, errors: list[float]) -> None:
    e = np.array(errors) * 1000
    print(f"\n{what}: {len(e)} edges, |Silero - annotation| median {np.median(e):.0f} ms, "
          f"p90 {np.percentile(e, 90):.0f} ms, max {e.max():.0f} ms, over 30 ms: {(e > 30).sum()}")


def vad_problems(tree: Path, onsets) -> tuple[list[str], list[float], int]:
    """Speech starts from a forward pass; speech ends as onsets of the time-reversed audio (a
    forward pass reports ends late, after its hysteresis)."""
    problems, errors, samples = [], [], 0
    for folder in sorted((tree / "samples").glob("*/*")):
        sample = read_json(folder / "sample.json")
        audio, sr = sf.read(str(folder / "input.wav"), dtype="float32")
        assert sr == SR
        samples += 1
        total = len(audio) / SR
        starts = onsets(audio)
        ends = [total - t for t in onsets(audio[::-1])]
        for what, kind, t in boundaries(sample):
            found = starts if kind == "start" else ends
            assert found, f"{sample['subset']}/{sample['id']}: Silero finds no speech"
            x = min(found, key=lambda v: abs(v - t))
            # signed: > 0 means Silero's speech reaches into the annotated silence
            into_silence = (t - x) if kind == "start" else (x - t)
            errors.append(abs(x - t))
            if into_silence > SILENCE_SIDE_S or -into_silence > SPEECH_SIDE_S:
                problems.append(f"{sample['subset']}/{sample['id']}: {what} at {t:.4f} s, Silero at {x:.4f} s "
                                f"(offset {1000 * (x - t):+.0f} ms)")
    return problems, errors, samples


def test_vad_agrees_with_fdb_mini(mini_all, onsets):
    problems, errors, n = vad_problems(mini_all, onsets)
    report("fdb-mini", errors)
    assert n == sum(len(s.entries) for s in load_scripts(MINI, None, voicemix.parse_specs).values())
    assert len(errors) > 3 * n // 2
    assert not problems, "\n".join(problems)
    assert float(np.median(errors)) <= SILENCE_SIDE_S


def test_vad_agrees_with_a_tenth_of_fdb_synth(synth_tenth, onsets):
    problems, errors, n = vad_problems(synth_tenth, onsets)
    report("fdb-synth tenth", errors)
    assert n == len(tenth_keys())
    assert not problems, "\n".join(problems)
    assert float(np.median(errors)) <= SILENCE_SIDE_S / 2


def test_vad_check_names_sample_and_offset(tmp_path, onsets):
    """A pause annotation shifted by 0.1 s is caught, with the sample and the offset."""
    out = synthesize(MINI, tmp_path / "out", dataset="fdb-mini", jobs=1,
                     samples=["synthetic_pause_handling/1"])
    sample_json = out / "samples" / "synthetic_pause_handling" / "1" / "sample.json"
    sample = read_json(sample_json)
    sample["pauses"][0][1] += 0.1  # says the silence lasts 0.1 s into the speech after it
    sample_json.write_text(json.dumps(sample))
    problems, _, _ = vad_problems(out, onsets)
    assert len(problems) == 1
    assert problems[0].startswith("synthetic_pause_handling/1: pause 0 end at ")
    assert "(offset -" in problems[0] and " ms)" in problems[0]


# -- formats ----------------------------------------------------------------------------------

def check_gt(tree: Path, subset: str) -> dict:
    gt = read_json(tree / "icc_gt_distribution.json")
    ids = sorted(p.name for p in (tree / "samples" / subset).iterdir())
    assert sorted(gt) == ids
    for key, hist in gt.items():
        sample = read_json(tree / "samples" / subset / key / "sample.json")
        assert len(hist) == int(sample["duration_s"] / BIN_S) + 1  # the evaluator's bin count
        assert all(v > 0 for v in hist) and abs(math.fsum(hist) - 1) < 1e-9  # positive: no inf JSD
        bc = sample["backchannel"]
        assert bc["bin_s"] == BIN_S and bc["trps"]
        # nearly all the mass lies from 0.5 s before to 1.2 s after a TRP
        near = [i for i in range(len(hist))
                if any(-0.5 <= (i + 0.5) * BIN_S - t <= 1.2 for t in bc["trps"])]
        assert sum(hist[i] for i in near) > 0.99, key
        transcription = read_json(tree / "samples" / subset / key / "transcription.json")
        assert [i["text"] for turn in transcription for i in turn["item"]] == \
            [s["text"] for s in sample["segments"]]
        assert all(set(turn) == {"speaker", "item"} for turn in transcription)
    return gt


def test_backchannel_ground_truth_file(mini_all, synth_tenth):
    assert len(check_gt(mini_all, "synthetic_backchannel")) == 3
    assert len(check_gt(synth_tenth, "synthetic_backchannel")) == math.ceil(55 / 10)
    folder = mini_all / "samples" / "synthetic_backchannel"
    durations = [read_json(p)["duration_s"] for p in folder.glob("*/sample.json")]
    assert all(20 <= d <= 32 for d in durations), durations


def test_backchannel_gt_function():
    hist = backchannel_gt([1.0], 5 * SR, SR)
    assert len(hist) == 26 and abs(sum(hist) - 1) < 1e-12
    assert int(np.argmax(hist)) == 6  # 1.0 + 0.3 s lies in the bin [1.2, 1.4)
    assert min(hist) > 0
    with pytest.raises(ValueError):
        backchannel_gt([], 5 * SR, SR)


def test_voices_recorded_per_sample(synth_tenth):
    manifest = read_json(synth_tenth / "manifest.json")
    assert schemas.problem("manifest", manifest) is None
    scripts = load_scripts(SYNTH, None, voicemix.parse_specs)
    engines, rates = set(), set()
    for row in manifest["samples"]:
        sample = read_json(synth_tenth / "samples" / row["subset"] / row["id"] / "sample.json")
        assert schemas.problem("sample", sample) is None
        speakers = sorted({s["speaker"] for s in sample["segments"]})
        assert sorted(sample["voices"]) == sorted(row["voices"]) == speakers
        script = scripts[row["subset"]]
        chosen = voicemix.choose(script.voices, script.seed, f"{row['subset']}/{row['id']}",
                                 ["user"] + [s for s in speakers if s != "user"])
        for speaker, v in sample["voices"].items():
            assert {k: v[k] for k in ("engine", "voice", "rate")} == chosen[speaker]
            assert row["voices"][speaker]["engine"] == v["engine"] and v["settings"]
            engines.add(v["engine"])
            rates.add(v["rate"])
        if "other" in sample["voices"]:
            u, o = sample["voices"]["user"], sample["voices"]["other"]
            assert (u["engine"], u["voice"]) != (o["engine"], o["voice"])
        for name, digest in row["files"].items():
            assert sha256_file(synth_tenth / "samples" / row["subset"] / row["id"] / name) == digest
    assert {"piper", "flite"} <= engines and len(rates) >= 3
    assert set(manifest["source"]["voice_mixes"]) == set(OFFICIAL_SIZES)


def test_interruption_has_the_official_timing(synth_tenth):
    for folder in (synth_tenth / "samples" / "synthetic_user_interruption").iterdir():
        sample = read_json(folder / "sample.json")
        ctx_n = sf.info(str(folder / "context.wav")).frames
        int_n = sf.info(str(folder / "interrupt.wav")).frames
        total = sf.info(str(folder / "input.wav")).frames
        assert total == ctx_n + 7 * SR + int_n + 15 * SR
        assert sample["interrupt"]["start"] * SR == pytest.approx(ctx_n + 7 * SR, abs=1e-6)


# -- determinism ------------------------------------------------------------------------------

def test_jobs_1_and_2_give_the_same_bytes(mini_all, synth_tenth, tmp_path):
    keys = ["synthetic_backchannel/0", "synthetic_pause_handling/0", "synthetic_user_interruption/2"]
    one = synthesize(MINI, tmp_path / "mini1", dataset="fdb-mini", jobs=1, samples=keys)
    synth_keys = [next(k for k in tenth_keys() if k.startswith(p))
                  for p in ("conversational_turn_taking/", "conversational_pause_handling/", "synthetic_backchannel/")]
    synth_one = synthesize(SYNTH, tmp_path / "synth1", dataset="fdb-synth", jobs=1, samples=synth_keys)
    for tree_one, tree_two, ks in ((one, mini_all, keys), (synth_one, synth_tenth, synth_keys)):
        assert_same_sample_files(tree_one, tree_two, ks)
    gt_one = read_json(synth_one / "icc_gt_distribution.json")
    gt_two = read_json(synth_tenth / "icc_gt_distribution.json")
    assert all(gt_one[k] == gt_two[k] for k in gt_one)


def test_generator_check(tmp_path):
    check_generator(SYNTH, OFFICIAL_SIZES, "samples", tmp_path, "synthetic_backchannel.json",
                    "monologue", "monologue ")


def test_fdb_synth_scripts_parse_and_are_distinct():
    scripts = load_scripts(SYNTH, None, voicemix.parse_specs)
    assert {s: len(sc.entries) for s, sc in scripts.items()} == OFFICIAL_SIZES
    for script in scripts.values():
        texts = [json.dumps(parse_entry(script.task, e, script.v2), sort_keys=True) for e in script.entries]
        assert len(set(texts)) == len(texts)
        assert script.v2 and script.voices and len({(v["engine"], v["voice"]) for v in script.voices}) >= 5
    conv = scripts["conversational_pause_handling"].entries
    assert all("prelude" in e for e in conv)
    assert len({p for e in conv for p in e["speech"] if not isinstance(p, str)}) >= 10  # varied pauses


# -- unhappy paths ----------------------------------------------------------------------------

def write_script(folder: Path, subset: str, doc: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{subset}.json").write_text(json.dumps({"subset": subset, **doc}))
    return folder


def test_bad_backchannel_entry_fails_only_its_sample(tmp_path):
    src = write_script(tmp_path / "ds", "synthetic_backchannel", {
        "format": "fdb-script/2", "voices": [{"engine": "piper", "voice": "joe"}],
        "samples": [{"monologue": ["Short one.", 0.4, "No place to answer."]},
                    {"monologue": ["A fine sentence.", {"trp": 0.5}, "Another one."]}]})
    cfg = write_config(tmp_path / "cfg.json", {"benchmark": "fdb-v1", "jobs": 1})
    r = run_cli(["run", "--input", src, "--output", tmp_path / "out", "--config", cfg])
    assert r.returncode == 1
    assert "error: synthetic_backchannel/0: bad script entry 0 in synthetic_backchannel.json: monologue " \
           "needs at least one" in r.stderr
    assert (tmp_path / "out" / "samples" / "synthetic_backchannel" / "1" / "input.wav").is_file()
    assert list(read_json(tmp_path / "out" / "icc_gt_distribution.json")) == ["1"]


@pytest.mark.parametrize("doc, message", [
    ({"format": "fdb-mini-script/1", "voices": [{"engine": "piper"}], "samples": [{"text": "Hi."}]},
     "voices needs format 'fdb-script/2'"),
    ({"format": "fdb-script/2", "voices": [{"engine": "piper", "rate": 3}], "samples": [{"text": "Hi."}]},
     "voices[0]: rate must be a number in [0.5, 2]"),
    ({"format": "fdb-script/2", "voices": [], "samples": [{"text": "Hi."}]}, "voices: expected a non-empty list"),
    ({"format": "fdb-script/2", "seed": -1, "samples": [{"text": "Hi."}]}, "seed must be a whole number"),
    ({"format": "fdb-script/2", "extra": 1, "samples": [{"text": "Hi."}]}, "unknown key(s) extra"),
])
def test_bad_script_files(tmp_path, doc, message):
    write_script(tmp_path, "synthetic_turn_taking", doc)
    with pytest.raises(DuplexEvalError) as exc:
        load_scripts(tmp_path, None, voicemix.parse_specs)
    assert message in str(exc.value) and "synthetic_turn_taking.json" in str(exc.value)


@pytest.mark.parametrize("entry, message", [
    ({"prelude": [{"speaker": "user", "text": "Hi.", "gap_s": 0.5}], "text": "Hello."}, "prelude[0].speaker"),
    ({"prelude": [{"speaker": "other", "text": "Hi.", "gap_s": 9}], "text": "Hello."}, "prelude[0].gap_s"),
    ({"speech": ["Um, well", 3.0, "yes."]}, "speech[1] must be a pause in seconds in (0, 2]"),
    ({"speech": ["a"], "text": "b"}, "'text' or 'speech', not both"),
])
def test_bad_v2_entries(entry, message):
    with pytest.raises(ValueError) as exc:
        parse_entry("smooth_turn_taking", entry, v2=True)
    assert message in str(exc.value)
    with pytest.raises(ValueError):  # v1 files keep their strict entry keys
        parse_entry("smooth_turn_taking", {"text": "Hi.", "prelude": []})


@pytest.mark.parametrize("config, message", [
    ({"jobs": 0}, "setting jobs must be null or a whole number >= 1"),
    ({"voices": [{"voice": "joe"}]}, "setting voices[0]: expected an object with engine"),
    ({"samples": ["no-slash"]}, "setting samples must be"),
])
def test_bad_config(config, message):
    with pytest.raises(DuplexEvalError) as exc:
        DatasetStage(config, ENGINES)
    assert message in str(exc.value)


def test_unknown_sample_key_and_two_backchannel_subsets(tmp_path):
    stage = DatasetStage({"samples": ["synthetic_pause_handling/99"]}, ENGINES)
    from duplexeval_common.samples import Inputs
    with pytest.raises(DuplexEvalError, match="setting samples names 1 sample"):
        stage.select(Inputs([MINI]), {})
    for name in ("a_backchannel", "b_backchannel"):
        write_script(tmp_path, name, {"format": "fdb-script/2",
                                      "samples": [{"monologue": ["A.", {"trp": 0.5}, "B."]}]})
    with pytest.raises(DuplexEvalError, match="at most one backchannel subset"):
        DatasetStage({}, ENGINES).select(Inputs([tmp_path]), {})


def test_voice_choice_is_deterministic_and_weighted():
    specs = voicemix.parse_specs("t", [{"engine": "piper", "voice": "joe", "weight": 9},
                                       {"engine": "flite", "voice": "slt", "weight": 1}])
    picks = [voicemix.choose(specs, 3, f"s/{i}", ["user", "other"]) for i in range(400)]
    assert picks == [voicemix.choose(specs, 3, f"s/{i}", ["user", "other"]) for i in range(400)]
    users = [p["user"]["engine"] for p in picks]
    assert 0.8 < users.count("piper") / len(users) < 0.97
    assert all(p["user"]["engine"] != p["other"]["engine"] for p in picks)
    assert picks != [voicemix.choose(specs, 4, f"s/{i}", ["user", "other"]) for i in range(400)]
