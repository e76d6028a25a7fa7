"""The MTR dataset stage: round samples and dialogues built from a tiny script with flite voices,
checked against the layout by construction."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from duplexeval_common import schemas
from duplexeval_common.hashing import sha256_file
from duplexeval_common.jsonio import read_json
from duplexeval_common.samples import Inputs
from duplexeval_tts.cli import make_stage
from duplexeval_tts.engines import TRIM_THRESHOLD
from duplexeval_tts.synth import SYNTH
from duplexeval_mtr.dataset.build import MtrStage
from duplexeval_mtr.schemas import SCHEMAS

SR = 16000
LOUD = int(TRIM_THRESHOLD * 32767) - 1
VOICES = {"user": {"engine": "flite", "voice": "awb"}, "model": {"engine": "flite", "voice": "slt"},
          "background": {"engine": "flite", "voice": "kal"}}

MIX = {"format": "mtr-script/1", "set": "S+I+P+B", "voices": VOICES, "dialogues": [
    {"id": "good", "opener": "Hi, what can I do for you today?", "rounds": [
        {"features": ["I", "P"], "user": "Can you tell me what the weather will be like tomorrow?",
         "pause": {"after_word": 4, "length_s": 1.5}, "interrupt_at": 0.3, "reply_gap_s": 0.5,
         "response": "Tomorrow looks sunny and warm, with a light breeze and no rain at all."},
        {"features": ["S", "B"], "user": "Great, should I bring a jacket?", "gap_s": 0.6, "reply_gap_s": 0.4,
         "response": "A light jacket is a good idea, since it gets a little cool after sunset.",
         "background": {"text": "Dinner is ready!", "at": 0.3}},
        {"features": ["S", "B"], "user": "What time is sunset tomorrow?", "gap_s": 0.5, "reply_gap_s": 0.5,
         "response": "Sunset is at about eight in the evening, so you will have plenty of daylight for a "
                     "long walk by the river after dinner.",
         "background": {"text": "Dinner time!", "at": 0.45}},
        {"features": ["I", "P"], "user": "And will it rain on the weekend?", "interrupt_at": 0.5,
         "pause": {"after_word": 3, "length_s": 1.2}, "reply_gap_s": 0.3,
         "response": "The weekend should stay dry."}]},
    {"id": "broken", "opener": "Hello!", "rounds": [
        {"features": ["S"], "user": "Hi there.", "gap_s": 0.5, "reply_gap_s": 0.5, "response": "Hello."},
        {"features": ["S"], "user": "How are you?", "gap_s": 0.5, "reply_gap_s": 0.5, "response": "Fine."}]},
]}
IF = {"format": "mtr-script/1", "voices": VOICES, "dialogues": [
    {"id": "if-0", "opener": "Hello! How can I help you?", "rounds": [
        {"features": ["S"], "user": "What is twelve times eight?", "gap_s": 0.5, "reply_gap_s": 0.5,
         "response": "Twelve times eight is ninety-six."},
        {"features": ["S"], "user": "Spell the word cat.", "gap_s": 0.7, "reply_gap_s": 0.4,
         "response": "Cat is spelled C, A, T."}]}]}
DQ = {"format": "mtr-script/1", "voices": VOICES, "dialogues": [{"id": "dq-0", "lines": [
    {"role": "user", "text": "I want to start running in the mornings.", "gap_s": 0.5},
    {"role": "assistant", "text": "That is a great plan. Start with short runs of ten minutes.", "gap_s": -0.2,
     "backchannels": [{"text": "mm-hm", "at": 0.5}]},
    {"role": "user", "text": "What should I eat before a run?", "gap_s": 0.6},
    {"role": "assistant", "text": "Something light, like a banana.", "gap_s": 0.4}]}]}


def write_dataset(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, doc in (("mix_sipb_features", MIX), ("smooth_instruction_following", IF),
                      ("synthetic_dialogue_quality", DQ)):
        (folder / f"{name}.json").write_text(json.dumps(doc))
    return folder


def build(folder: Path, out: Path, **cfg) -> int:
    config = {"benchmark": "mtr", "dataset": "mtr-test", "jobs": 1, **cfg}
    return make_stage(config).run([folder], out, config, allow_failures=True)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("mtr")
    folder = write_dataset(root / "ds")
    broken = json.loads((folder / "mix_sipb_features.json").read_text())
    assert broken["dialogues"][1]["id"] == "broken"
    return folder


@pytest.fixture(scope="module")
def built(dataset, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("mtr-out") / "out"
    assert build(dataset, out) == 0
    return out


def pcm(path: Path, channels: int = 1) -> np.ndarray:
    info = sf.info(str(path))
    assert (info.samplerate, info.channels, info.subtype) == (SR, channels, "PCM_16")
    return sf.read(str(path), dtype="int16")[0].astype(np.int32)


def n(t: float) -> int:
    return int(round(t * SR))


def gt_channels(dataset: Path, subset: str, dialogue_id: str):
    stage = MtrStage({"benchmark": "mtr", "jobs": 1}, SYNTH)
    stage.select(Inputs([dataset]), {})
    unit = next(u for u in stage.units if u.script.subset == subset and u.dialogue_id == dialogue_id)
    return stage.dialogue(unit)


def test_round_samples(built, dataset):
    folder = built / "samples" / "mix_sipb_features"
    docs = [read_json(folder / f"good-r{k:02d}" / "round.json") for k in range(1, 5)]
    gt = gt_channels(dataset, "mix_sipb_features", "good")
    model_pcm = np.clip(np.round(gt.model.astype(np.float64) * 32767), -32768, 32767).astype(np.int32)
    for k, doc in enumerate(docs, 1):
        d = folder / f"good-r{k:02d}"
        assert SCHEMAS.problem("round-sample", doc) is None
        assert (doc["dialogue_id"], doc["round"], doc["rounds"], doc["task"], doc["set"], doc["source"]) == \
            ("good", k, 4, "features", "S+I+P+B", "script")
        heard, hist = pcm(d / "input.wav"), pcm(d / "history.wav")
        assert len(heard) == len(hist) == round(doc["end_s"] * SR)
        ts = doc["encoding"]["timestamps"]
        # the user's speech is where the encoding says: loud at the turn's first and last sample
        for line in doc["user_lines"]:
            assert abs(heard[n(line["start"])]) > LOUD and abs(heard[n(line["end"]) - 1]) > LOUD
        if "pause_start" in ts:
            assert not heard[n(ts["pause_start"]): n(ts["pause_end"])].any()
        if "background_start" in ts:
            assert heard[n(ts["background_start"])] != 0 and heard[n(ts["background_end"]) - 1] != 0
            quiet = np.abs(heard[n(ts["background_start"]): n(ts["background_end"])]).max()
            assert quiet < 0.4 * 32767   # about -10 dB below the user's 0.8 peak
        # the next user turn is muted, and is really there in the next round's input
        if k < 4:
            (a, b), = doc["muted"]
            assert not heard[n(a): n(b)].any()
            nxt = pcm(folder / f"good-r{k + 1:02d}" / "input.wav")
            assert abs(nxt[n(a)]) > LOUD
            assert b == docs[k]["encoding"]["timestamps"]["user_end"] and a == docs[k]["start_s"]
        else:
            assert doc["muted"] == [] and doc["end_s"] == pytest.approx(ts["model_end"] + 2.0, abs=2e-6)
        # history.wav: the GT model channel before start_s, zeros from it
        start = n(doc["start_s"])
        assert not hist[start:].any()
        assert np.array_equal(hist[:start], model_pcm[:start])
        for h in doc["history"]:
            assert h["start"] < doc["start_s"]
            if h["role"] == "assistant":
                assert abs(hist[n(h["start"])]) > LOUD
    # round 4 interrupts response 3: that response stops 0.5 s after the interruption starts
    i4 = docs[3]["encoding"]["timestamps"]["interruption_start"]
    assert docs[2]["encoding"]["timestamps"]["model_end"] == pytest.approx(i4 + 0.5, abs=2e-6)
    # and the background of round 3 ends >= 0.5 s before that interruption
    assert docs[2]["encoding"]["timestamps"]["background_end"] <= i4 - 0.5 + 2e-6


def test_dialogue_quality_sample(built):
    d = built / "samples" / "synthetic_dialogue_quality" / "dq-0"
    doc = read_json(d / "dialogue.json")
    assert SCHEMAS.problem("dialogue", doc) is None
    audio = pcm(d / "dialogue.wav", channels=2)
    assert len(audio) == n(doc["duration_s"])
    user, model = audio[:, 0], audio[:, 1]
    lines = doc["lines"]
    assert [(x["role"], x.get("backchannel", False)) for x in lines] == \
        [("user", False), ("assistant", False), ("user", True), ("user", False), ("assistant", False)]
    assert lines[1]["start"] == pytest.approx(lines[0]["end"] - 0.2, abs=2e-6)   # the model starts early
    assert lines[1]["start"] < lines[2]["start"] < lines[2]["end"] < lines[1]["end"]
    mask = np.zeros(len(audio), bool)
    for x in lines:
        ch = user if x["role"] == "user" else model
        assert abs(ch[n(x["start"])]) > LOUD and abs(ch[n(x["end"]) - 1]) > LOUD
        if x["role"] == "user":
            mask[n(x["start"]): n(x["end"])] = True
    assert not user[~mask].any()     # the user channel is silent outside the user's lines


def test_manifest_and_failed_dialogue(built):
    manifest = read_json(built / "manifest.json")
    assert schemas.problem("manifest", manifest) is None
    rows = {f"{r['subset']}/{r['id']}": r for r in manifest["samples"]}
    assert list(rows) == [f"mix_sipb_features/good-r0{k}" for k in range(1, 5)] + \
        ["mix_sipb_features/broken-r01", "mix_sipb_features/broken-r02",
         "smooth_instruction_following/if-0-r01", "smooth_instruction_following/if-0-r02",
         "synthetic_dialogue_quality/dq-0"]
    for key, r in rows.items():
        assert r["kind"] == ("dialogue" if key.endswith("dq-0") else "round")
        if "broken" in key:
            assert r["status"] == "failed"
            continue
        folder = built / "samples" / key
        assert {k: sha256_file(folder / k) for k in r["files"]} == r["files"]
        assert r["voices"]["model"]["voice"] == "slt" and r["voices"]["user"]["voice"] == "awb"
    stage = read_json(built / "stage.json")
    bad = stage["samples"]["mix_sipb_features/broken-r01"]
    assert bad["status"] == "failed"
    assert "dialogue broken" in bad["reason"] and "\n" not in bad["reason"]
    assert not (built / "samples" / "mix_sipb_features" / "broken-r01").exists()


def test_same_bytes_with_more_jobs(built, dataset, tmp_path):
    """Two builds (one of them with 2 worker processes) give the same bytes."""
    out = tmp_path / "again"
    assert build(dataset, out, jobs=2) == 0
    assert (out / "manifest.json").read_bytes() == (built / "manifest.json").read_bytes()
    for p in sorted((built / "samples").rglob("*")):
        if p.is_file():
            assert (out / p.relative_to(built)).read_bytes() == p.read_bytes(), p


def test_limit_keeps_whole_dialogues_and_samples_selects_dialogues(dataset, tmp_path):
    out = tmp_path / "lim"
    assert build(dataset, out, limit=1, subsets=["mix_sipb_features"]) == 0
    ids = [r["id"] for r in read_json(out / "manifest.json")["samples"]]
    assert ids == [f"good-r0{k}" for k in range(1, 5)]
    out2 = tmp_path / "one"
    assert build(dataset, out2, samples=["smooth_instruction_following/if-0",
                                         "mix_sipb_features/good-r02"]) == 0
    ids = [r["id"] for r in read_json(out2 / "manifest.json")["samples"]]
    assert ids == ["good-r02", "if-0-r01", "if-0-r02"]


def test_bad_settings_and_scripts_are_one_line(dataset, tmp_path):
    from duplexeval_common.errors import DuplexEvalError
    with pytest.raises(DuplexEvalError, match="timing does not apply"):
        build(dataset, tmp_path / "a", timing={"x": {}})
    with pytest.raises(DuplexEvalError, match="sample_rate must be 16000"):
        build(dataset, tmp_path / "b", sample_rate=24000)
    bad = write_dataset(tmp_path / "bad")
    doc = dict(IF, dialogues=IF["dialogues"] * 2)   # the same id twice
    (bad / "smooth_instruction_following.json").write_text(json.dumps(doc))
    with pytest.raises(DuplexEvalError, match="same id 'if-0'"):
        build(bad, tmp_path / "c")
    (bad / "smooth_instruction_following.json").write_text(json.dumps(dict(IF, set="S+I")))
    with pytest.raises(DuplexEvalError, match="set must be one of smooth, interruption"):
        build(bad, tmp_path / "d")
