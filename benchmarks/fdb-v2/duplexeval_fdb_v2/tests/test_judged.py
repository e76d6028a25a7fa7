"""The judged column: the plan per judge, the official prompt's sections and order on a made-up
eval_prompts.json of upstream's shape (no upstream text), the lenient reply parser on replies of
the shapes upstream's parse.py handles, and score.py / score_time.py's arithmetic on hand-made
judgements (values by construction)."""

from __future__ import annotations

import json

import pytest

from duplexeval_common.errors import DuplexEvalError
from duplexeval_fdb_v2 import BENCHMARK, official, plan
from duplexeval_fdb_v2.prompts import PROMPTS, parse_1_5
from duplexeval_fdb_v2.score import judged

from .test_plan import FakePlanner


class JudgePlanner(FakePlanner):
    def __init__(self, judge, **given):
        super().__init__(**given)
        self.judge = judge

    def asr_stage(self, name, inputs, **config):
        return self.stage(name, "asr-aligner", config, inputs)

    def judge_stage(self, inputs, **extra):
        from types import SimpleNamespace
        return SimpleNamespace(name="judge", component="judge", inputs=inputs, network=False, keys=(),
                               config={"judge": self.judge, "judge_args": dict(self.judge_args), **extra})


def made_up(tmp_path, **change):
    doc = {"version": "x", "system_prompt": "SYS", "turn_taking_fluency_prompt": "FLU",
           "multi_turn_instruction_following_prompt": "MTIF", "output_format_prompt": "FMT",
           "task_specific_prompts": [{"id": "correction", "prompt": "CORR"}, {"id": "entity_tracking", "prompt": "ENT"},
                                     {"id": "safety", "prompt": "SAFE"}], **change}
    p = tmp_path / "eval_prompts.json"
    p.write_text(json.dumps(doc))
    return p


@pytest.mark.parametrize("judge", ["local-llm", "openai"])
def test_plan_with_a_judge(judge):
    stages = plan.plan(JudgePlanner(judge), BENCHMARK.check_options({}))
    assert [s.name for s in stages] == ["dataset", "runner", "asr", "judge", "aggregate"]
    assert stages[2].inputs == ["dataset", "runner"] and stages[3].inputs == ["dataset", "runner", "asr"]
    assert stages[4].inputs == ["dataset", "runner", "asr", "judge"]


def test_plan_without_a_judge_has_no_asr():
    assert [s.name for s in plan.plan(JudgePlanner("none"), BENCHMARK.check_options({}))] == \
        ["dataset", "runner", "aggregate"]
    with pytest.raises(DuplexEvalError, match="no judge stage"):
        plan.plan(JudgePlanner("none", judge_args={"model": "x"}), BENCHMARK.check_options({}))


