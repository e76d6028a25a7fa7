"""`duplexeval import mtr`: a small fake MTR-DuplexBench release tree, the round and dialogue
samples it gives (values known by construction), every check, and the dataset stage's import
mode on the result."""

import json
import os
import subprocess

import numpy as np
import pytest
import soundfile as sf

from duplexeval_mtr import importers as im
from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.hashing import sha256_file, sha256_tree
from duplexeval_common.jsonio import read_json

from tests.conftest import command

SR = 16000


def import_mtr(src, name, **kw):
    """The importer with the orchestrator's import service, as `duplexeval import mtr` runs it."""
    from duplexeval import importing
    return im.import_release(importing, src, name, **kw)


def codes(n, sign=1, offset=0):
    """int16 samples that say where they came from: 1 + (i + offset) % 20000, signed."""
    return (sign * (1 + (np.arange(n) + offset) % 20000)).astype(np.int16)


def stereo_wav(path, seconds):
    n = int(seconds * SR)
    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(str(path), np.stack([codes(n), codes(n, -1)], axis=1), SR, subtype="PCM_16")


def js(path, obj):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(obj if isinstance(obj, str) else json.dumps(obj))


def row(did, k, scenario, **ts):
    return {"dialogue_id": did, "round_num": k, "scenario": scenario, "timestamp": ts}


def smooth_rounds(did):
    return [row(did, 1, "smooth-turntaking", user_start=1.0, user_end=2.0, model_start=2.5, model_end=4.0),
            row(did, 2, "smooth-turntaking", user_start=4.5, user_end=5.5, model_start=6.0, model_end=8.0)]


def release(root, mp3=True):
    """A release with: a good stereo smooth dialogue and one per unhappy path; a mono 24 kHz
    interruption dialogue; a pause set; a mix S+I+P+B in the {"<id>": [rows]} shape; instruction
    following with its questions; safety without a data file; a Candor mp3; an unreadable encoding."""
    data = root / "MTR-DuplexBench" / "data"
    feats, enc = data / "Conversational_Features" / "original", data / "Scenarios_encoding"
    for d in ("good", "noround", "strtime", "outside", "scen", "dup", "badwav", "case", "Case"):
        stereo_wav(feats / f"{d}.wav", 10.0)
    (feats / "badwav.wav").write_bytes(b"RIFF not a wav")
    bad = {"noround": [{k: v for k, v in smooth_rounds("noround")[0].items() if k != "round_num"}],
           "strtime": [row("strtime", 1, "smooth", user_start="1.0", user_end=2.0, model_start=2.5, model_end=4.0)],
           "outside": [row("outside", 1, "smooth", user_start=1.0, user_end=2.0, model_start=2.5, model_end=20.0)],
           "scen": [row("scen", 1, "smoth", user_start=1.0, user_end=2.0, model_start=2.5, model_end=4.0)],
           "dup": smooth_rounds("dup")[:1] * 2, "missing": smooth_rounds("missing")}
    rows = smooth_rounds("good") + [r for rs in bad.values() for r in rs] + smooth_rounds("badwav") + \
        smooth_rounds("case") + smooth_rounds("Case") + [{"round_num": 1, "scenario": "smooth", "timestamp": {}}]
    js(enc / "single_scenario" / "scenario_encoding_smooth.json", rows)
    # mono at 24 kHz: the user channel only, resampled; I rounds give interruption_* alone
    sf.write(str(feats / "mono.wav"), np.full(int(8 * 24000), 0.25, np.float32), 24000, subtype="PCM_16")
    js(enc / "single_scenario" / "scenario_encoding_interruption.json", [
        row("mono", 1, "interruption", interruption_start=0.5, interruption_end=1.5, model_start=1.6,
            model_end=3.0),
        row("mono", 2, "interruption", interruption_start=2.0, interruption_end=2.5, model_start=3.0,
            model_end=6.0)])
    stereo_wav(feats / "p1.wav", 6.0)
    js(enc / "single_scenario" / "scenario_encoding_pause.json", [
        row("p1", 1, "pause-handling", user_start=1.0, user_end=3.0, pause_start=1.5, pause_end=2.5,
            model_start=3.5, model_end=5.0)])
    js(enc / "single_scenario" / "scenario_encoding_background.json", "{not json")
    stereo_wav(feats / "m1.wav", 12.0)
    js(enc / "multi_scenarios" / "scenario_encoding_4.json", {"m1": [
        row("m1", 2, "smooth-turntaking_background", user_start=5.0, user_end=6.0, model_start=6.5, model_end=10.0,
            background_start=7.0, background_end=8.0, pause_start=0.0, pause_end=0.0),
        row("m1", 1, "interruption_pause-handling", user_start=1.0, user_end=3.0, model_start=3.5,
            model_end=4.5, pause_start=1.5, pause_end=2.0)]})
    stereo_wav(data / "Instruction_Following" / "audios" / "q1.wav", 10.0)
    js(enc / "instruction_following" / "scenario_encoding_smooth.json", smooth_rounds("q1"))
    js(data / "Instruction_Following" / "instruction_following_data.json", [
        {"dialogue_id": "q1", "round_num": 1, "question": "Name three  rivers."},
        {"dialogue_id": "q1", "round_num": 2, "question": "Now in French."}])
    stereo_wav(data / "Safety" / "audios" / "s1.wav", 10.0)
    js(enc / "safety" / "scenario_encoding_interruption.json",
       [row("s1", 1, "interruption", user_start=1.0, user_end=2.0, model_start=2.5, model_end=4.0)])
    if mp3:
        (data / "Dialogue_Quality").mkdir()
        t = np.arange(4 * 44100) / 44100
        sf.write(str(data / "Dialogue_Quality" / "c1.mp3"),
                 np.stack([0.3 * np.sin(2 * np.pi * 220 * t), 0.3 * np.sin(2 * np.pi * 330 * t)], axis=1),
                 44100, format="MP3")
    return root


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("mtr")
    lines = []
    got = import_mtr(release(tmp / "dl"), "m", home=tmp / "home", report=lines.append)
    return tmp, got, lines


