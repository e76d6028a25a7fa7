"""The examiner's LLM an endpoint, from `duplexeval eval`: the `examiner_llm*` benchmark settings reach
the runner stage, which then is networked and gets the key's variable by name; the key itself
reaches no file of the run. The endpoint is tests/judge/chat_server.py, a local HTTP server speaking
the OpenAI chat-completions protocol from a script: a test double, not a model. The examinee is the
fixed-latency control, which answers every examiner line, so the examiner asks for its next ones."""

from __future__ import annotations

from tests.judge import chat_server

from .conftest import evaluate

KEY = "planted-examiner-key-5e6f7a8b9c0d"


def test_the_examiners_llm_is_the_endpoint_given_and_its_key_is_never_written(tmp_path, monkeypatch):
    monkeypatch.setenv("EXAMINER_TEST_KEY", KEY)
    srv = chat_server.start(lambda body, n: chat_server.ok("Could you tell me a bit more?"))
    try:
        home = tmp_path / "home"
        got = evaluate(home, "fixed-latency", "--subset", "daily",
                       "--benchmark-arg", "examiner_llm=openai", "--benchmark-arg", f"examiner_llm_url={srv.base_url}",
                       "--benchmark-arg", "examiner_llm_model=examiner-test",
                       "--benchmark-arg", "examiner_api_key_env=EXAMINER_TEST_KEY")
    finally:
        srv.shutdown()
        srv.server_close()
    assert srv.requests and {r["body"]["model"] for r in srv.requests} == {"examiner-test"}
    assert {r["auth"] for r in srv.requests} == {f"Bearer {KEY}"}  # the variable reached the stage, by name
    runner = next(s for s in got.run["stages"] if s["name"] == "runner")
    assert runner["config"]["examiner"]["args"] == {"preset": "slow", "llm": "openai", "llm_url": srv.base_url,
                                                    "llm_model": "examiner-test", "api_key_env": "EXAMINER_TEST_KEY"}
    for path in home.rglob("*"):
        if path.is_file() and not path.is_symlink():
            assert KEY.encode() not in path.read_bytes(), path
