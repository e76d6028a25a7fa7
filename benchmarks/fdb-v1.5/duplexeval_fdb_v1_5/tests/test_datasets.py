"""The built-in datasets against Silero VAD: every fdb-v1.5-mini sample and a seeded tenth of
fdb-v1.5-synth. The overlap window agrees with Silero (ONNX, one thread) within the bounds of the
FDB v1.0 dataset tests (benchmarks/fdb-v1/duplexeval_fdb_v1/tests/test_datasets.py: 30 ms into a
silence, 200 ms into the speech, the median offset at most 30 ms for the mini set and 15 ms for
the synth tenth), and no annotated silence of either input holds speech for Silero; the voices
recorded per sample; 1 and 2 worker processes give the same bytes; the generator's --check and
the synth scripts' ranges.

What Silero does not count as speech (the annotations are exact by construction): on the files as
written, over all 499 fdb-v1.5-synth samples, Silero's speech never reaches more than 14 ms into
an annotated silence, but 28 of the 2994 edges lie more than 200 ms inside the annotated speech:
the quiet last word of 4 background events (-17 to -19.5 dB, up to 448 ms), one breathy "Oh,
okay." (flite rms, 247 ms), the first ~200 ms of flite kal16's pieces, and the rising ends of
questions (Piper joe at rate 0.9, up to 390 ms). So the window's speech side is measured on the
event at its rendered level, and the context's speech side is printed, not bounded."""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest
import soundfile as sf

from duplexeval_common import schemas
from duplexeval_common.hashing import sha256_file
from duplexeval_common.jsonio import read_json
from duplexeval_tts import voices as voicemix

from duplexeval_fdb_v1_5.dataset.scripts import load_scripts, parse_entry
from duplexeval_fdb_v1_5.schemas import SCHEMAS
from duplexeval_fdb_v1_5.tasks import TASKS

from tests.conftest import assert_same_sample_files, check_generator

from .conftest import SR, SYNTH, synthesize

OFFICIAL_SIZES = {"user_interruption": 200, "user_backchannel": 99, "talking_to_other": 100,
                  "background_speech": 100}
# The bounds of the FDB v1.0 dataset tests: Silero's speech may reach at most SILENCE_SIDE_S into
# an annotated silence, and must be found within SPEECH_SIDE_S of every annotated speech edge
# (soft endings that are above the trim threshold but that Silero does not call speech put its
# boundary inside the speech); the median error at most SILENCE_SIDE_S (mini) or half of it (synth).
SILENCE_SIDE_S = 0.030
SPEECH_SIDE_S = 0.200


def tenth_keys() -> list[str]:
    """A seeded random tenth of fdb-v1.5-synth (ceil(n / 10) of each subset)."""
    rng = random.Random(20261202)
    keys = []
    for subset, n in OFFICIAL_SIZES.items():
        keys += [f"{subset}/{i}" for i in sorted(rng.sample(range(n), math.ceil(n / 10)))]
    return keys


@pytest.fixture(scope="module")
def synth_tenth(tmp_path_factory):
    return synthesize(SYNTH, tmp_path_factory.mktemp("v15synth") / "out", dataset="fdb-v1.5-synth", jobs=2,
                      samples=tenth_keys())


@pytest.fixture(scope="module")
def onsets():
    """audio (16 kHz) -> onset times in s of Silero's speech segments (threshold 0.5, min speech 50 ms,
    min silence 100 ms, no padding), as the FDB v1.0 dataset tests run it."""
    pytest.importorskip("silero_vad")
    from duplexeval_common import vad, vadcache
    vadcache._init_worker("onnx")  # one onnxruntime thread

    def run(audio: np.ndarray) -> list[float]:
        probs = vadcache.speech_probs(np.ascontiguousarray(audio, dtype=np.float32))
        segs = vad.segments_from_probs(probs, len(audio), threshold=0.5, min_speech_duration_ms=50,
                                       min_silence_duration_ms=100, speech_pad_ms=0)
        return [s["start"] / SR for s in segs]
    return run


def edges(sample: dict) -> list[tuple[str, str, float]]:
    """(what, "start" or "end" of speech, time) of each annotated edge next to digital silence:
    the context and the overlap window."""
    ctx, ov = sample["context"], sample["overlap"]
    return [("context start", "start", ctx["start"]), ("context end", "end", ctx["end"]),
            ("overlap start", "start", ov["start"]), ("overlap end", "end", ov["end"])]


