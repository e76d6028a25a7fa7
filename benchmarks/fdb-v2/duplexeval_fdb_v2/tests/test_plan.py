"""The plan with a stand-in planner (the runner stage's `examiner` keyword is the runner core's
new one): dataset -> runner with the examiner -> aggregate, and the benchmark's settings."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from duplexeval_common.errors import DuplexEvalError
from duplexeval_fdb_v2 import BENCHMARK, plan


class FakePlanner:
    benchmark = "fdb-v2"

    def __init__(self, **given):
        self.segmenter_args, self.asr_args, self.judge_args = {}, {}, {}
        self.__dict__.update(given)

    def refuse(self, what, message):
        if getattr(self, what):
            raise DuplexEvalError(message)

    def dataset_stage(self, options=None):
        assert options is None
        return SimpleNamespace(name="dataset", config={"benchmark": self.benchmark}, inputs=[])

    def runner_stage(self, inputs, sessions=None, examiner=None):
        return SimpleNamespace(name="runner", config={"examiner": examiner}, inputs=inputs)

    def stage(self, name, component, config, inputs):
        return SimpleNamespace(name=name, component=component, config={"benchmark": self.benchmark, **config},
                               inputs=inputs)


def test_default_plan():
    stages = plan.plan(FakePlanner(), BENCHMARK.check_options({}))
    assert [s.name for s in stages] == ["dataset", "runner", "aggregate"]
    assert stages[1].inputs == ["dataset"]
    assert stages[1].config["examiner"] == {"engine": "cascade", "args": {"preset": "slow"},
                                           "duration_s": 45.0}
    agg = stages[2]
    assert agg.component == "aggregator" and agg.inputs == ["dataset", "runner"]
    assert agg.config == {"benchmark": "fdb-v2", "response_window_s": 5.0}


def test_settings_reach_their_stages():
    opts = BENCHMARK.check_options({"preset": "fast", "duration_s": "90", "response_window_s": "2.5"})
    stages = plan.plan(FakePlanner(), opts)
    assert stages[1].config["examiner"] == {"engine": "cascade", "args": {"preset": "fast"}, "duration_s": 90.0}
    assert stages[2].config["response_window_s"] == 2.5


@pytest.mark.parametrize("given, message", [
    ({"preset": "medium"}, "setting preset must be one of slow, fast"),
    ({"duration_s": 4}, r"setting duration_s must lie in \[5.0, 600.0\]"),
    ({"duration_s": 601}, r"setting duration_s must lie in \[5.0, 600.0\]"),
])
def test_bad_settings(given, message):
    with pytest.raises(DuplexEvalError, match=message):
        BENCHMARK.check_options(given)


def test_arguments_it_has_no_use_for():
    with pytest.raises(DuplexEvalError, match="fdb-v2 has none"):
        plan.plan(FakePlanner(segmenter_args={"x": 1}), BENCHMARK.check_options({}))
