"""Rule-by-rule tests of the v1.5 scoring library on hand-made segments, words and replies."""

from __future__ import annotations

import math

import numpy as np
import pytest

from duplexeval_common.errors import DuplexEvalError, InputError
from duplexeval_common.timebase import INF
from duplexeval_fdb_v1_5.score import adaptation, behavior, checks, significance, timing, unified, vad


# ---- official timing ----

def test_merge_gaps_are_the_codes_not_the_comments():
    assert timing.merge([(0.0, 1.0), (1.5, 2.0)], timing.USER_MERGE_GAP_S) == [(0.0, 2.0)]
    assert timing.merge([(0.5, 1.0), (1.1, 2.0)], 0.6) == [(0.5, 2.0)]  # 1.6 - 1.0 > 0.6 in floats: not merged
    assert timing.merge([(0.0, 1.0), (1.61, 2.0)], timing.USER_MERGE_GAP_S) == [(0.0, 1.0), (1.61, 2.0)]
    assert timing.merge([(2.3, 3.0), (0.0, 1.0), (1.5, 1.7)], timing.MODEL_MERGE_GAP_S) == [(0.0, 1.7), (2.3, 3.0)]


def test_stop_and_response_lists():
    user = [(0.0, 1.0), (3.0, 4.0)]
    model = [(0.5, 3.5), (4.2, 5.0)]
    assert timing.stop_list(user, model) == [[0.5, 1.0], [3.0, 3.5]]
    # the model start after each user end: 0.5 is not after 1.0, so user 1.0 -> 4.2 and 4.0 -> 4.2;
    # the later user end is kept
    assert timing.response_list(user, model) == [[4.0, 4.2]]
    assert timing.response_list([(0.0, 1.0)], [(0.2, 0.9)]) == []


def test_stop_list_keeps_the_shortest_per_millisecond_end():
    # two overlaps ending at the same (rounded) time: the shorter is kept
    user = [(0.0, 2.0), (2.0004, 3.0)]
    model = [(1.0, 2.0002), (1.9, 3.0)]
    got = timing.stop_list(user, model)
    assert all(len(iv) == 2 for iv in got) and got == sorted(got, key=lambda iv: iv[1])


