"""fdb-v1.5-mini as synthesized: the files of each sample, their schemas, the two inputs
(sample-identical outside the overlap window, different at its edges), metadata.json against
sample.json, the levels, the voices, the same bytes twice and with 1 or 2 jobs; and the
one-line errors of the script format."""

from __future__ import annotations

import json

import numpy as np
import pytest
import soundfile as sf

from duplexeval_common import schemas
from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.hashing import sha256_file
from duplexeval_common.jsonio import read_json
from duplexeval_common.samples import Inputs
from duplexeval_tts import voices as voicemix
from duplexeval_tts.engines import PEAK, TRIM_THRESHOLD
from duplexeval_tts.synth import SYNTH as SYNTH_SERVICE

from duplexeval_fdb_v1_5.dataset.compose import lowpass
from duplexeval_fdb_v1_5.dataset.scripts import load_scripts, parse_entry
from duplexeval_fdb_v1_5.dataset.stage import DatasetStage
from duplexeval_fdb_v1_5.schemas import SCHEMAS
from duplexeval_fdb_v1_5.tasks import KINDS, SPEAKERS, TASKS

from tests.conftest import assert_same_sample_files
from tests.tts_synth.conftest import run_cli, write_config

from .conftest import MINI, SR, SYNTH, synthesize

FILES = {"input.wav", "clean_input.wav", "metadata.json", "sample.json"}


def pcm(path) -> np.ndarray:
    info = sf.info(str(path))
    assert (info.samplerate, info.channels, info.subtype, info.format) == (SR, 1, "PCM_16", "WAV")
    return sf.read(str(path), dtype="int16")[0].astype(np.int32)


def folders(tree):
    out = sorted((tree / "samples").glob("*/*"))
    assert len(out) == 8
    return out


def test_shipped_scripts_parse():
    for folder, n in ((MINI, 2), (SYNTH, None)):
        scripts = load_scripts(folder, None, voicemix.parse_specs)
        assert sorted(scripts) == sorted(TASKS)
        for subset, script in scripts.items():
            assert script.task == subset and (n is None or len(script.entries) == n)
            for entry in script.entries:
                e = parse_entry(script.task, entry)
                assert e["kind"] == KINDS[subset] and e["speaker"] == SPEAKERS[subset]


def test_manifest_files_and_schemas(mini):
    manifest = read_json(mini / "manifest.json")
    assert schemas.problem("manifest", manifest) is None
    assert [(r["subset"], r["id"], r["task"]) for r in manifest["samples"]] == \
        [(s, i, s) for s in sorted(TASKS) for i in ("0", "1")]
    assert manifest["dataset"] == "fdb-v1.5-mini"
    src = manifest["source"]
    assert src["settings"]["trim_threshold"] == TRIM_THRESHOLD and src["settings"]["peak"] == PEAK
    assert set(src["voice_mixes"]) == set(TASKS) and src["voices"]
    for row in manifest["samples"]:
        d = mini / "samples" / row["subset"] / row["id"]
        assert set(row["files"]) == FILES == {p.name for p in d.iterdir() if not p.name.startswith("_")}
        for name, digest in row["files"].items():
            assert sha256_file(d / name) == digest
        sample = read_json(d / "sample.json")
        assert SCHEMAS.problem("sample", sample) is None and schemas.problem("sample", sample) is None
        assert SCHEMAS.problem("metadata", read_json(d / "metadata.json")) is None
        n = len(pcm(d / "input.wav"))
        assert n == len(pcm(d / "clean_input.wav"))
        assert sample["duration_s"] == row["duration_s"] == n / SR
        assert (sample["subset"], sample["id"], sample["task"]) == (row["subset"], row["id"], row["task"])
        assert sorted(sample["voices"]) == sorted(row["voices"])


