"""The deterministic offline segmenter (rules gap-v2, the default, and gap-v1) as a stage, on
synthetic two-channel dialogues with known turns (tests/turn_segmenter/dialogues.py: constructed
transcripts): every user turn boundary within 100 ms from VAD segments and from ASR words alone;
the rules' edges (talked-over speech, an interruption that pauses, turn ends from the VAD's
probabilities); same bytes twice; bad inputs as one line naming the dialogue, the other
dialogues kept. Through real audio: benchmarks/mtr/duplexeval_mtr/tests/test_turn_ends.py."""

import functools
import json

import pytest

from duplexeval_common.jsonio import read_jsonl
from duplexeval_common.schemas import validate
from duplexeval_segmenter import offline
from duplexeval_segmenter.channels import Probs

from .dialogues import dialogue, write
from .helpers import boundaries_within, run_cli, run_stage, segmentation

SEEDS = range(12)


@pytest.mark.parametrize("rule", ["gap-v2", "gap-v1"])
@pytest.mark.parametrize("source", ["vad", "words"])
def test_recovers_every_user_turn_within_100_ms(tmp_path, source, rule):
    ds = {f"mtr_dq/d{seed:03d}": dialogue(seed) for seed in SEEDS}
    if source == "words":
        for d in ds.values():
            for role in ("user", "model"):
                del d[role]["vad_segments"]
    inputs = write(tmp_path / "in", ds)
    rc, stage = run_stage(inputs, tmp_path / "out", {} if rule == "gap-v2" else {"offline": {"rule": rule}})
    assert rc == 0 and all(s["status"] == "ok" for s in stage["samples"].values())
    for key, d in ds.items():
        rec = segmentation(tmp_path / "out", key)
        validate("segmentation", rec)
        assert rec["method"] == "offline" and rec["llm"] is None
        assert rec["offline"] == {"rule": rule, "parameters": offline.defaults(rule)}
        assert rec["settings"]["offline"] == {"rule": rule, **offline.defaults(rule)}
        assert rec["inputs"]["user"]["speech"] == ("vad_segments" if source == "vad" else "words")
        assert rec["inputs"]["user"]["turn_ends"] == "speech"  # these user.json have no vad_probs
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


def test_vad_probabilities_place_the_turn_ends(tmp_path):
    """Silero-like probabilities (tests/turn_segmenter/dialogues.py: the probability stays up
    two windows after the speech, then decays): the VAD segments end 94-126 ms late, and so do
    gap-v1's turns; gap-v2 ends each turn at the start of the last window at or above the
    threshold, 32-64 ms late (the truth and the turns are rounded to 2 decimals)."""
    ds = {f"mtr_dq/d{seed:03d}": dialogue(seed, probs=True) for seed in SEEDS}
    inputs = write(tmp_path / "in", ds)
    assert run_stage(inputs, tmp_path / "v1", {"offline": {"rule": "gap-v1"}})[0] == 0
    assert run_stage(inputs, tmp_path / "v2", {})[0] == 0
    late = []
    for key, d in ds.items():
        v1, v2 = segmentation(tmp_path / "v1", key), segmentation(tmp_path / "v2", key)
        assert v1["inputs"]["user"]["turn_ends"] == "speech" and v2["inputs"]["user"]["turn_ends"] == "vad_probs"
        assert len(v1["turns"]) == len(v2["turns"]) == len(d["turns"]) == 10
        for t1, t2, (s, e) in zip(v1["turns"], v2["turns"], d["turns"]):
            assert abs(t1["start"] - s) <= 0.1 and t1["start"] == t2["start"]
            late.append(t1["end"] - e)
            assert 0.084 <= t1["end"] - e <= 0.136
            assert 0.022 <= t2["end"] - e <= 0.074
    assert max(late) > 0.1


def test_same_bytes_twice(tmp_path):
    inputs = write(tmp_path / "in", {f"s/d{k}": dialogue(k) for k in range(3)})
    run_stage(inputs, tmp_path / "a", {})
    run_stage(inputs, tmp_path / "b", {})
    for k in range(3):
        a = (tmp_path / "a" / "samples" / "s" / f"d{k}" / "segmentation.json").read_bytes()
        assert a == (tmp_path / "b" / "samples" / "s" / f"d{k}" / "segmentation.json").read_bytes()
    assert (tmp_path / "a" / "semantic_turned_time.jsonl").read_bytes() == \
        (tmp_path / "b" / "semantic_turned_time.jsonl").read_bytes()