def heard(audio: np.ndarray, onsets) -> tuple[list[float], list[float]]:
    """Silero's speech starts from a forward pass and its ends as onsets of the time-reversed
    audio (a forward pass reports ends late, after its hysteresis)."""
    total = len(audio) / SR
    return onsets(audio), [total - t for t in onsets(audio[::-1])]


def offset(found: list[float], kind: str, t: float) -> tuple[float, float]:
    """(Silero's nearest edge, how far its speech reaches into the annotated silence: > 0 into the
    silence, < 0 inside the annotated speech)."""
    x = min(found, key=lambda v: abs(v - t))
    return x, (t - x) if kind == "start" else (x - t)


def vad_problems(tree, onsets) -> tuple[list[str], list[float], int]:
    """Three checks per sample (module docstring of the test below):

    - the files as written (input.wav: the context and the window; clean_input.wav: the context):
      Silero's speech reaches at most SILENCE_SIDE_S into an annotated silence, and hears nothing
      inside the window of clean_input.wav;
    - the window, on the event at its rendered level (input.wav - clean_input.wav, the event's
      gain undone: Silero is not level-invariant, and misses a quiet last word of background
      speech at -19 dB): Silero finds speech within SPEECH_SIDE_S of both edges and reaches at
      most SILENCE_SIDE_S outside them.

    Returns (problems, |offsets| of the edges of the files as written, samples)."""
    problems, errors, samples = [], [], 0
    for folder in sorted((tree / "samples").glob("*/*")):
        sample = read_json(folder / "sample.json")
        key = f"{sample['subset']}/{sample['id']}"
        ov = sample["overlap"]
        samples += 1
        audio = {}
        for name in ("input.wav", "clean_input.wav"):
            audio[name], sr = sf.read(str(folder / name), dtype="float64")
            assert sr == SR
        event = (audio["input.wav"] - audio["clean_input.wav"]) * 10 ** (-ov["level_db"] / 20)
        for name, marks, both_sides in (
                ("input.wav", edges(sample), False),
                ("clean_input.wav", edges(sample)[:2], False),
                ("the event at its rendered level", edges(sample)[2:], True)):
            signal = audio.get(name, event).astype(np.float32)
            starts, ends = heard(signal, onsets)
            if name == "clean_input.wav" and any(ov["start"] - SILENCE_SIDE_S < t < ov["end"] for t in starts):
                problems.append(f"{key}: Silero hears speech in the window of clean_input.wav")
            for what, kind, t in marks:
                found = starts if kind == "start" else ends
                assert found, f"{key}: Silero finds no speech in {name}"
                x, into_silence = offset(found, kind, t)
                if not both_sides:
                    errors.append(abs(x - t))
                if into_silence > SILENCE_SIDE_S or (both_sides and -into_silence > SPEECH_SIDE_S):
                    problems.append(f"{key}: {name} {what} at {t:.4f} s, Silero at {x:.4f} s "
                                    f"(offset {1000 * (x - t):+.0f} ms)")
    return problems, errors, samples


def report(what: str, errors: list[float]) -> None:
    e = np.array(errors) * 1000
    print(f"\n{what}: {len(e)} edges, |Silero - annotation| median {np.median(e):.0f} ms, "
          f"p90 {np.percentile(e, 90):.0f} ms, max {e.max():.0f} ms, over 30 ms: {(e > 30).sum()}")


def test_vad_agrees_with_fdb_v15_mini(mini, onsets):
    problems, errors, n = vad_problems(mini, onsets)
    report("fdb-v1.5-mini", errors)
    assert n == 8 and len(errors) == 6 * n
    assert not problems, "\n".join(problems)
    assert float(np.median(errors)) <= SILENCE_SIDE_S


def test_vad_agrees_with_a_tenth_of_fdb_v15_synth(synth_tenth, onsets):
    problems, errors, n = vad_problems(synth_tenth, onsets)
    report("fdb-v1.5-synth tenth", errors)
    assert n == len(tenth_keys())
    assert not problems, "\n".join(problems)
    assert float(np.median(errors)) <= SILENCE_SIDE_S / 2