def test_plan_official(tmp_path):
    path = made_up(tmp_path)
    stages = plan.plan(JudgePlanner("official", judge_args={"prompts": str(path)}), BENCHMARK.check_options({}))
    j = stages[3]
    assert "prompts" not in j.config["judge_args"] and j.keys == ("GEMINI_API_KEY",) and j.network
    op = j.config["judge_args"]["official_prompts"]
    import hashlib
    assert op["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert op["sections"]["task"]["safety"] == "SAFE"
    with pytest.raises(DuplexEvalError, match="needs --judge-arg prompts=PATH"):
        plan.plan(JudgePlanner("official"), BENCHMARK.check_options({}))


@pytest.mark.parametrize("text, why", [(None, "cannot be read"), ("{nope", "not valid JSON"), ("[]", "not a JSON object")])
def test_a_bad_prompts_file_is_one_line(tmp_path, text, why):
    p = tmp_path / "e.json"
    if text is not None:
        p.write_text(text)
    with pytest.raises(official.OfficialPromptsError, match=why):
        official.load(p)


def test_a_prompts_file_without_a_key(tmp_path):
    with pytest.raises(official.OfficialPromptsError, match="output_format_prompt must be"):
        official.load(made_up(tmp_path, output_format_prompt=""))
    with pytest.raises(official.OfficialPromptsError, match="no id 'safety'"):
        official.load(made_up(tmp_path, task_specific_prompts=[{"id": "correction", "prompt": "C"},
                                                               {"id": "entity_tracking", "prompt": "E"}]))


def test_render_sections_in_order(tmp_path):
    sec = official.load(made_up(tmp_path))["sections"]
    words = [{"start": 1.0, "end": 1.5, "text": "hello"}, {"start": 2.25, "end": 2.5, "text": "there"}]
    text = official.render(sec, "correction", ["g1", "g2", "g3"], "A TEXT", "hello there", words)
    heads = ["SYSTEM INSTRUCTION:\nSYS", "TURN-TAKING FLUENCY RUBRIC:\nFLU",
             "MULTI-TURN INSTRUCTION-FOLLOWING RUBRIC:\nMTIF", "TASK-SPECIFIC RUBRIC:\nCORR", "OUTPUT FORMAT:\nFMT",
             "Dataset staged goals (T1\u2013T4):\nT1: g1\nT2: g2\nT3: g3\nT4: ",
             "Transcript summary:\nChannel A (Examiner) summary:\nA TEXT\n\nChannel B (Examinee) summary:\nhello there",
             "Channel B (Examinee) segments with timestamps:\n[1.00, 1.50]: hello\n[2.25, 2.50]: there", "Constraints:"]
    at = [text.index(h) for h in heads]
    assert at == sorted(at) and at[0] == 0
    daily = official.render(sec, "daily", ["g"], "a", "b", [])
    assert "TASK-SPECIFIC RUBRIC" not in daily and "CORR" not in daily


EV = "Turn-taking event and score"


@pytest.mark.parametrize("reply, events, task", [
    (json.dumps({EV: [[[0, 10], 4, 5], [[10, 30], 2, 3]], "Task-specific score": 4}),
     [[[0.0, 10.0], 4, 5], [[10.0, 30.0], 2, 3]], 4),
    ('{\n "%s": [\n  [0.5, 3.25]: 4, 5,\n  [4, 9]: 3, "2"\n ],\n "Task-specific score": 3\n}' % EV,
     [[[0.5, 3.25], 4, 5], [[4.0, 9.0], 3, 2]], 3),
    ("Here it is:\n```json\n" + json.dumps({EV: [[{"start_time": 1, "end_time": 2}, 5, 4]],
                                             "Task-specific score": "5"}) + "\n```\nThanks",
     [[[1.0, 2.0], 5, 4]], 5),
    ('{"%s": [["0:01", "1:05"]: 3, null, [7, 8]: 2, 1], "Task-specific score": "null"}' % EV,
     [[[1.0, 65.0], 3, None], [[7.0, 8.0], 2, 1]], None),
])
def test_parser_shapes(reply, events, task):
    assert official.parse(reply) == {"events": events, "task_score": task}


def test_parser_broken():
    assert official.parse("I cannot rate this conversation.") is None
    assert official.parse("") is None
    assert official.parse('{"%s": [[1, 2]: 4, 4, [3, 4]: 2' % EV) is None   # truncated: no closing bracket


def test_local_parser():
    assert parse_1_5("Score: 4").score == 4 and parse_1_5("3") .score == 3 and parse_1_5("none") is None
    assert sorted(PROMPTS.names()) == ["fdb-v2-fluency", "fdb-v2-instruction", "fdb-v2-task-correction",
                                       "fdb-v2-task-entity-tracking", "fdb-v2-task-safety"]


def test_score_and_score_time_arithmetic():
    a = {"status": "ok", "events": [[[0, 10], 4, 5], [[10, 30], 2, 3]], "task_score": 4}
    b = {"status": "ok", "events": [[[40, 50], 5, None], [[5, 5], 1, 1]], "task_score": None}
    bad = {"status": "unparsed", "events": [], "task_score": None}
    got = judged.pool([a, b, bad])
    assert (got["sessions"], got["parsed"], got["unparsed"], got["events"]) == (3, 2, 1, 3)
    assert got["fluency"]["value"] == pytest.approx((4 + 2 + 1) / 3)
    assert got["instruction_following"]["value"] == pytest.approx((5 + 3 + 1) / 3)
    assert got["task_score"]["value"] == 4 and got["task_score"]["n"] == 1
    b0, b1, b2 = got["bins"][:3]
    assert b0["bin"] == [0.0, 15.0] and b0["fluency"] == pytest.approx((4 * 10 + 2 * 5) / 15)
    assert b0["instruction_following"] == pytest.approx((5 * 10 + 3 * 5) / 15)
    assert b1["fluency"] == pytest.approx(2) and b1["seconds"] == pytest.approx(15)
    assert b2["seconds"] == 0 and b2["fluency"] is None       # the None-scored event and [5, 5] weigh nothing
    assert len(got["bins"]) == 8 and got["bins"][-1]["bin"] == [105.0, 120.0]
    lo, hi = got["fluency"]["interval"]
    assert lo <= got["fluency"]["value"] <= hi