@pytest.mark.parametrize("rule", offline.RULES)
def test_rule_edges(rule):
    def seg(*args, **kw):
        return offline.segment(*args, rule=rule, **kw)
    # a pause of 2.4 s with no model speech continues the turn; 2.5 s starts a new one
    assert [(t.start, t.end) for t in seg([(0, 1), (3.4, 4)], [], (0, 10))] == [(0, 4)]
    assert [(t.start, t.end) for t in seg([(0, 1), (3.5, 4)], [], (0, 10))] == [(0, 1), (3.5, 4)]
    # model speech of 0.9 s in the gap is a backchannel; 1.0 s is a response
    assert len(seg([(0, 1), (2.5, 3)], [(1.2, 2.1)], (0, 10))) == 1
    assert len(seg([(0, 1), (2.5, 3)], [(1.2, 2.2)], (0, 10))) == 2
    # an answer the user cuts into counts whole: 0.6 s in the gap, 1.5 s from the gap on
    assert len(seg([(0, 1), (1.6, 3)], [(1.0, 2.5)], (0, 10))) == 2
    # a short user interval inside model speech is a backchannel: no turn, no boundary
    assert [(t.start, t.end) for t in seg([(0, 2), (4, 4.5), (8, 9)], [(2.5, 7)], (0, 10))] == [(0, 2), (8, 9)]
    # a short user answer with the model silent is a turn
    assert len(seg([(0, 2), (5, 5.4)], [(2.5, 4.5)], (0, 10))) == 2
    # words 0.05 s apart are bridged (min_silence_s 0.3), so a phrase is one interval
    words = [(0.0, 0.3), (0.35, 0.6), (0.65, 0.9), (0.95, 1.2)]
    assert len(seg(words, [(0.1, 5)], (0, 10))) == 1
    # only turns starting inside the span
    assert [t.start for t in seg([(0, 1), (5, 6), (9.5, 9.9)], [(1.5, 4), (6.5, 9)], (4, 9.5))] == [5]


def test_rule_edges_where_the_rules_differ():
    v1 = functools.partial(offline.segment, rule="gap-v1")
    v2 = offline.segment
    # user speech of 1 s or more that the model talks through: gap-v1 a turn, gap-v2 none
    assert len(v1([(0, 2), (4, 5.0), (8, 9)], [(2.5, 7)], (0, 10))) == 3
    assert len(v2([(0, 2), (4, 5.0), (8, 9)], [(2.5, 7)], (0, 10))) == 2
    # gap-v2: talked over when the model's speech (its pauses under 0.5 s bridged) runs from at or
    # before the user's start to 0.1 s (talkover_hold_s) or more after the user's end
    floor = offline.bridge([(2.5, 7.0), (7.4, 9.0), (10.0, 12.0)], 0.5)
    assert floor == [(2.5, 9.0), (10.0, 12.0)]
    assert offline.talked_over((2.5, 8.9), floor) and offline.talked_over((3.0, 4.0), floor)
    assert offline.talked_over((6.9, 7.5), floor)        # into a pause of the model, which goes on
    assert not offline.talked_over((2.4, 3.0), floor)    # starts before the model
    assert not offline.talked_over((8.0, 8.95), floor)   # the model stops with it (under 0.1 s after)
    assert not offline.talked_over((8.5, 10.5), floor)   # spans a pause of 1 s
    # a backchannel said into a short pause of the model: gap-v1 drops it (under 1 s, overlapping),
    # and so does gap-v2 (the model goes on after it); the user's next turn is one turn
    user, model = [(0, 2), (5.3, 5.7), (11, 13)], [(2.5, 5.4), (5.75, 10)]
    assert [(t.start, t.end) for t in v2(user, model, (0, 15))] == [(0, 2), (11, 13)]
    assert [(t.start, t.end) for t in v1(user, model, (0, 15))] == [(0, 2), (11, 13)]
    # words unbridged: gap-v1 drops every word that overlaps the model; gap-v2 keeps the one
    # that starts before the model does
    words = [(0.0, 0.3), (0.35, 0.6), (0.65, 0.9), (0.95, 1.2)]
    assert v1(words, [(0.1, 5)], (0, 10), min_silence_s=0.0) == []
    assert [(t.start, t.end) for t in v2(words, [(0.1, 5)], (0, 10), min_silence_s=0.0)] == [(0.0, 0.3)]


def test_gap_v2_keeps_background_speech_out_of_the_turns():
    """Background speech on the user channel inside a model response (MTR-DuplexBench's B
    feature): gap-v1 takes it for a turn of its own, or joins it to the next turn when the
    response ends less than min_response_s after it; gap-v2 leaves it out."""
    model = [(2.5, 8.0), (10.5, 13.0)]
    alone = [(0, 2), (4.0, 5.2), (8.6, 10)]          # background 4.0-5.2, 2.8 s before the response ends
    joined = [(0, 2), (6.4, 7.6), (8.6, 10)]         # background 6.4-7.6, 0.4 s before it ends
    turns = lambda f, user: [(t.start, t.end) for t in f(user, model, (0, 15))]  # noqa: E731
    v1 = functools.partial(offline.segment, rule="gap-v1")
    assert turns(v1, alone) == [(0, 2), (4.0, 5.2), (8.6, 10)]
    assert turns(v1, joined) == [(0, 2), (6.4, 10)]
    assert turns(offline.segment, alone) == turns(offline.segment, joined) == [(0, 2), (8.6, 10)]


