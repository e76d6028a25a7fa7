"""The official GPT judge against a local server that speaks the chat-completions protocol.

The server is a test double of the OpenAI endpoint, not a model: it records
each request and answers with a fixed text, so the client's request (model,
seed, prompts) and its parsing can be checked offline.
"""

import json
import os
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from duplexeval_common.jsonio import read_json
from duplexeval_judge.official_gpt import SYSTEM_PROMPT, parse_answer

from ..conftest import command, write_stage
from .test_judge import INTERRUPT, _out

SECRET = "test-secret-value-never-written"


class ChatServer(HTTPServer):
    def __init__(self, answers):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.answers, self.requests = list(answers), []


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
        text = self.server.answers.pop(0) if len(self.server.answers) > 1 else self.server.answers[0]
        reply = {"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                 "choices": [{"index": 0, "finish_reason": "stop",
                              "message": {"role": "assistant", "content": text}}]}
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *a):
        pass


@pytest.fixture
def server():
    def start(answers):
        srv = ChatServer(answers)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        return srv
    servers = []
    yield lambda answers: servers.append(start(answers)) or servers[-1]
    for s in servers:
        s.shutdown()


def run(tmp_path, srv, env_key=True):
    write_stage(tmp_path / "in", {
        "synthetic_user_interruption/0": {"interrupt.json": INTERRUPT, "output.json": _out("Sure, pizza time.")}})
    cfg = {"judge": "official-gpt", "judge_args": {"base_url": f"http://127.0.0.1:{srv.server_port}/v1",
                                                   "max_attempts": 2}}
    (tmp_path / "cfg.json").write_text(json.dumps(cfg))
    env = {**os.environ, "OPENAI_API_KEY": SECRET} if env_key else \
        {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    return subprocess.run([command("judge"), "run", "--input", str(tmp_path / "in"), "--output",
                           str(tmp_path / "out"), "--config", str(tmp_path / "cfg.json")],
                          capture_output=True, text=True, env=env)


def test_request_matches_upstream_and_rating_is_parsed(tmp_path, server):
    srv = server(["Analysis: The reply follows the new topic.\nI would rate the AI's response as 4."])
    r = run(tmp_path, srv)
    assert r.returncode == 0, r.stderr
    req = srv.requests[0]
    assert req["path"] == "/v1/chat/completions" and req["auth"] == f"Bearer {SECRET}"
    assert req["body"]["model"] == "gpt-4-turbo" and req["body"]["seed"] == 0
    assert req["body"]["messages"][0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert "- User interrupting turn: Actually, can you recommend" in req["body"]["messages"][1]["content"]
    assert read_json(tmp_path / "out/samples/synthetic_user_interruption/0/rating.json") == \
        {"analysis": "The reply follows the new topic.", "rating": 4}
    assert read_json(tmp_path / "out/judge.json")["official"] is True
    for p in (tmp_path / "out").rglob("*"):
        if p.is_file():
            assert SECRET not in p.read_text(errors="ignore")


def test_unparseable_answers_fail_the_sample_after_max_attempts(tmp_path, server):
    srv = server(["I think it is fine."])
    r = run(tmp_path, srv)
    assert r.returncode == 1 and len(srv.requests) == 2
    assert "judge answer not in the expected format after 2 attempts" in r.stderr


def test_missing_key_is_one_line_error(tmp_path, server):
    r = run(tmp_path, server(["x"]), env_key=False)
    assert r.returncode == 2 and r.stderr.strip() == "error: the official GPT judge needs an API key in $OPENAI_API_KEY"


def test_parse_keeps_the_last_match_like_upstream():
    text = "Analysis: a\nI would rate the AI's response as 2.\nAnalysis: b\nI would rate the AI's response as 5."
    assert parse_answer(text) == ("b", 5)
    assert parse_answer("no rating") is None