def test_twins_are_identical_outside_the_window_and_differ_at_its_edges(mini):
    scripts = load_scripts(MINI, None, voicemix.parse_specs)
    for d in folders(mini):
        a, b = pcm(d / "input.wav"), pcm(d / "clean_input.wav")
        sample = read_json(d / "sample.json")
        ov, ctx = sample["overlap"], sample["context"]
        s, e = ov["start_sample"], ov["end_sample"]
        c0, c1 = ctx["start_sample"], ctx["end_sample"]
        entry = parse_entry(sample["task"], scripts[sample["subset"]].entries[int(d.name)])
        diff = np.flatnonzero(a != b)
        # by construction: the event track is zero outside [s, e)
        assert diff[0] == s and diff[-1] == e - 1, d
        assert np.array_equal(a[:s], b[:s]) and np.array_equal(a[e:], b[e:])
        # the clean input is the context track: its speech, then digital silence to the end
        assert np.all(b[:c0] == 0) and np.all(b[c1:] == 0)
        loud = int(TRIM_THRESHOLD * 32767) - 1
        assert abs(b[c0]) > loud and abs(b[c1 - 1]) > loud           # the context's trimmed edges
        # the event starts delay_s after the context ends; trailing_s of silence follow it
        assert s - c1 == round(entry["delay_s"] * SR) and len(a) - e == round(entry["trailing_s"] * SR)
        assert c0 == round(0.5 * SR)
        # the event's edges: above the trim threshold before its gain, so non-zero after it
        gain = 10 ** (entry["level_db"] / 20)
        assert abs(a[s]) >= int(TRIM_THRESHOLD * gain * 32767) and abs(a[e - 1]) >= int(TRIM_THRESHOLD * gain * 32767)
        assert a[s] != 0 and a[e - 1] != 0
        # its level: peak PEAK x gain (16-bit rounding)
        assert abs(np.abs(a[s:e]).max() - PEAK * gain * 32767) <= 1, (d, np.abs(a[s:e]).max())


def test_metadata_is_the_official_format_and_equals_sample_json(mini):
    for d in folders(mini):
        meta = read_json(d / "metadata.json")
        sample = read_json(d / "sample.json")
        ov, ctx = sample["overlap"], sample["context"]
        assert list(meta) == ["context_text", "current_turn_text", "timestamps"]
        assert meta["timestamps"] == [ov["start"], ov["end"]]
        assert ov["start"] == round(ov["start_sample"] / SR, 6) and ov["end"] == round(ov["end_sample"] / SR, 6)
        assert round(ov["start"] * SR) == ov["start_sample"] and round(ov["end"] * SR) == ov["end_sample"]
        assert meta["context_text"] == ctx["text"] and meta["current_turn_text"] == ov["text"]
        assert ov["kind"] == KINDS[sample["task"]] and ov["speaker"] == SPEAKERS[sample["task"]]
        assert [(g["role"], g["speaker"], g["text"], g["start"], g["end"]) for g in sample["segments"]] == [
            ("context", "user", ctx["text"], ctx["start"], ctx["end"]),
            ("overlap", ov["speaker"], ov["text"], ov["start"], ov["end"])]
        assert 0 <= ctx["start"] < ctx["end"] < ov["start"] < ov["end"] < sample["duration_s"]


def test_levels_voices_and_filters_by_task(mini):
    for d in folders(mini):
        sample = read_json(d / "sample.json")
        task, ov, voices = sample["task"], sample["overlap"], sample["voices"]
        if task in ("user_interruption", "user_backchannel"):
            assert sorted(voices) == ["user"] and ov["lowpass_hz"] is None
            assert (ov["level_db"] == 0.0) if task == "user_interruption" else (-6 <= ov["level_db"] < 0)
        else:
            assert sorted(voices) == ["other", "user"]
            assert (voices["user"]["engine"], voices["user"]["voice"]) != \
                (voices["other"]["engine"], voices["other"]["voice"])
            if task == "background_speech":
                assert -20 <= ov["level_db"] <= -15 and ov["lowpass_hz"] is not None
            else:
                assert -10 <= ov["level_db"] < 0
        assert voices["user"]["engine"] == "piper" and voices["user"]["voice"] == "joe"


def spectrum_share(x: np.ndarray, above_hz: float) -> float:
    power = np.abs(np.fft.rfft(x.astype(np.float64))) ** 2
    freqs = np.fft.rfftfreq(len(x), 1 / SR)
    return float(power[freqs > above_hz].sum() / power.sum())