@pytest.mark.parametrize("stop", [6.0, 6.3, 6.35])
def test_gap_v2_keeps_an_interruption_that_pauses(stop):
    """The user cuts into the model's response with a few words (under 1 s), the model stops
    before them, with them or just after (under talkover_hold_s), the user pauses and goes on
    (MTR-DuplexBench's I+P round): gap-v1 took the first words for a backchannel and started the
    turn after the pause; gap-v2 starts it at the interruption."""
    user = [(0, 2), (5.5, 6.3), (7.8, 10)]
    model = [(2.5, stop), (10.5, 12)]
    v1 = offline.segment(user, model, (0, 15), rule="gap-v1")
    v2 = offline.segment(user, model, (0, 15))
    assert [(t.start, t.end) for t in v1] == [(0, 2), (7.8, 10)]
    assert [(t.start, t.end) for t in v2] == [(0, 2), (5.5, 10)]


def probs_of(speech: list[tuple[int, int]], n: int, tail: tuple[float, ...] = (0.9, 0.45, 0.2, 0.05)):
    """Window probabilities: 1.0 over each [first, last] window span, then `tail` decaying."""
    values = [0.01] * n
    for a, b in speech:
        for j in range(a, b + 1):
            values[j] = 1.0
        for k, p in enumerate(tail, start=b + 1):
            if k < n:
                values[k] = max(values[k], p)
    return Probs(0.032, 0.5, tuple(values))


def test_gap_v2_ends_a_turn_at_the_last_window_at_or_above_the_threshold():
    """The VAD segment ends 30 ms after the first window under 0.35 (Silero's rule); the turn
    ends at the start of the last window at or above 0.5 instead, inside the last interval."""
    w = 0.032
    probs = probs_of([(31, 93), (125, 187)], 400)   # speech windows 31-93 and 125-187
    # Silero's segments: from window 31 (less the 30 ms pad) to window 96 (the first under 0.35:
    # 94 is 0.9, 95 is 0.45) plus the pad, the same for the second
    user = [(31 * w - 0.03, 96 * w + 0.03), (125 * w - 0.03, 190 * w + 0.03)]
    v2 = offline.segment(user, [], (0, 20), probs=probs, max_gap_s=0.5)
    assert [(t.start, t.end) for t in v2] == [(round(31 * w - 0.03, 2), round(94 * w, 2)),
                                              (round(125 * w - 0.03, 2), round(188 * w, 2))]
    # one turn over both intervals: its end is the second's
    one = offline.segment(user, [], (0, 20), probs=probs)
    assert [(t.start, t.end) for t in one] == [(round(31 * w - 0.03, 2), round(188 * w, 2))]
    # gap-v1 and gap-v2 without probabilities end at the segment
    for turns in (offline.segment(user, [], (0, 20), probs=probs, rule="gap-v1"), offline.segment(user, [], (0, 20))):
        assert turns[-1].end == round(190 * w + 0.03, 2)
    # no window at or above the threshold inside the last interval: the segment's end stays
    flat = Probs(0.032, 0.5, tuple([0.4] * 400))
    assert offline.segment(user, [], (0, 20), probs=flat)[-1].end == round(190 * w + 0.03, 2)
    assert offline.speech_end(3.0, 2.0, Probs(0.032, 0.5, ())) == 3.0


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
    "probs-short": ({"user": {"words": [{"text": "hi", "start": 1.0, "end": 2.0}], "duration_s": 10.0,
                              "vad_probs": {"window_s": 0.032, "threshold": 0.5, "values": [0.9] * 100}}},
                    "user.json: vad_probs cover 3.200 s (100 windows of 0.032 s), not the channel's duration_s 10.0 s"),
    "probs-values": ({"user": {"words": [{"text": "hi", "start": 1.0, "end": 2.0}], "duration_s": 3.2,
                               "vad_probs": {"window_s": 0.032, "threshold": 0.5, "values": [0.9] * 99 + [1.5]}}},
                     "user.json: vad_probs values must be numbers from 0 to 1"),
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
    ({"offline": {"rule": "gap-v3"}}, "offline.rule must be gap-v1 or gap-v2, got 'gap-v3'"),
    ({"offline": {"backchannel_max_s": 0.8}},
     "offline setting(s) backchannel_max_s do not apply to rule gap-v2 (rule gap-v1 reads them)"),
    ({"offline": {"rule": "gap-v1", "backchannel_max_s": -1}}, "offline.backchannel_max_s must be a number of at least 0"),
    ({"offline": {"rule": "gap-v1", "talkover_hold_s": 0.2}},
     "offline setting(s) talkover_hold_s do not apply to rule gap-v1 (rule gap-v2 reads them)"),
    ({"offline": {"talkover_pause_s": "long"}}, "offline.talkover_pause_s must be a number of at least 0"),
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


