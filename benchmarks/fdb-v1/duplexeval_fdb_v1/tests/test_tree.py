"""Load-time checks (stop with the sample id and the problem) and eligibility."""

import json

import pytest

from duplexeval_common.errors import InputError
from duplexeval_fdb_v1.score.score import _load_samples

from .helpers import interrupt_ann, pause_ann, sample_dir, turn_ann, wav


def load(tree):
    return _load_samples(tree, {})[0]


def err(tree) -> str:
    with pytest.raises(InputError) as e:
        load(tree)
    return str(e.value)


def test_word_outside_window(tmp_path):
    sample_dir(tmp_path, "candor_pause_handling", "7", T=10, words=[(10.5, 11)], annotation=pause_ann((3, 4)))
    assert err(tmp_path).startswith("candor_pause_handling/7: output.json word 0 starts at 10.500000 s")


def test_word_at_T_is_inside(tmp_path):
    sample_dir(tmp_path, "candor_pause_handling", "0", T=10, words=[(10.0, None)], annotation=pause_ann((3, 4)))
    (s,) = load(tmp_path)["candor_pause_handling"]
    assert s.words == [(10_000_000, 10_000_000)]


@pytest.mark.parametrize("pauses,problem", [
    ([], "pause.json lists nothing"),
    ([(4, 3)], "pause 0 ends before it starts"),
    ([(3, 5), (4.5, 6)], "pause 1 starts before pause 0 ends"),
    ([(5, 6), (3, 4)], "pause 1 starts before pause 0 ends"),
    ([(9, 10.5)], "pause 0 ends at 10.500000 s is outside the window"),
])
def test_pause_checks(tmp_path, pauses, problem):
    sample_dir(tmp_path, "synthetic_pause_handling", "3", words=[], annotation=pause_ann(*pauses))
    assert problem in err(tmp_path)


def test_touching_and_zero_length_pauses_are_fine(tmp_path):
    sample_dir(tmp_path, "synthetic_pause_handling", "3", words=[], annotation=pause_ann((3, 4), (4, 4), (4, 5)))
    assert load(tmp_path)["synthetic_pause_handling"][0].pauses[1] == (4_000_000, 4_000_000)


def test_turn_and_interrupt_checks(tmp_path):
    sample_dir(tmp_path, "candor_turn_taking", "1", T=5, words=[], annotation=turn_ann(5.5))
    assert err(tmp_path) == "candor_turn_taking/1: turn end E at 5.500000 s is outside the window [0, 5.000000]"


@pytest.mark.parametrize("S,R,words,problem", [
    (12, 11, [], "interruption onset S is after its end R"),
    (10, 12, [(11.9, 12.5)], "before the interruption end R"),
    (10, 31, [], "interruption end R at 31.000000 s is outside"),
])
def test_interrupt_checks(tmp_path, S, R, words, problem):
    sample_dir(tmp_path, "synthetic_user_interruption", "4", T=30, words=words, annotation=interrupt_ann(S, R))
    msg = err(tmp_path)
    assert msg.startswith("synthetic_user_interruption/4: ") and problem in msg


def test_word_without_start_or_ending_before_start(tmp_path):
    sample_dir(tmp_path, "candor_pause_handling", "0", words=[(None, 1.0)], annotation=pause_ann((3, 4)))
    assert "word 0 has no start time" in err(tmp_path)
    sample_dir(tmp_path, "candor_pause_handling", "0", words=[(2.0, 1.0)], annotation=pause_ann((3, 4)))
    assert "word 0 ends (1.000000 s) before it starts" in err(tmp_path)


def test_output_length_must_match_input(tmp_path):
    d = sample_dir(tmp_path, "synthetic_user_interruption", "0", T=30, annotation=interrupt_ann(10, 12))
    wav(d / "output.wav", 29.0, sr=24000)
    assert "output.wav lasts 29.000000 s, input.wav 30.000000 s" in err(tmp_path)


def test_bad_json_names_the_sample(tmp_path):
    d = sample_dir(tmp_path, "candor_turn_taking", "2", words=[], annotation=turn_ann(2))
    (d / "output.json").write_text("{nope")
    assert err(tmp_path).startswith("candor_turn_taking/2: output.json is not valid JSON")


def test_ineligible_reasons(tmp_path):
    sample_dir(tmp_path, "candor_turn_taking", "0", words=[(1, 2)], annotation=turn_ann(2), skip=("output.wav",))
    sample_dir(tmp_path, "candor_turn_taking", "1", words=[(99, 100)], annotation=turn_ann(2),
               skip=("output.json",))
    d = sample_dir(tmp_path, "candor_turn_taking", "2", words=[], annotation=turn_ann(2))
    (d / "runner.json").write_text(json.dumps({"status": "failed", "reason": "timeout"}))
    sample_dir(tmp_path, "candor_turn_taking", "3", words=[], annotation=turn_ann(2))
    (tmp_path / "stage.json").write_text(json.dumps({"component": "asr-aligner", "samples": {
        "candor_turn_taking/3": {"status": "failed", "reason": "x"}}}))
    ss = load(tmp_path)["candor_turn_taking"]
    assert [s.reasons for s in ss] == [["missing:output.wav"], ["missing:output.json"],
                                       ["failed:runner"], ["failed:asr-aligner"]]