def test_vad_check_names_sample_and_offset(mini, onsets, tmp_path):
    """A window shifted by 0.1 s is caught, with the sample and the offset."""
    out = tmp_path / "tree"
    src = mini / "samples" / "user_backchannel" / "1"
    dst = out / "samples" / "user_backchannel" / "1"
    dst.mkdir(parents=True)
    for p in src.iterdir():
        (dst / p.name).write_bytes(p.read_bytes())
    sample = read_json(dst / "sample.json")
    sample["overlap"]["start"] += 0.1  # says the silence before the event lasts 0.1 s into it
    (dst / "sample.json").write_text(json.dumps(sample))
    problems, _, _ = vad_problems(out, onsets)
    assert len(problems) == 2  # seen in input.wav as written and in the event at its level
    for where, p in zip(("input.wav", "the event at its rendered level"), problems):
        assert p.startswith(f"user_backchannel/1: {where} overlap start at ")
        assert p.endswith("(offset -100 ms)"), p


def test_voices_recorded_per_sample(synth_tenth):
    manifest = read_json(synth_tenth / "manifest.json")
    assert schemas.problem("manifest", manifest) is None
    scripts = load_scripts(SYNTH, None, voicemix.parse_specs)
    engines, rates = set(), set()
    for row in manifest["samples"]:
        sample = read_json(synth_tenth / "samples" / row["subset"] / row["id"] / "sample.json")
        assert SCHEMAS.problem("sample", sample) is None and schemas.problem("sample", sample) is None
        speakers = ["user"] + (["other"] if sample["overlap"]["speaker"] == "other" else [])
        assert sorted(sample["voices"]) == sorted(row["voices"]) == sorted(speakers)
        script = scripts[row["subset"]]
        chosen = voicemix.choose(script.voices, script.seed, f"{row['subset']}/{row['id']}", speakers)
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
    assert set(manifest["source"]["voice_mixes"]) == set(TASKS)


def test_twins_of_the_synth_tenth(synth_tenth):
    for folder in sorted((synth_tenth / "samples").glob("*/*")):
        sample = read_json(folder / "sample.json")
        a = sf.read(str(folder / "input.wav"), dtype="int16")[0]
        b = sf.read(str(folder / "clean_input.wav"), dtype="int16")[0]
        s, e = sample["overlap"]["start_sample"], sample["overlap"]["end_sample"]
        diff = np.flatnonzero(a != b)
        assert len(a) == len(b) and diff[0] == s and diff[-1] == e - 1, folder
        assert read_json(folder / "metadata.json")["timestamps"] == [sample["overlap"]["start"], sample["overlap"]["end"]]


def test_jobs_1_and_2_give_the_same_bytes(synth_tenth, tmp_path):
    keys = [next(k for k in tenth_keys() if k.startswith(f"{t}/")) for t in ("background_speech", "talking_to_other")]
    one = synthesize(SYNTH, tmp_path / "one", dataset="fdb-v1.5-synth", jobs=1, samples=keys)
    assert_same_sample_files(one, synth_tenth, keys)


def test_generator_check(tmp_path):
    check_generator(SYNTH, OFFICIAL_SIZES, "samples", tmp_path, "user_backchannel.json", "Uh-huh", "Uh-uh")


def test_synth_scripts_are_distinct_and_in_range():
    scripts = load_scripts(SYNTH, None, voicemix.parse_specs)
    assert {s: len(sc.entries) for s, sc in scripts.items()} == OFFICIAL_SIZES
    for subset, script in scripts.items():
        entries = [parse_entry(script.task, e) for e in script.entries]
        assert len({(e["context"], e["event"]) for e in entries}) == len(entries)
        assert len({e["context"] for e in entries}) >= 60 and len({e["event"] for e in entries}) >= 12
        assert isinstance(script.voices, list) and len({(v["engine"], v["voice"]) for v in script.voices}) >= 5
        for e in entries:
            assert 2.0 <= e["delay_s"] <= 4.0 and e["trailing_s"] == 8.0
            low, high = {"user_interruption": (0, 0), "user_backchannel": (-6, -3),
                         "talking_to_other": (-10, -4), "background_speech": (-20, -15)}[subset]
            assert low <= e["level_db"] <= high
            assert (e["lowpass_hz"] is not None) == (subset == "background_speech")
            if e["lowpass_hz"] is not None:
                assert 2000 <= e["lowpass_hz"] <= 4000