def test_background_events_are_low_passed(mini):
    for d in sorted((mini / "samples" / "background_speech").iterdir()):
        ov = read_json(d / "sample.json")["overlap"]
        event = pcm(d / "input.wav")[ov["start_sample"]: ov["end_sample"]]
        assert spectrum_share(event, ov["lowpass_hz"] + 600) < 1e-3
    t = np.arange(SR) / SR
    low, high = np.sin(2 * np.pi * 500 * t), np.sin(2 * np.pi * 6000 * t)
    assert np.abs(lowpass(low, 3000, SR)[400:-400]).max() == pytest.approx(1.0, abs=1e-3)
    assert np.abs(lowpass(high, 3000, SR)[400:-400]).max() < 1e-3  # below -60 dB


def test_same_config_same_bytes_and_jobs_1_or_2(mini, tmp_path):
    keys = ["background_speech/1", "talking_to_other/0", "user_backchannel/1"]
    twice = synthesize(MINI, tmp_path / "again", dataset="fdb-v1.5-mini", jobs=2, samples=keys)
    one = synthesize(MINI, tmp_path / "one", dataset="fdb-v1.5-mini", jobs=1)
    for tree, ks in ((twice, keys), (one, [f"{s}/{i}" for s in TASKS for i in ("0", "1")])):
        assert_same_sample_files(tree, mini, ks)
    assert (one / "manifest.json").read_bytes() == (mini / "manifest.json").read_bytes()


# -- unhappy paths ----------------------------------------------------------------------------

GOOD = {"context": "Tell me a joke.", "event": "Wait, a short one.", "kind": "interruption", "speaker": "user",
        "delay_s": 2.0, "level_db": 0.0, "trailing_s": 8.0}


@pytest.mark.parametrize("change, task, message", [
    ({"event": " "}, "user_interruption", "'event' must be a non-empty string"),
    ({"kind": "backchannel"}, "user_interruption", "kind must be 'interruption'"),
    ({"speaker": "other"}, "user_interruption", "speaker must be 'user'"),
    ({"kind": "side_talk"}, "talking_to_other", "speaker must be 'other'"),
    ({"delay_s": 0}, "user_interruption", "'delay_s' must be a number in (0, 20]"),
    ({"delay_s": True}, "user_interruption", "'delay_s' must be a number"),
    ({"level_db": 3.0}, "user_interruption", "'level_db' must be a number in [-40, 0]"),
    ({"trailing_s": 0.5}, "user_interruption", "'trailing_s' must be a number in [1, 60]"),
    ({"lowpass_hz": 50}, "user_interruption", "'lowpass_hz' must be a number in [200, 20000]"),
    ({"extra": 1}, "user_interruption", "unknown key(s) extra"),
    ({"context": None}, "user_interruption", "'context' must be a non-empty string"),
])
def test_bad_entries_are_one_line(change, task, message):
    entry = {**GOOD, **change}
    with pytest.raises(ValueError) as exc:
        parse_entry(task, entry)
    assert message in str(exc.value) and "\n" not in str(exc.value)
    with pytest.raises(ValueError, match="missing delay_s"):
        parse_entry("user_interruption", {k: v for k, v in GOOD.items() if k != "delay_s"})


def write_script(folder, subset, doc):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{subset}.json").write_text(json.dumps(doc))
    return folder


@pytest.mark.parametrize("doc, message", [
    ({"format": "fdb-script/2", "samples": [GOOD]}, "format must be 'fdb-v1.5-script/1'"),
    ({"format": "fdb-v1.5-script/1", "extra": 1, "samples": [GOOD]}, "unknown key(s) extra"),
    ({"format": "fdb-v1.5-script/1", "samples": []}, "'samples' must be a non-empty list"),
    ({"format": "fdb-v1.5-script/1", "timing": {"gap_s": 1}, "samples": [GOOD]}, "unknown key(s) gap_s"),
    ({"format": "fdb-v1.5-script/1", "timing": {"lead_s": -1}, "samples": [GOOD]}, "lead_s must be a number"),
    ({"format": "fdb-v1.5-script/1", "voices": {"other": [{"engine": "piper"}]}, "samples": [GOOD]},
     "(user required)"),
    ({"format": "fdb-v1.5-script/1", "voices": [{"engine": "piper", "rate": 3}], "samples": [GOOD]},
     "voices[0]: rate must be a number in [0.5, 2]"),
    ({"format": "fdb-v1.5-script/1", "seed": -1, "samples": [GOOD]}, "seed must be a whole number"),
    ({"format": "fdb-v1.5-script/1", "subset": "other", "samples": [GOOD]}, "differs from the file name"),
])
def test_bad_script_files(tmp_path, doc, message):
    write_script(tmp_path, "user_interruption", doc)
    with pytest.raises(DuplexEvalError) as exc:
        load_scripts(tmp_path, None, voicemix.parse_specs)
    assert message in str(exc.value) and "user_interruption.json" in str(exc.value)