def test_latency_intervals_from_samples_and_summary():
    sr = 16000
    li = timing.latency_intervals([(0, sr), (3 * sr, 4 * sr)], [(sr // 2, 7 * sr // 2), (int(4.2 * sr), 5 * sr)])
    assert li == {"latency_stop_list": [[0.5, 1.0], [3.0, 3.5]], "latency_resp_list": [[4.0, 4.2]]}
    s = timing.summary({"a": li, "b": {"latency_stop_list": [], "latency_resp_list": []}})
    assert s["label"] == timing.AGGREGATION_LABEL
    assert s["stop_latency_s"] == {"mean": 0.5, "n_samples": 1, "n_empty": 1, "pooled_mean": 0.5, "n_intervals": 2}
    assert s["response_latency_s"]["mean"] == pytest.approx(0.2)


def test_timing_feed_refuses_stereo_and_resamples():
    with pytest.raises(InputError, match="2 channels"):
        vad.timing_feed(np.zeros((100, 2), np.float32), 16000, "s/1")
    assert len(vad.timing_feed(np.zeros((2400, 1), np.float32), 24000)) == 1600


# ---- official adaptation ----

def W(*items):
    return [{"text": f"w{i}", "timestamp": [s, e]} for i, (s, e) in enumerate(items)]


def test_split_is_word_aligned():
    words = W((1.0, 1.5), (2.0, 2.6), (3.0, 3.2))
    assert adaptation.split_time(1.8, words, 5.0) == 2.0          # first word starting after E
    assert adaptation.split_time(2.2, words, 5.0) == 2.0          # the word spanning E
    assert adaptation.split_time(4.0, words, 5.0) == 3.2          # none after: the last word's end
    assert adaptation.split_time(4.0, [], 3.5) == 3.5             # no words: E, clamped to T
    assert adaptation.split_time(1.8, [{"text": "x"}] + words, 5.0) == 2.0  # untimed words skipped
    pre, post = adaptation.partition(words, 2.0)
    assert len(pre) == 1 and len(post) == 2


def test_speaking_rate_and_bad_words():
    assert adaptation.speaking_rate(W((1.0, 1.5), (2.0, 3.0))) == (60 * 2 / 2.0, 2.0)
    assert adaptation.speaking_rate([]) == (0.0, 0.0)
    assert adaptation.speaking_rate(W((2.0, 2.0))) == (0.0, 0.0)
    with pytest.raises(InputError, match="s/2"):
        adaptation.split_time(1.0, [{"text": "a", "timestamp": [1.0, None]}], 5.0, "s/2")


def test_trimmed_mean():
    assert adaptation.trimmed([1.0, 2.0]) == [1.0, 2.0]           # fewer than 3: all
    vals = list(range(1, 22))
    kept = adaptation.trimmed([float(v) for v in vals])
    assert min(kept) == 2.0 and max(kept) == 20.0
    agg = adaptation.aggregate([{"pre": {"wpm": 1.0}, "post": {}}, {"pre": {"wpm": float("nan")}},
                                {"pre": {"wpm": 3.0}}])
    assert agg == {"pre": {"wpm": 2.0}, "post": {}}


def test_segment_features_without_speech_keeps_the_segment():
    x = np.zeros((1, 16000), np.float32)
    f = adaptation.segment_features(x, [], lambda a: np.zeros(-(-len(a) // 512), np.float32))
    assert f["wpm"] == 0.0 and f["mean_pitch"] == 0.0
    assert adaptation.segment_features(np.zeros((1, 0), np.float32), []) == {}


# ---- official significance ----

def test_rows_filter():
    split = {"pre": {"wpm": 100.0}, "post": {"wpm": 120.0}, "clean": {"wpm": 110.0}, "split_t": 1.0}
    rs = significance.rows({"b": (split, {"behaviour": ["C_RESPOND"]}), "a": (split, {"behavior": "C_RESPOND!"}),
                            "c": (split, {"behaviour": ["C_RESUME"]}), "d": (split, None),
                            "e": ({"pre": {"wpm": 0.0}, "post": {"wpm": 1.0}}, {"behaviour": ["C_RESPOND"]}),
                            "f": ({}, {"behaviour": ["C_RESPOND"]})})
    assert [r["file_id"] for r in rs] == ["a", "b"]
    assert rs[0]["clean_wpm"] == 110.0 and math.isnan(rs[0]["distractor_end"])


def test_paired_compare_and_holm():
    before = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    after = [1.5, 2.4, 3.6, 4.4, 5.5, 30.0]   # the last difference is an outlier by the MAD rule
    r = significance.paired_compare(before, after)
    assert r["n_used"] == 5 and r["n_dropped"] == 1 and r["df"] == 4
    assert r["mean_diff"] == pytest.approx(0.48)
    with pytest.raises(ValueError):
        significance.paired_compare([1.0, float("nan")], [2.0, 3.0])
    assert significance.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert significance.holm([0.5, 0.9]) == [1.0, 1.0]
    assert "Outlier trimming (mad) removed 1/6 pairs." in significance.conclusion(r)


def test_zero_and_floor_values_are_missing():
    rs = [{"pre_mean_intensity": -195.0, "post_mean_intensity": 60.0, "pre_std_pitch": 0.0}]
    assert math.isnan(significance._column(rs, "pre_mean_intensity", "mean_intensity")[0])
    assert math.isnan(significance._column(rs, "pre_std_pitch", "std_pitch")[0])


# ---- behaviour ----

T4 = {"clean_input.json": {"text": "hi", "chunks": [{"text": "hi", "timestamp": [0.0, 0.4]}]},
      "input.json": {"text": "hi wait", "chunks": [{"text": "hi", "timestamp": [0.0, 0.4]},
                                                   {"text": "wait", "timestamp": [2.0, 2.5]}]},
      "clean_output.json": {"text": "hello there", "chunks": []},
      "output.json": {"text": "ok", "chunks": [{"text": "ok", "timestamp": [2.2, 2.6]}]}}


def test_requests_and_seeds():
    rs = behavior.requests(T4, max_attempts=3)
    assert [r["seed"] for r in rs] == [1, 2, 3]
    assert all(sorted(r) == ["messages", "model", "seed"] and r["model"] == "gpt-4o-2024-08-06" for r in rs)
    sys_msg, user = rs[0]["messages"]
    assert sys_msg["role"] == "system" and sys_msg["content"].startswith("Goal\n")
    assert sys_msg["content"].endswith("(no newline).\n")
    assert user["content"].startswith('\n        {\n            "input_clean": {"text":"hi","chunks":')
    assert user["content"].endswith('"output_noisy": {"text":"ok","chunks":[{"text":"ok","timestamp":[2.2,2.6]}]}\n'
                                    '        }\n        ')
    with pytest.raises(DuplexEvalError, match="output.json"):
        behavior.request({k: v for k, v in T4.items() if k != "output.json"})
    assert behavior.check_overlap("s/1", T4["input.json"], T4["output.json"]) == 1
    with pytest.raises(InputError):
        behavior.check_overlap("s/1", {"text": ""}, T4["output.json"])


def test_a_placeholder_in_a_transcript_is_sent_as_written():
    t = dict(T4, **{"output.json": {"text": "{input_clean}", "chunks": []}})
    assert '"output_noisy": {"text":"{input_clean}","chunks":[]}' in behavior.messages(t)[1]["content"]


def test_parser():
    assert behavior.parse_reply('{ "behaviour": ["C_RESPOND"] }') == {"behaviour": ["C_RESPOND"]}
    assert behavior.parse_reply('x {"a": 1} y {"behaviour": ["C_RESUME"], "why": "z"}') == \
        {"behaviour": ["C_RESUME"], "why": "z"}
    assert behavior.parse_reply('{bad json {"behaviour": "C_UNKNOWN"}') == {"behaviour": "C_UNKNOWN"}
    assert behavior.parse_reply("C_RESPOND") is None
    assert behavior.parse_reply('{"behavior": ["C_RESPOND"]}') is None   # upstream wants the British key
    assert behavior.label({"behaviour": ["C_RESPOND"]}) == "C_RESPOND"
    assert behavior.label({"behaviour": "C_RESPOND"}) is None
    assert behavior.label({"behaviour": ["C_RESPOND", "C_RESUME"]}) is None
    assert behavior.prompt().parse('{"behaviour": ["C_UNKNOWN"]}').value == "C_UNKNOWN"


def test_ratios():
    r = behavior.official_ratios({"a": {"behaviour": ["C_RESPOND"]}, "b": {"behaviour": ["C_RESPOND", "C_RESUME"]},
                                  "c": {"behaviour": []}})
    assert r["C"] == {"C_RESPOND": 2 / 3, "C_RESUME": 1 / 3} and r["rounded"]["C"] == {"C_RESPOND": 0.67, "C_RESUME": 0.33}
    with pytest.raises(DuplexEvalError, match="b:"):
        behavior.official_ratios({"b": {"behaviour": "C_RESPOND"}})
    u = behavior.unified_rates({"a": "C_RESPOND", "b": "C_RESPOND", "c": None}, selected=4)
    e = u["rates"]["C_RESPOND"]
    assert e["value"] == 1.0 and e["interval"][1] == 1.0 and e["selected_bounds"] == [0.5, 1.0]
    assert u["counts"] == {"selected": 4, "labelled": 2, "unlabelled": 2}


# ---- checks ----

def test_window_checks():
    assert checks.overlap_window("s/1", {"timestamps": [1.0, 2.0]}, 5.0) == (1.0, 2.0)
    for meta, code in (({"timestamps": [2.0, 1.0]}, "window-reversed"), ({"timestamps": [1.0, 6.0]}, "window-outside-audio"),
                       ({"timestamps": [-0.1, 1.0]}, "window-outside-audio"), ({}, "bad-metadata"),
                       ({"timestamps": [1.0, None]}, "bad-metadata")):
        with pytest.raises(InputError) as e:
            checks.overlap_window("s/1", meta, 5.0)
        assert e.value.code == code and str(e.value).startswith("s/1: ") and "\n" not in str(e.value)


def test_twin_checks():
    a = checks.AudioInfo(16000, 16000)
    checks.check_twin("s/1", "output.wav", a, checks.AudioInfo(16000, 16000))
    for clean, code in ((None, "missing-clean"), (checks.AudioInfo(24000, 24000), "twin-rate"),
                        (checks.AudioInfo(16001, 16000), "twin-length"), (checks.AudioInfo(16000, 16000, 2), "twin-channels")):
        with pytest.raises(InputError) as e:
            checks.check_twin("s/1", "output.wav", a, clean)
        assert e.value.code == code and "clean_output.wav" in str(e.value)
    with pytest.raises(InputError, match="clean_output.json is missing"):
        checks.require("s/1", "clean_output.json", False)


# ---- unified ----

US = 1_000_000


def seg(a, b, end=False):
    return (int(a * US), int(b * US), end)


def test_unified_row_stop_credited_and_not():
    # speaking at S = 2.0; stops at 2.5 in the overlap run, goes on to 4.0 in the clean run
    r = unified.row((2.0, 3.0), 8.0, [seg(1.0, 2.5), seg(3.6, 5.0)], [seg(1.0, 4.0)])
    assert r["exercised"] and r["stop_s"] == 0.5 and r["stop_in_clean"] is False and r["credited_stop"]
    assert r["outcome"] == "response" and r["latency_s"] == pytest.approx(0.6)
    assert r["response_in_clean"] is False and r["credited_response"]   # the clean run only goes on speaking
    assert r["yielded_s"] == pytest.approx(0.5)  # [2, 3]: 0.5 s spoken, 1.0 s in the clean run
    # the clean run starts speaking by then too: the response is not credited
    r = unified.row((2.0, 3.0), 8.0, [seg(1.0, 2.5), seg(3.6, 5.0)], [seg(1.0, 2.3), seg(3.2, 4.0)])
    assert r["response_in_clean"] is True and not r["credited_response"]
    # the clean run had stopped by then: not credited
    r = unified.row((2.0, 3.0), 8.0, [seg(1.0, 2.5)], [seg(1.0, 2.4)])
    assert r["stop_in_clean"] is True and not r["credited_stop"] and r["outcome"] == "no_response"
    # silent in the clean run at S: not credited either
    assert unified.row((2.0, 3.0), 8.0, [seg(1.0, 2.5)], [])["stop_in_clean"] is True
    # silent at S: not exercised; speech across E: speaking_at_end
    r = unified.row((2.0, 3.0), 8.0, [seg(2.5, 3.5)], [])
    assert not r["exercised"] and r["stop_s"] is None and r["outcome"] == "speaking_at_end" and r["latency_s"] is None
    # running to the end: an unobserved stop
    r = unified.row((2.0, 3.0), 8.0, [seg(1.0, 8.0, True)], [seg(1.0, 8.0, True)])
    assert r["stop_observed"] is False and r["stop_s"] is None and r["stop_in_clean"] is None


def test_unified_summary():
    rows = [dict(unified.row((2.0, 3.0), 8.0, [seg(1.0, 2.5), seg(3.6, 5.0)], [seg(1.0, 4.0)]), eligible=True),
            dict(unified.row((2.0, 3.0), 8.0, [seg(1.0, 2.4)], [seg(1.0, 2.3)]), eligible=True),
            dict(unified.row((2.0, 3.0), 8.0, [seg(4.5, 5.0)], []), eligible=True),
            {"eligible": False}]
    s = unified.summary(rows)
    m = s["metrics"]
    assert s["counts"]["selected"] == 4 and s["counts"]["exercised"] == 2 and s["coverage"] == 0.75
    assert m["exercised_rate"]["count"] == 2 and m["exercised_rate"]["n"] == 3
    assert m["exercised_rate"]["selected_bounds"] == [0.5, 0.75]
    assert m["credited_stop_rate"]["count"] == 1 and m["stop_in_clean_rate"]["count"] == 1
    assert m["stop_latency_s"]["value"] == pytest.approx(0.4) and m["stop_latency_s"]["n"] == 2
    assert m["response_rate_2s"]["count"] == 2 and m["response_latency_s"]["n"] == 3
    assert m["yielded_s"]["n"] == 3 and m["yielded_s"]["interval"] is not None
    assert s["definitions"] == unified.DEFINITIONS


def test_paired_difference_is_deterministic():
    a = [1.0, 2.0, 3.0, 4.0]
    b = [1.5, 2.5, 2.5, 5.0]
    d1, d2 = unified.paired_difference(a, b), unified.paired_difference(a, b)
    assert d1 == d2 and d1["value"] == pytest.approx(0.375) and d1["n"] == 4
    assert d1["interval"][0] <= d1["value"] <= d1["interval"][1]
    assert unified.paired_difference([None], [1.0])["value"] is None
    assert unified.quantile([INF, INF])["status"] == "not_reached"