def sample(got, subset, sid):
    d = got.path / subset / sid
    return (sf.read(str(d / "input.wav"), dtype="int16")[0], sf.read(str(d / "history.wav"), dtype="int16")[0],
            read_json(d / "round.json"))


def test_smooth_round_samples_by_construction(imported):
    _, got, _ = imported
    user, model = codes(10 * SR), codes(10 * SR, -1)
    inp, hist, r1 = sample(got, "smooth_features", "good-r01")
    assert (r1["start_s"], r1["end_s"], r1["muted"], r1["rounds"]) == (1.0, 5.5, [[4.5, 5.5]], 2)
    assert len(inp) == len(hist) == 88000
    assert (inp[:72000] == user[:72000]).all() and not inp[72000:].any()  # next user turn muted
    assert (hist[:16000] == model[:16000]).all() and not hist[16000:].any()
    assert r1["history"] == [] and r1["user_lines"] == [{"start": 1.0, "end": 2.0, "text": ""}]
    assert r1["encoding"] == {"round": 1, "scenario": "smooth-turntaking", "features": ["S"], "timestamps": {
        "user_start": 1.0, "user_end": 2.0, "model_start": 2.5, "model_end": 4.0}}
    assert (r1["format"], r1["task"], r1["set"], r1["source"]) == ("mtr-round/1", "features", "smooth", "script")
    inp, hist, r2 = sample(got, "smooth_features", "good-r02")
    assert (r2["start_s"], r2["end_s"], r2["muted"]) == (4.5, 10.0, [])  # the last round runs to the audio end
    assert (inp == user).all() and (hist[:72000] == model[:72000]).all() and not hist[72000:].any()
    assert r2["history"] == [{"role": "user", "start": 1.0, "end": 2.0, "text": ""},
                             {"role": "assistant", "start": 2.5, "end": 4.0, "text": ""}]
    rows = {(r["subset"], r["id"]): r for r in got.manifest["samples"]}
    row_ = rows[("smooth_features", "good-r02")]
    assert row_["kind"] == "round" and row_["group"] == "good" and row_["duration_s"] == 10.0 and row_["task"] == "features"
    for name, digest in row_["files"].items():
        assert sha256_file(got.path / "smooth_features" / "good-r02" / name) == digest