def test_manifest_declares_samples_and_pins_files(tmp_path):
    d = sample_dir(tmp_path, "candor_turn_taking", "0", words=[], annotation=turn_ann(2))
    from duplexeval_common.vadcache import sha256_file
    rows = [{"subset": "candor_turn_taking", "id": "0", "task": "smooth_turn_taking", "duration_s": 10,
             "files": {"turn_taking.json": sha256_file(d / "turn_taking.json")}},
            {"subset": "candor_turn_taking", "id": "1", "task": "smooth_turn_taking", "duration_s": 10,
             "files": {}}]
    (tmp_path / "manifest.json").write_text(json.dumps({"dataset": "t", "samples": rows}))
    ss = load(tmp_path)["candor_turn_taking"]
    assert [s.reasons for s in ss] == [[], ["missing:sample folder"]]
    (d / "turn_taking.json").write_text(json.dumps(turn_ann(2.5)))
    assert err(tmp_path) == "candor_turn_taking/0: turn_taking.json differs from manifest.json"


def test_upstream_failures_passed_by_the_pipeline(tmp_path):
    from duplexeval_fdb_v1.score.tree import reason_code
    assert reason_code("failed upstream in duplex-runner: timeout after 30 s") == "failed:duplex-runner"
    assert reason_code("failed:runner") == "failed:runner"
    assert reason_code("asr-aligner") == "failed:asr-aligner"
    sample_dir(tmp_path, "candor_turn_taking", "0", words=[], annotation=turn_ann(2))
    ss = _load_samples(tmp_path, {"candor_turn_taking/0": "failed upstream in asr-aligner: oom"})[0]
    assert ss["candor_turn_taking"][0].reasons == ["failed:asr-aligner"]


@pytest.mark.parametrize("sub,kw,reason", [
    ("candor_pause_handling", dict(words=[(2.0, 1.0)], annotation=pause_ann((3, 4))), "invalid:word-end-before-start"),
    ("candor_pause_handling", dict(words=[(9.0, 12.0)], annotation=pause_ann((3, 4))), "invalid:word-end-past-window"),
    ("candor_pause_handling", dict(words=[(10.5, 11)], annotation=pause_ann((3, 4))), "invalid:word-start-outside-window"),
    ("candor_pause_handling", dict(words=[], annotation=pause_ann((3, 5), (4.5, 6))), "invalid:bad-annotation"),
    ("candor_turn_taking", dict(words=[], annotation=turn_ann(12.0)), "invalid:annotation-outside-window"),
    ("synthetic_user_interruption", dict(words=[(1.0, 1.2)], annotation=interrupt_ann(2, 3)), "invalid:word-before-R"),
])
def test_excluded_samples_get_a_reason_code_and_keep_the_problem(tmp_path, sub, kw, reason):
    sample_dir(tmp_path, sub, "5", **kw)
    good_ann = {"candor_pause_handling": pause_ann((3, 4)), "candor_turn_taking": turn_ann(2.0),
                "synthetic_user_interruption": interrupt_ann(2, 3)}[sub]
    sample_dir(tmp_path, sub, "6", words=[], annotation=good_ann)
    with pytest.raises(InputError) as e:
        load(tmp_path)
    bad, good = _load_samples(tmp_path, {}, exclude_invalid=True)[0][sub]
    assert bad.reasons == [reason] and not bad.eligible
    assert bad.invalid == (reason, e.value.problem)
    assert good.eligible and good.invalid is None


def test_a_status_file_that_is_not_json_is_invalid_when_excluding(tmp_path):
    d = sample_dir(tmp_path, "candor_turn_taking", "0", words=[], annotation=turn_ann(2))
    (d / "runner.json").write_text("{nope")
    assert "runner.json is not valid JSON" in err(tmp_path)
    (s,) = _load_samples(tmp_path, {}, exclude_invalid=True)[0]["candor_turn_taking"]
    assert s.reasons == ["invalid:bad-json"]


def test_every_invalid_reason_code_passes_the_output_schema(tmp_path):
    """A sample excluded for a word before R is written, not a crash (its code has a capital R,
    which the unified schema once refused: exit 3 and nothing scored); a word at R read one
    microsecond early (times are written to the microsecond) is not before it."""
    from duplexeval_fdb_v1.score.score import build
    sub = "synthetic_user_interruption"
    sample_dir(tmp_path, sub, "5", words=[(1.0, 1.2)], annotation=interrupt_ann(2, 3))
    sample_dir(tmp_path, sub, "6", words=[(2.9999995, 3.4)], annotation=interrupt_ann(2, 3.0000005))
    _, uni, rows = build(tmp_path, exclude_invalid=True, quiet=True, cache_dir=tmp_path / "cache")
    assert [x["reason"] for x in uni["subsets"][sub]["invalid"]] == ["invalid:word-before-R"]
    assert {r["sample_id"]: r["eligible"] for r in rows} == {f"{sub}/5": False, f"{sub}/6": True}


def test_an_output_json_nested_50000_deep_is_one_line_with_or_without_excluding(tmp_path):
    """It once raised RecursionError (exit 3) in `aggregator score`, with or without
    --exclude-invalid; now: strict, one InputError naming the sample; excluding, that sample is
    invalid and the other one scored."""
    from duplexeval_fdb_v1.score.score import build
    sub = "candor_turn_taking"
    d = sample_dir(tmp_path, sub, "0", words=[], annotation=turn_ann(2.0))
    (d / "output.json").write_text("[" * 50000 + "]" * 50000)
    sample_dir(tmp_path, sub, "1", words=[(3.0, 3.4)], annotation=turn_ann(2.0))
    with pytest.raises(InputError) as e:
        build(tmp_path, quiet=True, cache_dir=tmp_path / "cache")
    assert e.value.sample == f"{sub}/0" and "\n" not in str(e.value)
    _, uni, rows = build(tmp_path, exclude_invalid=True, quiet=True, cache_dir=tmp_path / "cache")
    assert {r["sample_id"]: r["eligible"] for r in rows} == {f"{sub}/0": False, f"{sub}/1": True}
    assert uni["subsets"][sub]["invalid"][0]["reason"] == "invalid:bad-json"
