"""The deterministic offline segmenter (rule gap-v1) as a stage, on synthetic two-channel
dialogues with known turns (tests/turn_segmenter/dialogues.py: constructed transcripts): every
user turn boundary within 100 ms from VAD segments and from ASR words alone; the rule's edges;
same bytes twice; bad inputs as one line naming the dialogue, the other dialogues kept."""

import json

import pytest

from duplexeval_common.jsonio import read_jsonl
from duplexeval_common.schemas import validate
from duplexeval_segmenter import offline

from .dialogues import dialogue, write
from .helpers import boundaries_within, run_cli, run_stage, segmentation

SEEDS = range(12)


@pytest.mark.parametrize("source", ["vad", "words"])
def test_recovers_every_user_turn_within_100_ms(tmp_path, source):
    ds = {f"mtr_dq/d{seed:03d}": dialogue(seed) for seed in SEEDS}
    if source == "words":
        for d in ds.values():
            for role in ("user", "model"):
                del d[role]["vad_segments"]
    inputs = write(tmp_path / "in", ds)
    rc, stage = run_stage(inputs, tmp_path / "out", {})
    assert rc == 0 and all(s["status"] == "ok" for s in stage["samples"].values())
    for key, d in ds.items():
        rec = segmentation(tmp_path / "out", key)
        validate("segmentation", rec)
        assert rec["method"] == "offline" and rec["llm"] is None
        assert rec["offline"] == {"rule": "gap-v1", "parameters": offline.DEFAULTS}
        assert rec["inputs"]["user"]["speech"] == ("vad_segments" if source == "vad" else "words")
        assert len(d["turns"]) == 10 and boundaries_within(rec["turns"], d["turns"]), key
        assert all(t["votes"] is None for t in rec["turns"])
        w = rec["windows"]
        assert [x["round"] for x in w] == list(range(1, 11))
        assert all(w[k]["end"] == rec["turns"][k + 1]["end"] for k in range(9))
        assert w[-1]["end"] == d["duration"] == rec["dialogue_end_s"]
        assert rec["dialogue_end_source"] == "model.json duration_s" or rec["dialogue_end_source"] == "user.json duration_s"
    rows = read_jsonl(tmp_path / "out" / "semantic_turned_time.jsonl")
    assert [r["sample"] for r in rows] == sorted(ds) and rows[0]["id"] == "d000"
    assert rows[0]["filtered_turn"] == [{"start": t["start"], "end": t["end"]}
                                        for t in segmentation(tmp_path / "out", "mtr_dq/d000")["turns"]]


def test_same_bytes_twice(tmp_path):
    inputs = write(tmp_path / "in", {f"s/d{k}": dialogue(k) for k in range(3)})
    run_stage(inputs, tmp_path / "a", {})
    run_stage(inputs, tmp_path / "b", {})
    for k in range(3):
        a = (tmp_path / "a" / "samples" / "s" / f"d{k}" / "segmentation.json").read_bytes()
        assert a == (tmp_path / "b" / "samples" / "s" / f"d{k}" / "segmentation.json").read_bytes()
    assert (tmp_path / "a" / "semantic_turned_time.jsonl").read_bytes() == \
        (tmp_path / "b" / "semantic_turned_time.jsonl").read_bytes()