def test_mono_resampled_interruption_pause_mix_and_texts(imported):
    _, got, _ = imported
    inp, hist, r = sample(got, "interruption_features", "mono-r01")
    assert r["encoding"]["timestamps"]["user_start"] == 0.5 == r["encoding"]["timestamps"]["interruption_start"]
    assert (r["start_s"], r["end_s"], r["muted"], r["encoding"]["features"]) == (0.5, 2.5, [[2.0, 2.5]], ["I"])
    assert len(inp) == 40000 and not hist.any()  # mono: no GT model channel
    assert abs(int(inp[1000]) - 8192) <= 2 and not inp[32000:].any()  # 0.25 full scale, resampled 24k -> 16k
    _, _, r2 = sample(got, "interruption_features", "mono-r02")
    assert r2["end_s"] == 8.0 and [h["role"] for h in r2["history"]] == ["user", "assistant"]
    _, _, p = sample(got, "pause_features", "p1-r01")
    assert p["encoding"]["features"] == ["P"] and p["encoding"]["scenario"] == "pause-handling"
    assert p["user_lines"] == [{"start": 1.0, "end": 1.5, "text": ""}, {"start": 2.5, "end": 3.0, "text": ""}]
    _, _, m1 = sample(got, "mix_sipb_features", "m1-r01")
    _, _, m2 = sample(got, "mix_sipb_features", "m1-r02")
    assert (m1["encoding"]["scenario"], m1["encoding"]["features"]) == ("interruption_pause-handling", ["I", "P"])
    assert m1["encoding"]["timestamps"]["interruption_end"] == 3.0 and m1["set"] == "S+I+P+B"
    assert (m2["encoding"]["scenario"], m2["encoding"]["features"]) == ("smooth-turntaking_background", ["S", "B"])
    assert "pause_start" not in m2["encoding"]["timestamps"]  # the release's 0.0/0.0 = no pause
    _, _, q1 = sample(got, "smooth_instruction_following", "q1-r01")
    _, _, q2 = sample(got, "smooth_instruction_following", "q1-r02")
    assert q1["user_lines"][0]["text"] == "Name three rivers." and q2["user_lines"][0]["text"] == "Now in French."
    assert q2["history"][0] == {"role": "user", "start": 1.0, "end": 2.0, "text": "Name three rivers."}
    assert q1["task"] == "instruction_following"
    _, _, s1 = sample(got, "interruption_safety", "s1-r01")
    assert s1["user_lines"][0]["text"] == "" and s1["end_s"] == 10.0 and s1["task"] == "safety"


def test_dialogue_quality_mp3_to_16k_stereo(imported):
    _, got, _ = imported
    d = got.path / "candor_dialogue_quality" / "c1"
    audio, rate = sf.read(str(d / "dialogue.wav"), dtype="float32")
    info = sf.info(str(d / "dialogue.wav"))
    assert (rate, info.channels, info.subtype) == (16000, 2, "PCM_16")
    assert abs(len(audio) - 4 * SR) < 0.1 * SR  # the decoder's padding aside
    spec = np.abs(np.fft.rfft(audio[8000:24000], axis=0))
    assert spec[:, 0].argmax() == 220 and spec[:, 1].argmax() == 330  # left user, right model
    doc = read_json(d / "dialogue.json")
    assert doc == {"format": "mtr-dialogue/1", "dialogue_id": "c1", "task": "dialogue_quality",
                   "duration_s": round(len(audio) / SR, 6), "lines": []}
    row_ = next(r for r in got.manifest["samples"] if r["subset"] == "candor_dialogue_quality")
    assert row_["kind"] == "dialogue" and set(row_["files"]) == {"dialogue.wav", "dialogue.json"}


def test_every_problem_is_one_line_and_the_rest_is_imported(imported):
    tmp, got, lines = imported
    reasons = {f"{e['subset']}/{e['id']}": e["reason"] for e in got.manifest["excluded"]}
    want = {"smooth_features/noround": "row 2 has no round_num",
            "smooth_features/strtime": "round 1: user_start is not a number ('1.0')",
            "smooth_features/outside": "round 1: model_end 20.0 s lies outside the audio [0, 10.000000]",
            "smooth_features/scen": "unknown scenario name 'smoth'",
            "smooth_features/dup": "round 1 is given twice",
            "smooth_features/badwav": "badwav.wav is not readable audio",
            "smooth_features/missing": "missing.wav is missing",
            "smooth_features/case": "duplicate dialogue id: 'Case' and 'case' differ only in case",
            "smooth_features/#16": "row 16 has no dialogue_id",
            "background_features/*": "scenario_encoding_background.json is not valid JSON"}
    for key, text in want.items():
        assert text in reasons[key], (key, reasons.get(key))
        assert any(ln.startswith(f"{key}: ") and text in ln for ln in lines), key
    assert len(reasons) == len(want) + 1  # + Case
    assert all("\n" not in ln for ln in lines)
    assert any("mix_s_features: Scenarios_encoding/multi_scenarios/scenario_encoding_1.json is missing" in ln
               for ln in lines)
    subsets = {r["subset"] for r in got.manifest["samples"]}
    assert subsets == {"smooth_features", "interruption_features", "pause_features", "mix_sipb_features",
                       "smooth_instruction_following", "interruption_safety", "candor_dialogue_quality"}
    assert sorted(p.name for p in (got.path / "smooth_features").iterdir()) == ["good-r01", "good-r02"]
    assert [p.name for p in got.path.parent.iterdir()] == ["m"]  # no temporary folder left
    assert got.manifest["source"] == "mtr" and "Scenarios_encoding/single_scenario/scenario_encoding_smooth.json" \
        in got.manifest["release"]["files_sha256"]


