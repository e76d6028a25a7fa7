"""asr-aligner stage outputs: vad.json, stereo channel choice, the no-speech flag, null ends,
silence, and passing through precomputed transcripts."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

from duplexeval_common import schemas
from duplexeval_common.jsonio import read_json
from duplexeval_common.samples import Inputs
from duplexeval_common.stage import SampleContext

from ..conftest import command, write_stage
from .conftest import SR, phrase_audio, zeros


def run_stage(inputs, out, config=None, tmp=None):
    args = [command("asr-aligner"), "run", "--output", str(out)]
    for i in inputs:
        args += ["--input", str(i)]
    if config is not None:
        cfg = out.parent / f"{out.name}.config.json"
        cfg.write_text(json.dumps(config))
        args += ["--config", str(cfg)]
    return subprocess.run(args, capture_output=True, text=True)


@pytest.fixture(scope="module")
def stereo(tmp_path_factory):
    root = tmp_path_factory.mktemp("stereo")
    user = np.concatenate([zeros(0.3), phrase_audio("Please tell me about the weather."), zeros(3.0)])
    model = np.concatenate([zeros(2.5), phrase_audio("Tomorrow it will rain in London."), zeros(0.5)])
    n = max(len(user), len(model))
    pad = lambda x: np.concatenate([x, zeros((n - len(x)) / SR)])[:n]
    write_stage(root / "in", {"mtr_turn_taking/0": {"output.wav": np.stack([pad(user), pad(model)], axis=1)}})
    outs = {}
    for ch in ("left", "right", "mix"):
        r = run_stage([root / "in"], root / ch, {"channel": ch})
        assert r.returncode == 0, r.stderr
        outs[ch] = root / ch / "samples/mtr_turn_taking/0"
    return outs


def test_stereo_channel_choice(stereo):
    left = read_json(stereo["left"] / "transcript.json")
    right = read_json(stereo["right"] / "transcript.json")
    mix = read_json(stereo["mix"] / "transcript.json")
    assert left["channel"] == "left" and "weather" in left["text"] and "London" not in left["text"]
    assert right["channel"] == "right" and "London" in right["text"] and "weather" not in right["text"]
    assert mix["channel"] == "mix of 2" and "weather" in mix["text"] and "London" in mix["text"]
    assert right["words"][0]["start"] == pytest.approx(2.5, abs=0.15)


def test_vad_json_is_written_with_its_settings(stereo):
    for ch in ("left", "right"):
        v = read_json(stereo[ch] / "vad.json")
        assert schemas.problem("vad", v) is None
        assert v["settings"]["channel"] == ch and v["settings"]["threads"] == 1
        assert v["settings"]["threshold"] == 0.5 and len(v["model_sha256"]) == 64
        assert v["sample_rate"] == SR and v["duration_s"] > 4
    seg = read_json(stereo["right"] / "vad.json")["segments"]
    assert len(seg) == 1 and seg[0]["start"] == pytest.approx(2.5, abs=0.1)
    seg = read_json(stereo["left"] / "vad.json")["segments"]
    assert len(seg) == 1 and seg[0]["start"] == pytest.approx(0.3, abs=0.1)


def test_silent_output_gives_empty_transcript_and_no_vad_segments(tmp_path):
    write_stage(tmp_path / "in", {"synthetic_turn_taking/0": {"output.wav": zeros(2.0)},
                                  "synthetic_turn_taking/1": {"output.wav": (1e-4 * np.random.default_rng(0).standard_normal(32000)).astype(np.float32)}})
    for backend in ("faster-whisper", "whisper-timestamped"):
        out = tmp_path / backend
        r = run_stage([tmp_path / "in"], out, {"backend": backend})
        assert r.returncode == 0, r.stderr
        for sid in ("0", "1"):
            d = out / f"samples/synthetic_turn_taking/{sid}"
            assert read_json(d / "output.json") == {"text": "", "chunks": []}
            assert read_json(d / "transcript.json")["words"] == []
            assert read_json(d / "vad.json")["segments"] == []


class FakeBackend:
    """Words at fixed times: one in speech, one in the silence, one with a null end."""
    name, model, model_sha256 = "fake", "fake", "0" * 64
    settings = {"language": "en"}

    def transcribe(self, audio):
        from duplexeval_asr.backends import Word
        return [Word("hello", 0.55, 1.0, 0.9), Word("ghost", 3.2, 3.5, 0.2), Word("tail", 1.1, None, 0.5)]


def _context(tmp_path, files):
    write_stage(tmp_path / "in", {"synthetic_turn_taking/0": files})
    inputs = Inputs([tmp_path / "in"])
    sample = inputs.samples()[0]
    work = tmp_path / "work"
    work.mkdir()
    return SampleContext(sample, inputs, {}, work)


def test_word_in_silence_is_flagged_not_dropped_and_null_end_is_kept(tmp_path):
    from duplexeval_asr.align import transcribe_sample
    from duplexeval_asr.vad import SileroVad
    audio = np.concatenate([zeros(0.5), phrase_audio("Please tell me about the weather."), zeros(3.0)])
    ctx = _context(tmp_path, {"output.wav": audio})
    transcribe_sample(ctx, FakeBackend(), SileroVad(), "mix")
    t = read_json(ctx.work / "transcript.json")
    assert schemas.problem("transcript", t) is None
    assert [(w["text"], w["no_speech"]) for w in t["words"]] == [("hello", False), ("ghost", True), ("tail", False)]
    assert t["words"][2]["end"] is None
    o = read_json(ctx.work / "output.json")
    assert schemas.problem("output", o) is None
    assert o["chunks"][2] == {"text": "tail", "timestamp": [1.1, None]}  # as upstream: null end kept
    assert [c["text"] for c in o["chunks"]] == ["hello", "ghost", "tail"]


def test_in_silence_rule():
    from duplexeval_asr.backends import Word
    from duplexeval_asr.vad import in_silence
    seg = [(1.0, 2.0), (3.0, 3.5)]
    assert not in_silence(Word("a", 1.5, 1.7), seg)
    assert not in_silence(Word("a", 0.5, 1.1), seg)       # overlaps the start of a segment
    assert in_silence(Word("a", 2.1, 2.9), seg)
    assert in_silence(Word("a", 2.0, 3.0), seg)           # touches both, holds no speech
    assert not in_silence(Word("a", 3.2, None), seg)      # null end: the start decides
    assert in_silence(Word("a", 2.5, None), seg)
    assert in_silence(Word("a", 0.1, 0.2), [])


def test_precomputed_passes_imported_words_through(tmp_path):
    imported_transcript = {"backend": "parakeet", "model": "parakeet-tdt-0.6b-v2", "model_sha256": "a" * 64,
                           "settings": {}, "text": "hi there", "offset_s": 0.0,
                           "words": [{"text": "hi", "start": 0.6, "end": 0.8, "probability": None},
                                     {"text": "there", "start": 0.9, "end": None, "probability": None}]}
    official = {"text": "yes", "chunks": [{"text": "yes", "timestamp": [4.0, 4.2]}]}
    audio = np.concatenate([zeros(0.5), phrase_audio("Please tell me about the weather."), zeros(1.0)])
    write_stage(tmp_path / "in", {
        "synthetic_turn_taking/0": {"output.wav": audio, "transcript.json": imported_transcript},
        "synthetic_user_interruption/0": {"output.wav": zeros(5.0), "output.json": official,
                                          "interrupt.json": [{"context": "c", "interrupt": "i", "timestamp": [1.0, 3.0]}]}})
    r = run_stage([tmp_path / "in"], tmp_path / "out", {"backend": "precomputed"})
    assert r.returncode == 0, r.stderr
    d = tmp_path / "out/samples/synthetic_turn_taking/0"
    t = read_json(d / "transcript.json")
    assert t["backend"] == "precomputed" and t["precomputed"]["backend"] == "parakeet"
    assert [(w["text"], w["start"], w["end"]) for w in t["words"]] == [("hi", 0.6, 0.8), ("there", 0.9, None)]
    assert read_json(d / "output.json")["chunks"][1]["timestamp"] == [0.9, None]
    d = tmp_path / "out/samples/synthetic_user_interruption/0"
    assert read_json(d / "output.json") == official  # already in output.wav time: not shifted again
    t = read_json(d / "transcript.json")
    assert t["precomputed"]["file"] == "output.json" and t["words"][0]["no_speech"] is True