def test_rule_edges():
    seg = offline.segment
    # a pause of 2.4 s with no model speech continues the turn; 2.5 s starts a new one
    assert [(t.start, t.end) for t in seg([(0, 1), (3.4, 4)], [], (0, 10))] == [(0, 4)]
    assert [(t.start, t.end) for t in seg([(0, 1), (3.5, 4)], [], (0, 10))] == [(0, 1), (3.5, 4)]
    # model speech of 0.9 s in the gap is a backchannel; 1.0 s is a response
    assert len(seg([(0, 1), (2.5, 3)], [(1.2, 2.1)], (0, 10))) == 1
    assert len(seg([(0, 1), (2.5, 3)], [(1.2, 2.2)], (0, 10))) == 2
    # an answer the user cuts into counts whole: 0.6 s in the gap, 1.5 s from the gap on
    assert len(seg([(0, 1), (1.6, 3)], [(1.0, 2.5)], (0, 10))) == 2
    # a user interval under 1 s overlapping model speech is a backchannel: no turn, no boundary
    assert [(t.start, t.end) for t in seg([(0, 2), (4, 4.5), (8, 9)], [(2.5, 7)], (0, 10))] == [(0, 2), (8, 9)]
    assert len(seg([(0, 2), (4, 5.0), (8, 9)], [(2.5, 7)], (0, 10))) == 3
    # a short user answer with the model silent is a turn
    assert len(seg([(0, 2), (5, 5.4)], [(2.5, 4.5)], (0, 10))) == 2
    # words 0.05 s apart are bridged (min_silence_s 0.3), so a phrase is one interval
    words = [(0.0, 0.3), (0.35, 0.6), (0.65, 0.9), (0.95, 1.2)]
    assert len(seg(words, [(0.1, 5)], (0, 10))) == 1
    assert seg(words, [(0.1, 5)], (0, 10), min_silence_s=0.0) == []
    # only turns starting inside the span
    assert [t.start for t in seg([(0, 1), (5, 6), (9.5, 9.9)], [(1.5, 4), (6.5, 9)], (4, 9.5))] == [5]


def test_config_changes_the_rule_and_is_recorded(tmp_path):
    inputs = write(tmp_path / "in", {"s/d0": dialogue(0)})
    cfg = {"offline": {"max_gap_s": 0.3, "speech_source": "words"}, "span_start_s": 20.0, "dialogue_end_s": 200.0}
    rc, _ = run_stage(inputs, tmp_path / "out", cfg)
    rec = segmentation(tmp_path / "out", "s/d0")
    assert rc == 0 and rec["offline"]["parameters"]["max_gap_s"] == 0.3
    assert rec["settings"]["span_start_s"] == 20.0 and rec["span"] == {"start": 20.0, "end": 200.0}
    assert all(t["start"] >= 20.0 for t in rec["turns"]) and rec["windows"][-1]["end"] == 200.0
    assert rec["dialogue_end_source"] == "config dialogue_end_s"
    assert len(rec["turns"]) > 10  # pauses inside turns now split them


BAD = {
    "no-model": ({"model": None}, "model.json is missing"),
    "not-json": ({"model": "{oops"}, "model.json is not valid JSON"),
    "schema": ({"user": {"words": "many"}}, "turn-segmenter-channel schema: at words"),
    "backwards": ({"user": {"words": [{"text": "hi", "start": 5.0, "end": 4.0}], "duration_s": 9}},
                  "user.json: words[0] spans (5.0, 4.0) s"),
    "no-end": ({"user": {"words": [{"text": "hi", "start": 1.0, "end": 2.0}]},
                "model": {"words": [{"text": "yo", "start": 3.0, "end": 4.5}]}}, "no dialogue end"),
    "silent": ({"user": {"words": [], "duration_s": 10}, "model": {"words": [], "duration_s": 10}},
               "no user turn found in [0.0, 10.0] s"),
    "too-short": ({"model": {"words": [{"text": "x", "start": 1, "end": 2}], "duration_s": 3.0},
                   "user": {"words": [{"text": "hi", "start": 1.0, "end": 5.0}], "duration_s": 3.0}},
                  "a turn ends at 5.0 s, after the dialogue end 3.0 s"),
}


