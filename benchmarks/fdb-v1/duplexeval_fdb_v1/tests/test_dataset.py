"""The synthesized samples: files, schemas and annotations that match the audio by construction."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf

from duplexeval_common import schemas
from duplexeval_common.hashing import sha256_file
from duplexeval_common.jsonio import read_json
from duplexeval_tts.engines import PEAK, TRIM_THRESHOLD
from duplexeval_fdb_v1.dataset.scripts import load_scripts, parse_entry

from duplexeval_fdb_v1.schemas import SCHEMAS
from duplexeval_tts import voices as voicemix
from tests.tts_synth.conftest import DATASET, SUBSETS, mini  # noqa: F401  (mini: a fixture)

SR = 16000
LOUD = int(TRIM_THRESHOLD * 32767) - 1  # a trimmed segment's edge sample is above the threshold


def pcm(path) -> np.ndarray:
    info = sf.info(str(path))
    assert (info.samplerate, info.channels, info.subtype) == (SR, 1, "PCM_16")
    return sf.read(str(path), dtype="int16")[0].astype(np.int32)


def n(t: float) -> int:
    k = t * SR
    assert abs(k - round(k)) < 1e-6, f"{t} is not on the sample grid"
    return int(round(k))


def sample_dirs(out, subset):
    dirs = sorted((out / "samples" / subset).iterdir())
    assert dirs, f"no {subset} samples"  # the checks below loop over them
    return dirs


def test_shipped_scripts_parse():
    scripts = load_scripts(DATASET, None, voicemix.parse_specs)
    assert sorted(scripts) == list(SUBSETS)
    for script in scripts.values():
        assert len(script.entries) >= (10 if not script.v2 else 3)
        for entry in script.entries:
            parse_entry(script.task, entry, script.v2)


def test_manifest_and_schemas(mini):
    manifest = read_json(mini / "manifest.json")
    assert schemas.problem("manifest", manifest) is None
    assert [(r["subset"], r["id"]) for r in manifest["samples"]] == \
        [(s, "0") for s in SUBSETS]
    assert manifest["source"]["engine"] == "piper" and manifest["source"]["voice"] == "joe"
    assert len(manifest["source"]["voice_model_sha256"]) == 64
    official = {"synthetic_pause_handling": ("pause.json", "pause"),
                "synthetic_turn_taking": ("turn_taking.json", "turn-taking"),
                "synthetic_user_interruption": ("interrupt.json", "interrupt"),
                "synthetic_backchannel": ("transcription.json", None)}
    for row in manifest["samples"]:
        d = mini / "samples" / row["subset"] / row["id"]
        for name, digest in row["files"].items():
            assert sha256_file(d / name) == digest
        name, schema = official[row["subset"]]
        assert (d / name).is_file()
        if schema is not None:
            assert SCHEMAS.problem(schema, read_json(d / name)) is None
        sample = read_json(d / "sample.json")
        assert schemas.problem("sample", sample) is None
        assert sample["duration_s"] == row["duration_s"] == len(pcm(d / "input.wav")) / SR
        assert sample["id"] == row["id"] and sample["task"] == row["task"]
    assert set(row["files"]) == {"input.wav", "context.wav", "interrupt.wav", "interrupt.json", "sample.json"}


def check_segment(audio, seg):
    a, b = n(seg["start"]), n(seg["end"])
    assert abs(audio[a]) > LOUD and abs(audio[b - 1]) > LOUD, seg
    assert np.abs(audio[a:b]).max() >= int(PEAK * 32767) - 2  # each segment is peak-normalized


def test_pause_handling(mini):
    script = load_scripts(DATASET, None, voicemix.parse_specs)["synthetic_pause_handling"]
    for d in sample_dirs(mini, "synthetic_pause_handling"):
        audio = pcm(d / "input.wav")
        sample = read_json(d / "sample.json")
        pauses = [p["timestamp"] for p in read_json(d / "pause.json")]
        assert pauses == sample["pauses"]
        scripted = [x for x in script.entries[int(d.name)]["speech"] if not isinstance(x, str)]
        assert len(scripted) == 2 or d.name != "0"  # sample 0 covers two pauses
        assert [round(b - a, 6) for a, b in pauses] == scripted
        segs = sample["segments"]
        assert len(segs) == len(pauses) + 1
        assert np.all(audio[: n(segs[0]["start"])] == 0)
        for seg, (a, b), nxt in zip(segs, pauses, segs[1:]):
            assert seg["end"] == a and nxt["start"] == b        # speech right up to and from each pause
            assert np.all(audio[n(a): n(b)] == 0)               # the pause is digital silence
        for seg in segs:
            check_segment(audio, seg)
        assert sample["turn_end_s"] == segs[-1]["end"]
        assert np.all(audio[n(segs[-1]["end"]):] == 0)
        assert len(audio) - n(segs[-1]["end"]) == 2 * SR        # trailing silence


def test_turn_taking(mini):
    for d in sample_dirs(mini, "synthetic_turn_taking"):
        audio = pcm(d / "input.wav")
        sample = read_json(d / "sample.json")
        (tt,) = read_json(d / "turn_taking.json")
        e, e_plus = tt["timestamp"]
        assert tt["text"] == "[TURN-TAKING]" and sample["turn_end_s"] == e
        assert n(e_plus) - n(e) == round(0.4 * SR)
        (seg,) = sample["segments"]
        assert seg["end"] == e and seg["start"] == 0.5
        check_segment(audio, seg)
        assert np.all(audio[n(e):] == 0) and len(audio) - n(e) == 5 * SR


def test_user_interruption(mini):
    for d in sample_dirs(mini, "synthetic_user_interruption"):
        audio = pcm(d / "input.wav")
        context, interrupt = pcm(d / "context.wav"), pcm(d / "interrupt.wav")
        sample = read_json(d / "sample.json")
        (ann,) = read_json(d / "interrupt.json")
        s, r = ann["timestamp"]
        gap, trailing = 4 * SR, 8 * SR
        # the official structure: input = context + gap + interrupt + trailing silence
        expected = np.concatenate([context, np.zeros(gap, np.int32), interrupt, np.zeros(trailing, np.int32)])
        assert np.array_equal(audio, expected)
        assert n(s) == len(context) + gap and n(r) == n(s) + len(interrupt)
        ctx_seg, int_seg = sample["segments"]
        assert (ctx_seg["role"], int_seg["role"]) == ("context", "interrupt")
        assert ctx_seg["end"] == len(context) / SR and (int_seg["start"], int_seg["end"]) == (s, r)
        assert sample["interrupt"] == {"start": s, "end": r, "context": ann["context"],
                                       "interrupt": ann["interrupt"]}
        for seg in (ctx_seg, int_seg):
            check_segment(audio, seg)


@pytest.mark.parametrize("entry,task,message", [
    ({"speech": ["only text"]}, "pause_handling", "at least one pause"),
    ({"speech": ["a", -1, "b"]}, "pause_handling", "speech[1]"),
    ({"speech": ["a", 1.0, "b", 1.0]}, "pause_handling", "end with text"),
    ({"speech": ["a", 1.0, ""]}, "pause_handling", "speech[2]"),
    ({"txt": "hi"}, "smooth_turn_taking", "missing text"),
    ({"text": "  "}, "smooth_turn_taking", "non-empty"),
    ({"context": "a"}, "user_interruption", "missing interrupt"),
    ("just a string", "user_interruption", "expected an object"),
])
def test_bad_entries_are_one_line(entry, task, message):
    with pytest.raises(ValueError) as exc:
        parse_entry(task, entry)
    assert message in str(exc.value) and "\n" not in str(exc.value)
