"""End to end: `duplexeval eval --benchmark fdb-v2 --model freeze-omni`, a live session through the
whole pipeline (dataset, runner with the examiner, aggregate) against the Freeze-Omni protocol test
double (tests/duplex_runner/freeze_omni_server.py, on 127.0.0.1 over HTTPS: a test double, not the
model), which answers each end of the examiner's speech with a Piper sentence 0.5 s after it. The
examiner's LLM is tests/judge/chat_server.py, a local chat-completions test double (not a model)."""

from __future__ import annotations

import pytest

from duplexeval_common.jsonio import read_json
from duplexeval_common.wavio import write_wav

from tests.judge import chat_server

from ..conftest import exact_speech
from ..duplex_runner.test_freeze_omni import cert, server  # noqa: F401  (fixtures)
from .test_runner_freeze_omni import dx, stage_dir

# run alone, after the parallel tests (make test): real-time sessions
pytestmark = pytest.mark.serial


def test_a_live_session_with_freeze_omni_through_the_pipeline(tmp_path, server, cert):  # noqa: F811
    wav = tmp_path / "reply.wav"
    write_wav(wav, exact_speech("Sure, I can help you with that.", 24000), 24000)
    srv = server(reply_delay_s=0.5, reply_wav=str(wav))
    llm = chat_server.start(lambda body, n: chat_server.ok("Good. What else should I know?"))
    try:
        r = dx(tmp_path, "eval", "--benchmark", "fdb-v2", "--model", "freeze-omni", "--subset", "daily",
               "--benchmark-arg", "duration_s=16", "--benchmark-arg", "examiner_llm=openai",
               "--benchmark-arg", f"examiner_llm_url={llm.base_url}", "--runner-arg", "drift_limit_ms=100",
               env={"MODEL_URL": srv.url, "MODEL_CA": str(cert[0])})
    finally:
        llm.shutdown()
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    run = read_json(tmp_path / "runs" / "latest" / "run.json")
    assert run["status"] == "ok" and [s["name"] for s in run["stages"]] == ["dataset", "runner", "aggregate"]
    daily = read_json(stage_dir(tmp_path, run, "aggregate") / "metrics.json")["subsets"]["daily"]
    u = daily["unified"]
    assert daily["coverage"]["scored"] == 1
    assert u["response_rate"]["value"] == 1.0 and u["response_rate"]["n"] >= 2
    assert u["response_latency_s"]["value"] == pytest.approx(0.5, abs=0.2)
    assert u["overlap_rate"]["value"] < 0.05
    assert llm.requests  # the examiner asked its LLM for its lines after each answer