def test_same_input_same_bytes_and_nothing_half_written(imported, monkeypatch):
    tmp, got, _ = imported
    again = import_mtr(tmp / "dl", "m", home=tmp / "home", force=True, report=lambda _: None)
    assert sha256_tree(again.path) == sha256_tree(got.path)
    calls = []

    def boom(*a):
        calls.append(a)
        if len(calls) == 3:
            raise OSError("disk full")
        return real(*a)
    real = im.write_sample
    monkeypatch.setattr(im, "write_sample", boom)
    with pytest.raises(OSError):
        import_mtr(tmp / "dl", "other", home=tmp / "home", report=lambda _: None)
    assert sorted(p.name for p in (tmp / "home" / "datasets").iterdir()) == ["m"]
    with pytest.raises(DuplexEvalError, match="already exists"):
        import_mtr(tmp / "dl", "m", home=tmp / "home", report=lambda _: None)


def test_release_folder_and_mp3_errors(tmp_path, monkeypatch):
    with pytest.raises(DuplexEvalError, match="no MTR-DuplexBench release here"):
        import_mtr(tmp_path, "x", home=tmp_path / "h")
    src = tmp_path / "dl" / "data"
    (src / "Dialogue_Quality").mkdir(parents=True)
    (src / "Dialogue_Quality" / "a.mp3").write_bytes(b"ID3 not really")
    monkeypatch.setattr(sf, "available_formats", lambda: {"WAV": "WAV"})
    with pytest.raises(DuplexEvalError, match=r"cannot decode MP3 .*libsndfile >= 1.1"):
        import_mtr(tmp_path / "dl", "x", home=tmp_path / "h")
    monkeypatch.undo()
    with pytest.raises(DuplexEvalError, match=r"no dialogue passed the checks \(1 excluded\)"):
        import_mtr(src, "x", home=tmp_path / "h", report=lambda _: None)
    assert not (tmp_path / "h" / "datasets" / "x").exists()


def test_cli_and_the_dataset_stage_in_import_mode(tmp_path):
    src = release(tmp_path / "dl")
    home = tmp_path / "home"
    env = {**os.environ, "DUPLEXEVAL_HOME": str(home)}
    r = subprocess.run([command("duplexeval"), "--home", str(home), "import", "mtr", str(src), "--name", "mm"],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 1, r.stderr  # written, some dialogues excluded
    assert "smooth_features/dup: round 1 is given twice" in r.stderr and "as 'mm'" in r.stdout
    folder = home / "datasets" / "mm"
    (folder / "smooth_features" / "good-r02" / "input.wav").write_bytes(b"tampered")
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"benchmark": "mtr", "dataset": "mm", "subsets": ["smooth_features", "pause_features",
                                                          "candor_dialogue_quality"]}))
    r = subprocess.run([command("tts-synth"), "run", "--input", str(folder), "--output", str(tmp_path / "out"),
                        "--config", str(cfg)], capture_output=True, text=True)
    assert r.returncode == 1, r.stderr
    assert "smooth_features/good-r02: input.wav differs from the import manifest" in r.stderr
    out = tmp_path / "out" / "samples" / "smooth_features" / "good-r01"
    assert sorted(p.name for p in out.iterdir() if p.name != "_done.json") == ["history.wav", "input.wav", "round.json"]
    assert sha256_file(out / "round.json") == sha256_file(folder / "smooth_features" / "good-r01" / "round.json")
    man = read_json(tmp_path / "out" / "manifest.json")
    rows = {f"{x['subset']}/{x['id']}": x for x in man["samples"]}
    assert rows["smooth_features/good-r01"]["kind"] == "round" and rows["pause_features/p1-r01"]["kind"] == "round"
    assert rows["smooth_features/good-r02"]["status"] == "failed"
    assert rows["candor_dialogue_quality/c1"]["kind"] == "dialogue"
    dq = tmp_path / "out" / "samples" / "candor_dialogue_quality" / "c1"
    assert sha256_file(dq / "dialogue.wav") == sha256_file(folder / "candor_dialogue_quality" / "c1" / "dialogue.wav")