def test_bad_inputs_one_line_naming_the_dialogue(tmp_path):
    ds = {"s/good": dialogue(1)}
    for name, (change, _) in BAD.items():
        d = dialogue(2)
        d.update(change)
        ds[f"s/{name}"] = d
    inputs = write(tmp_path / "in", ds)
    r = run_cli(tmp_path, inputs, {})
    assert r.returncode == 1, r.stderr
    stage = json.loads((tmp_path / "out" / "stage.json").read_text())
    assert stage["samples"]["s/good"]["status"] == "ok"
    errors = [line for line in r.stderr.splitlines() if line.startswith("error: ")]
    for name, (_, problem) in BAD.items():
        reason = stage["samples"][f"s/{name}"]["reason"]
        assert problem in reason and "\n" not in reason, (name, reason)
        assert not (tmp_path / "out" / "samples" / "s" / name).exists()
        assert [e for e in errors if e.startswith(f"error: s/{name}: ")], name
    rows = read_jsonl(tmp_path / "out" / "semantic_turned_time.jsonl")
    assert [r["sample"] for r in rows] == ["s/good"]


@pytest.mark.parametrize("cfg, msg", [
    ({"runs": 0}, "runs must be an integer of at least 1, got 0"),
    ({"median": "mean"}, "median must be upper or middle"),
    ({"offline": {"gap": 1}}, "unknown offline setting(s) gap"),
    ({"segmenter": "llm"}, 'segmenter "llm" needs the llm setting'),
    ({"min_parsed_runs": 7}, "min_parsed_runs must be an integer from 1 to runs (6)"),
    ({"span_start_s": 50, "span_end_s": 40}, "span_end_s must be above span_start_s (50)"),
    ({"iou_threshold": 0}, "iou_threshold must be a number in (0, 1]"),
])
def test_bad_settings_are_one_line(cfg, msg):
    from duplexeval_common.errors import DuplexEvalError
    from duplexeval_segmenter.settings import resolve
    with pytest.raises(DuplexEvalError) as exc:
        resolve(cfg)
    assert msg in str(exc.value) and "\n" not in str(exc.value)


def test_bad_settings_stop_the_stage_with_one_line(tmp_path):
    inputs = write(tmp_path / "in", {"s/d0": dialogue(0)})
    r = run_cli(tmp_path, inputs, {"colour": 1})
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "unknown turn-segmenter setting(s) colour" in r.stderr
    assert not (tmp_path / "out").exists()
    r = run_cli(tmp_path, inputs, {"median": "mean"}, sub="check")
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert run_cli(tmp_path, inputs, {}, sub="check").stdout == "ok\n"


def test_reads_the_asr_aligners_transcript_json_as_it_is(tmp_path):
    """user.json/model.json may be the asr-aligner's transcript.json (its extra keys unread)."""
    def transcript(words, channel):
        return {"backend": "faster-whisper", "model": "small.en", "model_sha256": "0" * 64, "settings": {},
                "text": " ".join(w[0] for w in words), "offset_s": 0.0, "language": "en", "channel": channel,
                "words": [{"text": t, "start": s, "end": e, "probability": 0.9, "no_speech": False}
                          for t, s, e in words], "duration_s": 12.0}
    user = transcript([("What", 1.0, 1.3), ("time", 1.35, 1.6), ("is", 1.65, 1.8), ("it?", 1.85, 2.2),
                       ("And", 6.0, 6.3), ("the", 6.35, 6.5), ("date?", 6.55, 7.1)], "left")
    model = transcript([("It", 2.6, 2.8), ("is", 2.85, 3.0), ("noon,", 3.05, 3.5), ("exactly.", 3.6, 4.4),
                        ("Monday.", 7.5, 8.6)], "right")
    user["words"].append({"text": "uh", "start": 9.0, "end": None, "probability": None})
    inputs = write(tmp_path / "in", {"s/t": {"user": user, "model": model}})
    rc, _ = run_stage(inputs, tmp_path / "out", {})
    rec = segmentation(tmp_path / "out", "s/t")
    assert rc == 0 and [(t["start"], t["end"]) for t in rec["turns"]] == [(1.0, 2.2), (6.0, 7.1)]
    assert rec["inputs"]["user"]["transcript_lines"] == "words" and rec["inputs"]["user"]["lines"] == 3


