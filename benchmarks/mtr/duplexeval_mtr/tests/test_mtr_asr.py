"""asr-aligner for MTR-DuplexBench: the round crop (round.json's start_s) and the two-channel
dialogue mode (user.json / model.json for the turn-segmenter), on Piper phrases placed at
known times (conftest.phrase_audio: first and last samples audible, so onsets are exact)."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

from duplexeval_common import schemas
from duplexeval_common.jsonio import read_json

from tests.conftest import command, write_stage
from tests.asr_aligner.conftest import SR, phrase_audio, zeros

WEATHER = "Please tell me about the weather."
LONDON = "Tomorrow it will rain in London."
COAT = "Bring a coat to work."
THANKS = "Thank you very much."
ONSET_TOL = 0.15  # tiny.en word timing on Piper speech (tests/asr_aligner/test_backends.py)


def run_stage(inputs, out, config=None):
    args = [command("asr-aligner"), "run", "--output", str(out)]
    for i in inputs:
        args += ["--input", str(i)]
    if config is not None:
        cfg = out.parent / f"{out.name}.config.json"
        cfg.write_text(json.dumps(config))
        args += ["--config", str(cfg)]
    return subprocess.run(args, capture_output=True, text=True)


def place(total_s: float, *parts: tuple[float, np.ndarray]) -> np.ndarray:
    """total_s of silence with each (start_s, audio) added at its exact sample."""
    out = zeros(total_s)
    for start, audio in parts:
        i = int(round(start * SR))
        out[i:i + len(audio)] += audio
    return out


def round_json(dialogue: str, k: int, start: float, end: float) -> dict:
    """A round.json of the MTR contract (format mtr-round/1); the stage reads its start_s."""
    return {"format": "mtr-round/1", "dialogue_id": dialogue, "round": k, "rounds": 10,
            "task": "features", "set": "smooth", "start_s": start, "end_s": end, "muted": [],
            "encoding": {"round": k, "scenario": "smooth-turntaking", "features": ["S"],
                         "timestamps": {"user_start": start, "user_end": start + 1.0}},
            "history": [], "user_lines": [{"start": start, "end": start + 1.0, "text": "hello"}],
            "source": "script"}


def statuses(out):
    return read_json(out / "stage.json")["samples"]


# --- rounds ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def rounds(tmp_path_factory):
    root = tmp_path_factory.mktemp("rounds")
    weather = phrase_audio(WEATHER)
    coat = phrase_audio(COAT)
    start_a = round(0.3 + len(weather) / SR + 0.5, 6)      # speech only before start_s
    start_b = round(0.3 + len(coat) / SR + 0.4, 6)         # history, then the model's reply
    reply_at = round(start_b + 0.6, 6)
    out_a = place(start_a + 1.5, (0.3, weather))
    out_b = place(reply_at + len(phrase_audio(LONDON)) / SR + 0.8, (0.3, coat), (reply_at, phrase_audio(LONDON)))
    write_stage(root / "in", {
        "smooth_features/d1-r01": {"output.wav": out_a, "round.json": round_json("d1", 1, start_a, start_a + 1.5)},
        "smooth_features/d1-r02": {"output.wav": out_b, "round.json": round_json("d1", 2, start_b, start_b + 2)},
        "smooth_features/d2-r01": {"output.wav": zeros(1.0), "round.json": round_json("d2", 1, 99.0, 100.0)},
        "smooth_features/d2-r02": {"output.wav": zeros(1.0), "round.json": round_json("d2", 2, 0.0, 1.0)},
        "smooth_features/d2-r03": {"output.wav": zeros(1.0), "round.json": {"start_s": "soon"}},
    })
    # round.json that is not JSON at all
    (root / "in/samples/smooth_features/d2-r02/round.json").write_text("{not json")
    # the crop is the mtr benchmark's rule (its asr hook): the stage's settings name the benchmark
    r = run_stage([root / "in"], root / "out", {"benchmark": "mtr"})
    return {"root": root, "out": root / "out", "proc": r, "start_a": start_a, "start_b": start_b,
            "reply_at": reply_at, "len_a": len(out_a), "len_b": len(out_b)}


def test_round_speech_only_before_start_gives_no_words(rounds):
    d = rounds["out"] / "samples/smooth_features/d1-r01"
    t = read_json(d / "transcript.json")
    assert schemas.problem("transcript", t) is None
    assert t["words"] == [] and t["text"] == "" and t["offset_s"] == rounds["start_a"]
    assert read_json(d / "output.json") == {"text": "", "chunks": []}
    v = read_json(d / "vad.json")
    assert schemas.problem("vad", v) is None
    # the VAD hears the same crop: the history speech before start_s is not in vad.json
    assert v["segments"] == [] and v["offset_s"] == rounds["start_a"]
    assert v["duration_s"] == round(rounds["len_a"] / SR, 6)  # the whole file: dialogue timeline


def test_round_reply_after_start_is_on_the_dialogue_timeline(rounds):
    d = rounds["out"] / "samples/smooth_features/d1-r02"
    t = read_json(d / "transcript.json")
    assert t["offset_s"] == rounds["start_b"]
    assert t["words"], t
    assert all(w["start"] >= rounds["start_b"] for w in t["words"])
    assert t["words"][0]["start"] == pytest.approx(rounds["reply_at"], abs=ONSET_TOL)
    assert "London" in t["text"] and "coat" not in t["text"].lower()
    assert all(w["no_speech"] is False for w in t["words"])
    o = read_json(d / "output.json")
    assert [c["timestamp"][0] for c in o["chunks"]] == [w["start"] for w in t["words"]]
    v = read_json(d / "vad.json")
    assert len(v["segments"]) == 1 and v["offset_s"] == rounds["start_b"]
    assert v["segments"][0]["start"] == pytest.approx(rounds["reply_at"], abs=0.1)


def test_bad_round_json_fails_only_that_sample_with_one_line(rounds):
    r = rounds["proc"]
    assert r.returncode == 1, r.stderr
    st = statuses(rounds["out"])
    assert st["smooth_features/d1-r01"]["status"] == "ok" and st["smooth_features/d1-r02"]["status"] == "ok"
    assert st["smooth_features/d2-r01"]["reason"] == "round start 99.0 s lies outside output.wav [0, 1.000] s"
    assert st["smooth_features/d2-r02"]["reason"].startswith("round.json is not valid JSON")
    assert st["smooth_features/d2-r03"]["reason"] == "round.json has no numeric start_s (got 'soon')"
    for sid in ("d2-r01", "d2-r02", "d2-r03"):
        assert f"error: smooth_features/{sid}: " in r.stderr
        assert not (rounds["out"] / f"samples/smooth_features/{sid}").exists()  # nothing half-written


# --- dialogue mode -------------------------------------------------------------------------

USER_AT = (0.5, 7.0)   # WEATHER, THANKS on the left (user) channel
MODEL_AT = 3.5         # LONDON on the right (model) channel


@pytest.fixture(scope="module")
def dialogue(tmp_path_factory):
    root = tmp_path_factory.mktemp("dialogue")
    total = USER_AT[1] + len(phrase_audio(THANKS)) / SR + 1.0
    left = place(total, (USER_AT[0], phrase_audio(WEATHER)), (USER_AT[1], phrase_audio(THANKS)))
    right = place(total, (MODEL_AT, phrase_audio(LONDON)))
    write_stage(root / "in", {
        "synthetic_dialogue_quality/dq1": {"dialogue.wav": np.stack([left, right], axis=1)},
        "synthetic_dialogue_quality/dq-mono": {"dialogue.wav": left},
        "synthetic_dialogue_quality/dq-three": {"dialogue.wav": np.stack([left, right, right], axis=1)},
        "smooth_features/d1-r01": {"output.wav": right, "round.json": round_json("d1", 1, 0.0, total)},
    })
    r = run_stage([root / "in"], root / "out", {"source": "dialogue"})
    d = root / "out/samples/synthetic_dialogue_quality/dq1"
    return {"root": root, "out": root / "out", "dir": d, "proc": r, "n": len(left),
            "user": read_json(d / "user.json") if (d / "user.json").is_file() else None,
            "model": read_json(d / "model.json") if (d / "model.json").is_file() else None,
            "phrase_s": {p: len(phrase_audio(p)) / SR for p in (WEATHER, THANKS, LONDON)}}


def test_dialogue_files_follow_the_channel_schema(dialogue):
    for role, side in (("user", "left"), ("model", "right")):
        obj = dialogue[role]
        assert obj is not None, dialogue["proc"].stderr
        assert schemas.problem("turn-segmenter-channel", obj) is None
        assert schemas.problem("transcript", obj) is None
        assert obj["role"] == role and obj["channel"] == side and obj["offset_s"] == 0.0
        assert obj["duration_s"] == round(dialogue["n"] / SR, 6)
        assert obj["backend"] == "faster-whisper" and len(obj["model_sha256"]) == 64
        assert obj["vad"]["settings"]["channel"] == side and len(obj["vad"]["model_sha256"]) == 64
        assert obj["segments"] and all(s["text"] and s["start"] <= s["end"] for s in obj["segments"])


def test_dialogue_words_fall_in_their_channel_at_the_known_times(dialogue):
    user, model = dialogue["user"], dialogue["model"]
    ps = dialogue["phrase_s"]
    assert "weather" in user["text"] and "Thank" in user["text"] and "London" not in user["text"]
    assert "London" in model["text"] and "weather" not in model["text"]
    first = [w for w in user["words"] if w["start"] < USER_AT[1] - 0.5]
    second = [w for w in user["words"] if w["start"] >= USER_AT[1] - 0.5]
    assert first and second
    assert first[0]["start"] == pytest.approx(USER_AT[0], abs=ONSET_TOL)
    assert second[0]["start"] == pytest.approx(USER_AT[1], abs=ONSET_TOL)
    assert all(w["end"] <= USER_AT[0] + ps[WEATHER] + ONSET_TOL for w in first)
    assert model["words"][0]["start"] == pytest.approx(MODEL_AT, abs=ONSET_TOL)
    assert all(MODEL_AT - ONSET_TOL <= w["start"] and w["end"] <= MODEL_AT + ps[LONDON] + ONSET_TOL
               for w in model["words"])


def test_dialogue_vad_segments_cover_the_words(dialogue):
    for role, spans in (("user", [(USER_AT[0], WEATHER), (USER_AT[1], THANKS)]), ("model", [(MODEL_AT, LONDON)])):
        obj = dialogue[role]
        vad = obj["vad_segments"]
        assert len(vad) == len(spans)
        for seg, (at, phrase) in zip(vad, spans):
            assert seg["start"] == pytest.approx(at, abs=0.1)
            assert seg["end"] == pytest.approx(at + dialogue["phrase_s"][phrase], abs=0.15)
        for w in obj["words"]:
            mid = (w["start"] + w["end"]) / 2
            assert any(s["start"] - 0.05 <= mid <= s["end"] + 0.05 for s in vad), (role, w)
            assert w["no_speech"] is False


def test_dialogue_vad_probs_are_the_segments_probabilities(dialogue):
    """vad_probs: one probability per 512-sample window, from the pass that made vad_segments:
    Silero's rule (duplexeval_common.vad.segments_from_probs, equal to silero's own) on them
    gives vad_segments back."""
    from duplexeval_common.vad import segments_from_probs
    for role in ("user", "model"):
        obj = dialogue[role]
        p = obj["vad_probs"]
        assert p["window_s"] == 0.032 and p["threshold"] == obj["vad"]["settings"]["threshold"] == 0.5
        assert len(p["values"]) == -(-dialogue["n"] // 512)
        assert all(v == round(v, 3) and 0 <= v <= 1 for v in p["values"])
        segs = segments_from_probs(p["values"], dialogue["n"], threshold=0.5, min_speech_duration_ms=250,
                                   min_silence_duration_ms=100, speech_pad_ms=30)
        assert [(round(x["start"] / SR, 3), round(x["end"] / SR, 3)) for x in segs] == \
            [(x["start"], x["end"]) for x in obj["vad_segments"]]


def test_segments_and_probs_is_one_pass_of_segments():
    from duplexeval_asr.vad import SileroVad
    vad = SileroVad()
    audio = place(6.0, (0.5, phrase_audio(WEATHER)), (3.5, phrase_audio(THANKS)))
    segs, probs = vad.segments_and_probs(audio)
    assert segs == vad.segments(audio) and len(segs) == 2
    assert probs.dtype == np.float32 and len(probs) == -(-len(audio) // 512)
    assert probs[int(1.0 * SR) // 512] > 0.5 > probs[int(3.0 * SR) // 512]
    segs, probs = vad.segments_and_probs(zeros(1.0))
    assert segs == [] and len(probs) == 32 and not probs.any()


def test_dialogue_segments_do_not_span_the_other_partys_turn(dialogue):
    user = dialogue["user"]
    assert user["segments_split_gap_s"] == 1.0
    # faster-whisper's VAD filter decodes both user phrases as one segment; it is split at the gap
    assert [s["text"] for s in user["segments"]] == [WEATHER, THANKS]
    for seg, at in zip(user["segments"], USER_AT):
        assert seg["start"] == pytest.approx(at, abs=ONSET_TOL)
    assert user["segments"][0]["end"] < MODEL_AT < user["segments"][1]["start"]
    assert [s["text"] for s in dialogue["model"]["segments"]] == [LONDON]


def test_split_segments_rule():
    from duplexeval_asr.backends import Segment, Word
    from duplexeval_asr.dialogue import split_segments
    ws = (Word("a", 0.5, 0.7), Word("b", 0.8, 1.0), Word("c", 2.0, None), Word("d", 3.1, 3.4))
    got = split_segments([Segment("A b c d", 0.4, 3.5, ws)])
    assert [(g.text, g.start, g.end) for g in got] == [("a b c", 0.4, 2.0), ("d", 3.1, 3.5)]
    one = Segment("Kept as is", 0.0, 1.0, (Word("Kept", 0.0, 0.3), Word("as", 1.3, 1.5)))  # gap exactly 1.0
    bare = Segment("no words", 5.0, 6.0)
    assert split_segments([one, bare]) == [one, bare]


def test_turn_segmenter_reads_the_channel_files(dialogue, tmp_path):
    from duplexeval_common.samples import Inputs
    from duplexeval_common.stage import SampleContext
    from duplexeval_segmenter.channels import asr_segments, read_channel, speech
    inputs = Inputs([dialogue["out"]])
    sample = next(s for s in inputs.samples() if s.key == "synthetic_dialogue_quality/dq1")
    ctx = SampleContext(sample, inputs, {}, tmp_path)
    for role in ("user", "model"):
        ch = read_channel(ctx, role)
        assert len(ch.words) == len(dialogue[role]["words"])
        assert ch.duration_s == dialogue[role]["duration_s"]
        spans, used = speech(ch, "auto")
        assert used == "vad_segments" and len(spans) == len(dialogue[role]["vad_segments"])
        lines, source = asr_segments(ch, 0.5)
        assert source == "segments" and [s.text for s in lines] == [s["text"] for s in dialogue[role]["segments"]]


def test_dialogue_mode_selects_dialogues_and_fails_non_stereo_ones(dialogue):
    r = dialogue["proc"]
    assert r.returncode == 1, r.stderr
    st = statuses(dialogue["out"])
    assert sorted(st) == ["synthetic_dialogue_quality/dq-mono", "synthetic_dialogue_quality/dq-three",
                          "synthetic_dialogue_quality/dq1"]  # the round sample is not this stage's
    assert st["synthetic_dialogue_quality/dq1"]["status"] == "ok"
    assert st["synthetic_dialogue_quality/dq-mono"]["reason"] == (
        "dialogue.wav has 1 channel(s); the dialogue mode needs a stereo file (left the user, right the model)")
    assert st["synthetic_dialogue_quality/dq-three"]["reason"].startswith("dialogue.wav has 3 channel(s)")
    assert not (dialogue["out"] / "samples/smooth_features").exists()
    assert sorted(p.name for p in dialogue["dir"].iterdir()) == ["_done.json", "model.json", "user.json"]


def test_dialogue_mode_is_deterministic(dialogue):
    root = dialogue["root"]
    write_stage(root / "again", {"synthetic_dialogue_quality/dq1": {
        "dialogue.wav": np.stack([place(2.5, (0.5, phrase_audio(WEATHER))), zeros(2.5)], axis=1)}})
    outs = []
    for name in ("again-1", "again-2"):
        r = run_stage([root / "again"], root / name, {"source": "dialogue"})
        assert r.returncode == 0, r.stderr
        d = root / name / "samples/synthetic_dialogue_quality/dq1"
        outs.append(((d / "user.json").read_bytes(), (d / "model.json").read_bytes()))
    assert outs[0] == outs[1]
    model = json.loads(outs[0][1])
    assert model["words"] == [] and model["vad_segments"] == [] and model["segments"] == []  # silent channel


@pytest.mark.parametrize("config, message", [
    ({"source": "dialogue", "backend": "precomputed"}, "cannot transcribe the channels of dialogue.wav"),
    ({"source": "dialogue", "channel": "left"}, "channel does not apply to source dialogue"),
    ({"source": "stereo"}, "at source: 'stereo' is not one of"),
])
def test_check_refuses_bad_dialogue_settings(tmp_path, config, message):
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps(config))
    r = subprocess.run([command("asr-aligner"), "check", "--config", str(cfg)], capture_output=True, text=True)
    assert r.returncode == 2 and message in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_check_accepts_dialogue_source(tmp_path):
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"source": "dialogue"}))
    r = subprocess.run([command("asr-aligner"), "check", "--config", str(cfg)], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
