"""The turn-segmenter's mode `samples` (MTR's `segment` hook): dialogue-quality round samples cut from constructed
two-channel dialogues (tests/turn_segmenter/dialogues.py: known user and model speech; the
audio is a tone over each speech span on top of a low deterministic noise, so every sample of
both channels is known and almost none is zero). The segment stage (offline rule) runs on the
constructed user.json / model.json, then the rounds stage on [dataset, dialogue ASR, segment];
everything checked is known by construction: K rounds, exact lengths and samples of input.wav
and history.wav, round.json, the manifest, a failed segmentation, hostile names, same bytes."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from duplexeval_common.cli import check_config
from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.hashing import sha256_file
from duplexeval_common.ipus import segments_from_words
from duplexeval_common.jsonio import read_json
from duplexeval_common.schemas import validate
from duplexeval_segmenter.stage import make_stage
from duplexeval_mtr.schemas import SCHEMAS

from tests.turn_segmenter.dialogues import dialogue, write
from tests.turn_segmenter.helpers import boundaries_within

SR = 16000
DQ = "synthetic_dialogue_quality"
ROUNDS = {"benchmark": "mtr", "mode": "samples"}


def stereo(d: dict, seed: int) -> np.ndarray:
    """PCM_16 (n, 2): noise of +-1..40 everywhere (never 0), plus a tone over each speech span."""
    n = int(round(d["duration"] * SR))
    rng = np.random.default_rng(seed)
    out = rng.integers(1, 40, size=(n, 2)) * rng.choice([-1, 1], size=(n, 2))
    t = np.arange(n) / SR
    for ch, role, f in ((0, "user", 220.0), (1, "model", 330.0)):
        for s in d[role]["vad_segments"]:
            a, b = int(s["start"] * SR), int(s["end"] * SR)
            out[a:b, ch] += (8000 * np.sin(2 * np.pi * f * t[a:b])).astype(np.int64)
    return out.astype(np.int16)


def build(root: Path, dialogues: dict[str, dict], extra_rows: list[dict] | None = None,
          broken: tuple[str, ...] = ()) -> tuple[Path, Path]:
    """(dataset folder with manifest.json and dialogue.wav, dialogue-ASR folder with user/model.json);
    the dialogues named in `broken` get a user.json with no speech (their segmentation fails)."""
    ds, asr = root / "dataset", root / "asr"
    ds.mkdir(parents=True, exist_ok=True)
    rows = list(extra_rows or [])
    for i, (key, d) in enumerate(dialogues.items()):
        sub, did = key.split("/")
        folder = ds / "samples" / key
        folder.mkdir(parents=True, exist_ok=True)
        sf.write(str(folder / "dialogue.wav"), stereo(d, i), SR, subtype="PCM_16")
        rows.append({"subset": sub, "id": did, "task": "dialogue_quality", "duration_s": d["duration"],
                     "files": {"dialogue.wav": sha256_file(folder / "dialogue.wav")}, "kind": "dialogue",
                     "group": did})
    (ds / "manifest.json").write_text(json.dumps({"dataset": "mtr-mini", "version": "v1", "source": {"x": 1},
                                                  "samples": rows}))
    asr_d = {k: ({**d, "user": {**d["user"], "words": [], "vad_segments": []}} if k in broken else d)
             for k, d in dialogues.items()}
    write(asr, asr_d)
    return ds, asr


def features_round(ds: Path, sid: str = "f1-r01") -> dict:
    """A dataset round sample (as the dataset stage writes them): files and its manifest row."""
    folder = ds / "samples" / "smooth_features" / sid
    folder.mkdir(parents=True, exist_ok=True)
    sf.write(str(folder / "input.wav"), np.ones(SR, dtype=np.int16), SR, subtype="PCM_16")
    (folder / "round.json").write_text("{}")
    return {"subset": "smooth_features", "id": sid, "task": "features", "duration_s": 1.0,
            "files": {"input.wav": sha256_file(folder / "input.wav")}, "kind": "round",
            "group": sid.split("-r")[0]}


def run(inputs: list[Path], out: Path, config: dict) -> int:
    check_config("turn-segmenter", config)
    return make_stage(config).run(inputs, out, config)


def pipeline(tmp_path: Path, dialogues: dict[str, dict], extra: int = 1, broken: tuple[str, ...] = (),
             out: str = "rounds") -> tuple[Path, Path, Path, dict]:
    ds, asr = build(tmp_path, dialogues, broken=broken)
    rows = [features_round(ds, f"f{i}-r01") for i in range(1, extra + 1)]
    man = read_json(ds / "manifest.json")
    (ds / "manifest.json").write_text(json.dumps({**man, "samples": rows + man["samples"]}))
    seg = tmp_path / "segment"
    run([asr], seg, {})
    rc = run([ds, asr, seg], tmp_path / out, ROUNDS)
    return ds, asr, seg, {"rc": rc, "stage": read_json(tmp_path / out / "stage.json")}


def pcm(path: Path) -> np.ndarray:
    data, sr = sf.read(str(path), dtype="int16", always_2d=True)
    assert sr == SR
    return data


@pytest.fixture(scope="module")
def three(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rounds")
    ds = {f"{DQ}/d1": dialogue(3, rounds=4), f"{DQ}/d2": dialogue(5, rounds=3), f"{DQ}/d3": dialogue(8, rounds=3)}
    paths = pipeline(tmp, ds, broken=(f"{DQ}/d3",))
    return tmp, ds, paths


def test_every_window_is_a_round_sample_cut_exactly(three):
    tmp, ds, (dset, asr, seg, res) = three
    assert res["rc"] == 0
    out = tmp / "rounds"
    for key, d in ds.items():
        if key.endswith("d3"):
            continue
        rec = read_json(seg / "samples" / key / "segmentation.json")
        turns = [(t["start"], t["end"]) for t in rec["turns"]]
        assert boundaries_within(rec["turns"], d["turns"])
        k_all = len(turns)
        assert k_all == len(d["turns"])
        wav = pcm(dset / "samples" / key / "dialogue.wav")
        made = sorted(p.name for p in (out / "samples" / DQ).iterdir() if p.name.startswith(key.split("/")[1] + "-"))
        assert made == [f"{key.split('/')[1]}-r{k:02d}" for k in range(1, k_all + 1)]
        for k in range(1, k_all + 1):
            folder = out / "samples" / DQ / f"{key.split('/')[1]}-r{k:02d}"
            assert sorted(p.name for p in folder.iterdir()) == ["_done.json", "history.wav", "input.wav", "round.json"]
            r = read_json(folder / "round.json")
            start = turns[k - 1][0]
            end = turns[k][1] if k < k_all else rec["dialogue_end_s"]
            assert (r["start_s"], r["end_s"]) == (start, end)
            assert r["muted"] == ([[turns[k][0], turns[k][1]]] if k < k_all else [])
            n = int(round(end * SR))
            inp, hist = pcm(folder / "input.wav")[:, 0], pcm(folder / "history.wav")[:, 0]
            assert len(inp) == len(hist) == n
            left = np.zeros(n, dtype=np.int16)
            m = min(n, len(wav))
            left[:m] = wav[:m, 0]
            if k < k_all:
                a, b = int(round(turns[k][0] * SR)), int(round(turns[k][1] * SR))
                assert b == n and a < b
                assert not inp[a:b].any()          # the next user turn is muted ...
                assert inp[a - 1] != 0             # ... and nothing before it
                left[a:b] = 0
            assert np.array_equal(inp, left)       # the user channel elsewhere, sample for sample
            c = int(round(start * SR))
            assert np.array_equal(hist[:c], wav[:c, 1]) and not hist[c:].any()
            assert hist[c - 1] != 0


def test_round_json_fields_and_lines(three):
    tmp, ds, (dset, asr, seg, _) = three
    key = f"{DQ}/d1"
    rec = read_json(seg / "samples" / key / "segmentation.json")
    turns = [(t["start"], t["end"]) for t in rec["turns"]]
    k_all = len(turns)
    user = segments_from_words(read_json(asr / "samples" / key / "user.json")["words"])
    model = segments_from_words(read_json(asr / "samples" / key / "model.json")["words"])
    for k in range(1, k_all + 1):
        r = read_json(tmp / "rounds" / "samples" / DQ / f"d1-r{k:02d}" / "round.json")
        SCHEMAS.validate("round-sample", r)
        assert {k2: r[k2] for k2 in ("format", "dialogue_id", "round", "rounds", "task", "set", "source")} == {
            "format": "mtr-round/1", "dialogue_id": "d1", "round": k, "rounds": k_all, "task": "dialogue_quality",
            "set": None, "source": "segmentation"}
        assert r["encoding"] == {"round": k, "scenario": "dialogue-quality", "features": [], "timestamps": {}}
        start = turns[k - 1][0]
        until = turns[k][0] if k < k_all else r["end_s"]
        # no user line here starts within 10 ms of a turn start: start-based and midpoint rules agree
        assert all(abs(x["start"] - s) > 0.01 for x in user for s, _ in turns if x["start"] < s)
        want = sorted([{"role": "user", "start": x["start"], "end": x["end"], "text": x["text"]} for x in user
                       if x["start"] < start] +
                      [{"role": "assistant", "start": x["start"], "end": x["end"], "text": x["text"]} for x in model
                       if x["start"] < start], key=lambda x: (x["start"], x["role"] != "user"))
        assert r["history"] == want
        assert r["user_lines"] == [{"start": x["start"], "end": x["end"], "text": x["text"]} for x in user
                                   if start <= x["start"] < until]
        assert r["user_lines"], k  # every round has its own user turn
        # user lines of the dialogue's truth turn k start inside [C_k.start, next start): all in user_lines
        s_true, e_true = ds[key]["turns"][k - 1]
        assert {x["text"] for x in user if s_true - 0.05 <= x["start"] < e_true} <= \
            {x["text"] for x in r["user_lines"]}
    assert read_json(tmp / "rounds" / "samples" / DQ / "d1-r01" / "round.json")["history"] == []
    # the encodings, gathered as the aggregator's scoring tree holds them (duplexeval_mtr/schemas/encoding.schema.json)
    encs = [read_json(tmp / "rounds" / "samples" / DQ / f"d1-r{k:02d}" / "round.json")["encoding"]
            for k in range(1, k_all + 1)]
    SCHEMAS.validate("encoding", {"dialogue_id": "d1", "task": "dialogue_quality", "rounds": encs})


def test_manifest_lists_the_dataset_rounds_and_these(three):
    tmp, ds, (dset, asr, seg, res) = three
    man = read_json(tmp / "rounds" / "manifest.json")
    validate("manifest", man)
    src = read_json(dset / "manifest.json")
    k1 = len(read_json(seg / "samples" / DQ / "d1" / "segmentation.json")["turns"])
    k2 = len(read_json(seg / "samples" / DQ / "d2" / "segmentation.json")["turns"])
    keys = [f"{r['subset']}/{r['id']}" for r in man["samples"]]
    assert keys == ["smooth_features/f1-r01"] + [f"{DQ}/d1-r{k:02d}" for k in range(1, k1 + 1)] + \
        [f"{DQ}/d2-r{k:02d}" for k in range(1, k2 + 1)]
    assert man["samples"][0] == src["samples"][0]  # the dataset's round row, unchanged
    assert all(r["kind"] == "round" and r["task"] in ("dialogue_quality", "features") for r in man["samples"])
    for r in man["samples"][1:]:
        folder = tmp / "rounds" / "samples" / r["subset"] / r["id"]
        assert r["files"] == {n: sha256_file(folder / n) for n in ("history.wav", "input.wav", "round.json")}
        assert r["duration_s"] == len(pcm(folder / "input.wav")) / SR
    assert man["dataset"] == "mtr-mini" and man["source"] == {"x": 1}
    assert list(man["rounds"]["dialogues_without_rounds"]) == [f"{DQ}/d3"]  # with why (one line)
    assert "\n" not in man["rounds"]["dialogues_without_rounds"][f"{DQ}/d3"]
    assert man["rounds"]["dialogues"][f"{DQ}/d1"]["files"]["dialogue.wav"] == \
        sha256_file(dset / "samples" / DQ / "d1" / "dialogue.wav")
    # nothing written for the dataset's own round sample, nor for the dialogues themselves
    assert sorted(p.name for p in (tmp / "rounds" / "samples").iterdir()) == [DQ]
    assert not (tmp / "rounds" / "samples" / DQ / "d1").exists()
    # a later stage reading [dataset, rounds] sees exactly the round samples
    from duplexeval_common.samples import Inputs
    assert [s.key for s in Inputs([dset, tmp / "rounds"]).samples()] == \
        sorted(keys, key=lambda x: (x.split("/")[0], x))


def test_a_failed_segmentation_gives_no_rounds_and_one_line(three, capfd):
    tmp, ds, (dset, asr, seg, res) = three
    assert read_json(seg / "stage.json")["samples"][f"{DQ}/d3"]["status"] == "failed"
    assert not any(p.name.startswith("d3") for p in (tmp / "rounds" / "samples" / DQ).iterdir())
    notes = res["stage"]["invocation_notes"]["dialogues_without_rounds"]
    assert list(notes) == [f"{DQ}/d3"] and "no user turn" in notes[f"{DQ}/d3"]
    assert all(not k.startswith(f"{DQ}/d3") for k in res["stage"]["samples"])
    # rerun (everything cached): one stderr line names the dialogue
    run([dset, asr, seg], tmp / "rounds", ROUNDS)
    err = capfd.readouterr().err
    lines = [x for x in err.splitlines() if f"{DQ}/d3" in x]
    assert len(lines) == 1 and "no round samples" in lines[0] and "\n" not in lines[0]


def test_same_bytes_twice_and_a_resumed_run(three):
    tmp, ds, (dset, asr, seg, _) = three
    run([dset, asr, seg], tmp / "again", ROUNDS)

    def tree(root: Path) -> dict:
        return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted(root.rglob("*")) if p.is_file() and p.name != "stage.json"}
    a, b = tree(tmp / "rounds"), tree(tmp / "again")
    assert a == b and len(a) > 20
    # a removed round sample is remade with the same bytes
    victim = tmp / "again" / "samples" / DQ / "d2-r02" / "input.wav"
    victim.unlink()
    run([dset, asr, seg], tmp / "again", ROUNDS)
    assert tree(tmp / "again") == a


def test_bad_dialogues_are_named_and_kept_apart(tmp_path, capfd):
    ds_d = {f"{DQ}/ok": dialogue(11, rounds=2), f"{DQ}/linked": dialogue(12, rounds=2),
            f"{DQ}/other": dialogue(13, rounds=2), f"{DQ}/short": dialogue(14, rounds=2),
            f"{DQ}/{'x' * 125}": dialogue(15, rounds=2)}
    ds, asr = build(tmp_path, ds_d)
    seg = tmp_path / "segment"
    assert run([asr], seg, {}) == 0
    # a dialogue.wav that is a link leaving the dataset folder
    outside = tmp_path / "outside.wav"
    link = ds / "samples" / DQ / "linked" / "dialogue.wav"
    os.replace(link, outside)
    link.symlink_to(outside)
    # a segmentation.json copied from another dialogue
    (seg / "samples" / DQ / "other" / "segmentation.json").write_text(
        (seg / "samples" / DQ / "ok" / "segmentation.json").read_text())
    # a dialogue.wav shorter than its segmentation's rounds
    p = ds / "samples" / DQ / "short" / "dialogue.wav"
    sf.write(str(p), pcm(p)[:SR], SR, subtype="PCM_16")
    rc = run([ds, asr, seg], tmp_path / "out", ROUNDS)
    stage = read_json(tmp_path / "out" / "stage.json")
    notes = stage["invocation_notes"]["dialogues_without_rounds"]
    assert sorted(notes) == sorted([f"{DQ}/linked", f"{DQ}/other", f"{DQ}/{'x' * 125}"])
    assert "link leaving" in notes[f"{DQ}/linked"] and "segmentation of" in notes[f"{DQ}/other"]
    assert "no plain sample name" in notes[f"{DQ}/{'x' * 125}"]
    # the short one: its rounds past the file's end fail alone, one line each, named
    assert rc == 1
    failed = {k: s for k, s in stage["samples"].items() if s["status"] == "failed"}
    assert failed and all(k.startswith(f"{DQ}/short-r") and "before the round's start" in s["reason"]
                          for k, s in failed.items())
    man = read_json(tmp_path / "out" / "manifest.json")
    validate("manifest", man)
    assert [r["status"] for r in man["samples"] if r["id"].startswith("short-r") and "status" in r] == \
        ["failed"] * len(failed)
    assert {r["id"] for r in man["samples"] if "status" not in r} >= {"ok-r01", "ok-r02"}
    err = capfd.readouterr().err
    for k in notes:
        assert sum(k in line and "no round samples" in line for line in err.splitlines()) == 1


def test_hostile_names_cannot_escape(tmp_path):
    ds, asr = build(tmp_path, {f"{DQ}/d1": dialogue(21, rounds=2)})
    seg = tmp_path / "segment"
    run([asr], seg, {})
    man = read_json(ds / "manifest.json")
    before = sorted(p for p in tmp_path.rglob("*"))
    for bad in ("../../escape", "a/b", ".hidden", "..", "x\ny"):
        (ds / "manifest.json").write_text(json.dumps({**man, "samples": man["samples"] + [
            {"subset": DQ, "id": bad, "task": "dialogue_quality", "kind": "dialogue"}]}))
        with pytest.raises(DuplexEvalError, match="sample id"):
            make_stage(ROUNDS).run([ds, asr, seg], tmp_path / "out", ROUNDS)
        assert sorted(p for p in tmp_path.rglob("*")) == before  # the stage stopped before writing
    assert not (tmp_path.parent / "escape").exists() and not (tmp_path / "escape").exists()
    # a round sample id that collides with a dataset sample: that dialogue gets no rounds
    (ds / "manifest.json").write_text(json.dumps({**man, "samples": man["samples"] + [
        features_round(ds, "x") | {"subset": DQ, "id": "d1-r01"}]}))
    (ds / "samples" / DQ / "d1-r01").mkdir()
    (ds / "samples" / DQ / "d1-r01" / "input.wav").write_bytes(b"")
    assert run([ds, asr, seg], tmp_path / "out2", ROUNDS) == 0
    notes = read_json(tmp_path / "out2" / "stage.json")["invocation_notes"]["dialogues_without_rounds"]
    assert "already a sample" in notes[f"{DQ}/d1"]
    assert not (tmp_path / "out2" / "samples" / DQ / "d1-r02").exists()


@pytest.mark.parametrize("cfg, msg", [
    ({**ROUNDS, "mode": "chunks"}, "mode must be"),
    ({**ROUNDS, "segmenter": "offline"}, "mode samples takes only"),
    ({**ROUNDS, "max_word_gap_s": -1}, "max_word_gap_s"),
    ({**ROUNDS, "workers": 0}, "workers"),
    ({"mode": "samples"}, "`benchmark` is missing"),
])
def test_bad_rounds_settings_are_one_line(cfg, msg):
    with pytest.raises(DuplexEvalError, match=msg) as e:
        make_stage(cfg)
    assert "\n" not in str(e.value)


def test_segments_are_the_lines_when_given_and_workers_change_nothing(tmp_path):
    d = dialogue(31, rounds=2)
    ds, asr = build(tmp_path, {f"{DQ}/d1": d})
    seg = tmp_path / "segment"
    run([asr], seg, {})
    turns = [(t["start"], t["end"]) for t in read_json(seg / "samples" / DQ / "d1" / "segmentation.json")["turns"]]
    uj = asr / "samples" / DQ / "d1" / "user.json"
    u = read_json(uj)
    lines = [{"start": x["start"], "end": x["end"], "text": x["text"]} for x in segments_from_words(u["words"])]
    second = [x for x in lines if x["start"] >= turns[1][0]]
    # round 2's first line starts 4 ms before the turn (a boundary rounded to 2 decimals)
    second[0]["start"] = round(turns[1][0] - 0.004, 6)
    u["segments"] = [{"start": 0.0, "end": 0.1, "text": "  opening  "}, {"start": 0.2, "end": 0.3, "text": " "},
                     *lines]
    uj.write_text(json.dumps(u))
    assert run([ds, asr, seg], tmp_path / "a", ROUNDS) == 0
    run([ds, asr, seg], tmp_path / "b", {**ROUNDS, "workers": 3})
    r1 = read_json(tmp_path / "a" / "samples" / DQ / "d1-r01" / "round.json")
    r2 = read_json(tmp_path / "a" / "samples" / DQ / "d1-r02" / "round.json")
    assert r1["history"] == [{"role": "user", "start": 0.0, "end": 0.1, "text": "opening"}]
    assert r2["user_lines"] == second  # the straddling line is the turn's, not the history's
    assert [x for x in r2["history"] if x["role"] == "user"] == \
        [{"role": "user", "start": 0.0, "end": 0.1, "text": "opening"}] + \
        [{"role": "user", **x} for x in lines if x["start"] < turns[1][0] and x not in second]
    for k in ("d1-r01", "d1-r02"):
        for n in ("input.wav", "history.wav", "round.json"):
            assert (tmp_path / "a" / "samples" / DQ / k / n).read_bytes() == \
                (tmp_path / "b" / "samples" / DQ / k / n).read_bytes()
    # a user turn the ASR heard nothing in: that round fails alone, with one line
    u["segments"] = [x for x in u["segments"] if x not in second]
    uj.write_text(json.dumps(u))
    assert run([ds, asr, seg], tmp_path / "c", ROUNDS) == 1
    st = read_json(tmp_path / "c" / "stage.json")["samples"]
    assert st[f"{DQ}/d1-r01"]["status"] == "ok"
    assert st[f"{DQ}/d1-r02"]["status"] == "failed" and "no line of user.json" in st[f"{DQ}/d1-r02"]["reason"]
    assert not (tmp_path / "c" / "samples" / DQ / "d1-r02").exists()
    man = read_json(tmp_path / "c" / "manifest.json")
    assert [(x["id"], x.get("status")) for x in man["samples"]] == [("d1-r01", None), ("d1-r02", "failed")]


def test_the_command_runs_rounds_on_three_inputs(tmp_path):
    import subprocess

    from tests.conftest import command
    ds, asr = build(tmp_path, {f"{DQ}/d1": dialogue(41, rounds=2), f"{DQ}/d2": dialogue(42, rounds=2)},
                    broken=(f"{DQ}/d2",))
    seg = tmp_path / "segment"
    run([asr], seg, {})
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps(ROUNDS))
    r = subprocess.run([command("turn-segmenter"), "run", "--config", str(cfg), "--input", str(ds), "--input",
                        str(asr), "--input", str(seg), "--output", str(tmp_path / "out")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert [x for x in r.stderr.splitlines() if "d2" in x and "no round samples" in x] != []
    man = read_json(tmp_path / "out" / "manifest.json")
    assert [x["id"] for x in man["samples"]] == ["d1-r01", "d1-r02"]
    cfg.write_text(json.dumps({**ROUNDS, "runs": 3}))
    r = subprocess.run([command("turn-segmenter"), "check", "--config", str(cfg)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "runs" in r.stderr


def test_no_dialogues_the_manifest_lists_the_dataset_rounds_alone(tmp_path):
    ds, asr = build(tmp_path, {})
    rows = [features_round(ds, "f2-r01"), features_round(ds, "f10-r01"),
            {"subset": "smooth_safety", "id": "s1-r01", "task": "safety", "status": "failed", "reason": "tts",
             "kind": "round", "group": "s1"}]
    (ds / "manifest.json").write_text(json.dumps({"dataset": "mtr-mini", "samples": rows}))
    asr.mkdir(parents=True, exist_ok=True)
    assert run([ds, asr], tmp_path / "out", ROUNDS) == 0
    man = read_json(tmp_path / "out" / "manifest.json")
    assert man["samples"] == [rows[1], rows[0], rows[2]]  # sorted as a dataset's rows are
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["manifest.json", "samples", "stage.json"]
    assert not any((tmp_path / "out" / "samples").iterdir())