def test_limit_counts_dialogues_of_an_imported_mtr_dataset():
    """--limit N keeps N dialogues per subset with all their rounds (as the built-in MTR datasets
    do), never the first N round samples of a subset."""
    from types import SimpleNamespace

    from duplexeval_common.samples import Sample
    from duplexeval_tts.imported import ImportedStage
    ids = ["a-r01", "a-r02", "a-r03", "b-r01", "b-r02", "c-r01"]
    samples = [Sample("smooth_features", i) for i in ids]
    fake = SimpleNamespace(rows={s.key: {"kind": "round", "group": s.id.rsplit("-r", 1)[0]} for s in samples})
    pick = lambda n: [s.id for s in ImportedStage._first(fake, samples, n)]  # noqa: E731
    assert pick(1) == ["a-r01", "a-r02", "a-r03"]
    assert pick(2) == ["a-r01", "a-r02", "a-r03", "b-r01", "b-r02"]
    assert pick(None) == ids
    dq = [Sample("candor_dialogue_quality", i) for i in ("c1", "c2")]
    fake = SimpleNamespace(rows={s.key: {"kind": "dialogue", "group": s.id} for s in dq})
    assert [s.id for s in ImportedStage._first(fake, dq, 1)] == ["c1"]
    fdb = [Sample("x_turn_taking", i) for i in ("1", "2", "3")]
    fake = SimpleNamespace(rows={s.key: {} for s in fdb})
    assert [s.id for s in ImportedStage._first(fake, fdb, 2)] == ["1", "2"]


def test_hostile_release_audio_links_and_odd_digits(tmp_path):
    """The checks every importer applies hold for `import mtr` too: a 1 Hz file is refused before
    it is read (it once took 1.24 GB), a file that is a link leading out of the release is refused
    (the fdb-v1 and folder importers' rule), and "²" as a dialogue id or round number (a digit to
    str.isdigit, no int) is one line, not a crash; the good dialogue is imported."""
    data = tmp_path / "dl" / "data"
    feats, enc = data / "Conversational_Features" / "original", data / "Scenarios_encoding"
    stereo_wav(feats / "good.wav", 10.0)
    feats.mkdir(parents=True, exist_ok=True)
    sf.write(str(feats / "slow.wav"), np.zeros((6000, 2), np.int16), 1, subtype="PCM_16")
    outside = tmp_path / "elsewhere" / "x.wav"
    stereo_wav(outside, 10.0)
    os.symlink(outside, feats / "linked.wav")
    stereo_wav(feats / "².wav", 10.0)
    stereo_wav(feats / "oddround.wav", 10.0)
    rows = smooth_rounds("good") + smooth_rounds("slow") + smooth_rounds("linked") + smooth_rounds("²")
    rows += [row("oddround", "²", "smooth", user_start=1.0, user_end=2.0, model_start=2.5, model_end=4.0)]
    js(enc / "single_scenario" / "scenario_encoding_smooth.json", rows)
    lines = []
    got = import_mtr(tmp_path / "dl", "h", home=tmp_path / "home", report=lines.append)
    reasons = {e["id"]: e["reason"] for e in got.manifest["excluded"]}
    assert "sampled at 1 Hz" in reasons["slow"]
    assert "link leading out of" in reasons["linked"]
    assert "oddround" in reasons and "round_num" in reasons["oddround"]
    assert any("id '²' is not a plain name" in r for r in reasons.values())
    assert sorted(p.name for p in (got.path / "smooth_features").iterdir()) == ["good-r01", "good-r02"]
    assert all("\n" not in ln for ln in lines)
    assert not any((tmp_path / "home" / "datasets" / "h").rglob("x.wav"))