def test_unknown_task_timing_and_sample_keys(tmp_path):
    write_script(tmp_path / "a", "pause_handling", {"format": "fdb-v1.5-script/1", "samples": [GOOD]})
    with pytest.raises(DuplexEvalError, match="the task must be one of user_interruption"):
        load_scripts(tmp_path / "a", None, voicemix.parse_specs)
    with pytest.raises(DuplexEvalError, match="timing given for unknown subset"):
        load_scripts(MINI, {"nope": {"lead_s": 1}}, voicemix.parse_specs)
    with pytest.raises(DuplexEvalError, match="config timing.user_interruption: unknown key"):
        load_scripts(MINI, {"user_interruption": {"delay_s": 1}}, voicemix.parse_specs)
    stage = DatasetStage({"samples": ["user_interruption/9"]}, SYNTH_SERVICE)
    with pytest.raises(DuplexEvalError, match="setting samples names 1 sample"):
        stage.select(Inputs([MINI]), {})
    stage.close()


def test_a_bad_entry_fails_only_its_sample(tmp_path):
    """A low-pass above the Nyquist rate of the dataset's rate, and a wrong kind: two samples
    fail, each with one line naming it; the third is built."""
    src = write_script(tmp_path / "ds", "background_speech", {
        "format": "fdb-v1.5-script/1", "voices": {"user": [{"engine": "piper", "voice": "joe"}]},
        "samples": [{**GOOD, "kind": "background", "speaker": "other", "level_db": -18.0, "lowpass_hz": 9000},
                    {**GOOD, "speaker": "other"},
                    {**GOOD, "kind": "background", "speaker": "other", "level_db": -18.0, "lowpass_hz": 3000}]})
    cfg = write_config(tmp_path / "cfg.json", {"benchmark": "fdb-v1.5", "jobs": 1})
    r = run_cli(["run", "--input", src, "--output", tmp_path / "out", "--config", cfg])
    assert r.returncode == 1, r.stderr
    assert "error: background_speech/0: bad script entry 0 in background_speech.json: lowpass_hz 9000 is not " \
           "below half the sample rate (16000 Hz)" in r.stderr
    assert "error: background_speech/1: bad script entry 1 in background_speech.json: kind must be " \
           "'background'" in r.stderr
    manifest = read_json(tmp_path / "out" / "manifest.json")
    assert [r.get("status", "ok") for r in manifest["samples"]] == ["failed", "failed", "ok"]
    sample = read_json(tmp_path / "out" / "samples" / "background_speech" / "2" / "sample.json")
    # a single-voice mix for the user: the other speaker then speaks in the same voice
    assert sample["voices"]["other"]["voice"] == sample["voices"]["user"]["voice"] == "joe"


def test_config_voices_replace_the_scripts_mixes(tmp_path):
    out = synthesize(MINI, tmp_path / "out", jobs=1, samples=["talking_to_other/1"],
                     voices=[{"engine": "flite", "voice": "kal16"}, {"engine": "flite", "voice": "rms"}])
    voices = read_json(out / "samples" / "talking_to_other" / "1" / "sample.json")["voices"]
    assert {voices["user"]["voice"], voices["other"]["voice"]} == {"kal16", "rms"}
    manifest = read_json(out / "manifest.json")
    assert manifest["source"]["voice_mixes"]["talking_to_other"]["voices"][0]["voice"] == "kal16"
