"""Fixtures of the judge tests: an isolated user cache, the chat-completions test double, and
a helper that runs the `judge` stage in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from ..conftest import command, write_stage
from . import chat_server

SECRET = "test-secret-value-never-written-7f3a9c"
INTERRUPT = [{"context": "Tell me about the history of the Roman empire.",
              "interrupt": "Actually, can you recommend a good pizza recipe instead?",
              "timestamp": [5.0, 7.0]}]
RATED = "Analysis: The reply follows the new topic.\nI would rate the AI's response as 4."


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: loads real models for tens of seconds (deselect with -m 'not slow')")


@pytest.fixture(autouse=True)
def _isolated_user_cache(tmp_path, monkeypatch):
    """Every test gets its own DUPLEXEVAL_CACHE (the judge cache lives there) and no endpoint or
    key from the caller's environment."""
    monkeypatch.setenv("DUPLEXEVAL_CACHE", str(tmp_path / "user-cache"))
    for var in ("XDG_CACHE_HOME", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def server():
    """start(script) -> a running ChatServer; all are shut down after the test."""
    servers = []

    def start(script):
        servers.append(chat_server.start(script))
        return servers[-1]
    yield start
    for s in servers:
        s.shutdown()
        s.server_close()


def output(text: str) -> dict:
    words = text.split()
    return {"text": text, "chunks": [{"text": w, "timestamp": [8.0 + i * 0.3, 8.2 + i * 0.3]}
                                     for i, w in enumerate(words)]}


def interruption_stage(root, replies: list[str]):
    return write_stage(root, {f"synthetic_user_interruption/{i}": {"interrupt.json": INTERRUPT,
                                                                   "output.json": output(text)}
                              for i, text in enumerate(replies)})


def run_judge(tmp_path, inputs, judge: str, args: dict | None = None, out: str = "out",
              key: str | None = SECRET, extra_env: dict | None = None,
              benchmark: str = "fdb-v1") -> subprocess.CompletedProcess:
    cfg = tmp_path / f"cfg-{out}.json"
    cfg.write_text(json.dumps({"benchmark": benchmark, "judge": judge, "judge_args": args or {}}))
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    if key is not None:
        env["OPENAI_API_KEY"] = key
    env.update(extra_env or {})
    return subprocess.run([command("judge"), "run", "--input", str(inputs), "--output", str(tmp_path / out),
                           "--config", str(cfg)], capture_output=True, text=True, env=env, timeout=600)


def prompt(prompt_id: str):
    """A versioned prompt of any installed benchmark (each keeps its own PromptSet)."""
    from duplexeval_common.benchmarks import all_benchmarks
    for b in all_benchmarks():
        if b.has("prompts") and prompt_id.split("@")[0] in b.hook("prompts").names():
            return b.hook("prompts").get(prompt_id)
    raise KeyError(prompt_id)


def prompt_sets():
    """{benchmark: its PromptSet}."""
    from duplexeval_common.benchmarks import all_benchmarks
    return {b.name: b.hook("prompts") for b in all_benchmarks() if b.has("prompts")}
