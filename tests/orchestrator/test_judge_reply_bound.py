"""A judge reply is read up to a bound: a server answering 10 MB costs the judge stage no more than
twice what an ordinary answer does (before: the whole body read, parsed and scrubbed, still
running at 300 s).

The servers are local chat-completions test doubles (tests/judge/chat_server.py speaks the real
protocol; the chunked one below sends its body without a Content-Length)."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from duplexeval_common.jsonio import read_json

from ..conftest import SUBSET_ARGS, command
from ..judge import chat_server

# run alone, after the parallel tests (make test): it compares the judge stage's time with and without a 10 MB reply
pytestmark = pytest.mark.serial

REPLY = "Analysis: it handled the interruption.\nI would rate the AI's response as 4"
BIG = "A" * 10_000_000


class _Chunked(BaseHTTPRequestHandler):
    """A chat completion of 10 MB sent in chunks, with no Content-Length (or gzip-encoded)."""
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.server.accept_encoding.append(self.headers.get("Accept-Encoding"))
        body = json.dumps(chat_server.completion(BIG, "gpt-4-turbo")).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if self.server.gzip:
            import gzip
            body = gzip.compress(body)
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for i in range(0, len(body), 65536):
                part = body[i:i + 65536]
                self.wfile.write(f"{len(part):x}\r\n".encode() + part + b"\r\n")
                self.server.sent += len(part)
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, *a):
        pass


def _chunked(gzip: bool = False):
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Chunked)
    srv.daemon_threads = True
    srv.gzip, srv.sent, srv.accept_encoding = gzip, 0, []
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


@pytest.mark.parametrize("gz", [False, True])
def test_the_client_stops_reading_past_the_bound(gz):
    from duplexeval_common.llm.client import MAX_REPLY_BYTES, CallError, ChatClient
    srv = _chunked(gz)
    try:
        client = ChatClient(base_url=f"http://127.0.0.1:{srv.server_address[1]}/v1", max_retries=3,
                            sleep=lambda s: None)
        t0 = time.perf_counter()
        with pytest.raises(CallError, match="(more than 1048576 bytes|compressed with 'gzip').*refused"):
            client.complete("gpt-4-turbo", [{"role": "user", "content": "hi"}])
        assert time.perf_counter() - t0 < 5
        assert client.calls == 1                       # not retried: the same server answers the same
        assert srv.accept_encoding == ["identity"]
    finally:
        srv.shutdown()
    assert MAX_REPLY_BYTES == 1 << 20


def test_a_declared_length_past_the_bound_and_ordinary_replies():
    from duplexeval_common.llm.client import CallError, ChatClient
    srv = chat_server.start(lambda body, n: chat_server.ok(BIG if n == 0 else REPLY))
    try:
        client = ChatClient(base_url=srv.base_url, max_retries=0)
        with pytest.raises(CallError, match=r"a reply of 100002\d\d bytes, more than 1048576 \(refused\)"):
            client.complete("gpt-4-turbo", [{"role": "user", "content": "hi"}])
        assert client.complete("gpt-4-turbo", [{"role": "user", "content": "hi"}]).text == REPLY
    finally:
        srv.shutdown()


def _dx(home: Path, *args: str):
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    return subprocess.run([command("duplexeval"), "--home", str(home), *args], capture_output=True, text=True,
                          env={**env, "DUPLEXEVAL_CACHE": str(home / "cache")}, timeout=900)


def _judged(home: Path, base_url: str):
    t0 = time.monotonic()
    r = _dx(home, "eval", "--model", "fixed-latency", "--judge", "official-gpt", "--limit", "1", *SUBSET_ARGS,
            "--judge-arg", f"base_url={base_url}", "--judge-arg", "api_key=planted-test-key-0123456789abcdef",
            "--judge-arg", "cache=false", "--judge-arg", "max_retries=1")
    wall = time.monotonic() - t0
    run = read_json(home / "runs" / "latest" / "run.json")
    judge = next(s for s in run["stages"] if s["name"] == "judge")
    return r, judge, wall


def test_a_10_mb_judge_reply_costs_the_judge_stage_at_most_twice(tmp_path):
    home = tmp_path / "home"
    r = _dx(home, "eval", "--model", "fixed-latency", "--judge", "none", "--limit", "1", *SUBSET_ARGS)
    assert r.returncode == 0, r.stderr[-3000:]
    small = chat_server.start(lambda body, n: chat_server.ok(REPLY))
    big = chat_server.start(lambda body, n: chat_server.ok(BIG))
    try:
        r1, normal, _ = _judged(home, small.base_url)
        assert r1.returncode == 0 and normal["status"] == "ok", r1.stderr[-3000:]
        r2, hostile, wall = _judged(home, big.base_url)
    finally:
        small.shutdown()
        big.shutdown()
    assert not hostile["cached"] and hostile["status"] in ("ok", "partial"), r2.stderr[-3000:]
    assert r2.returncode in (0, 1), r2.stderr[-3000:]
    print(f"judge stage: {normal['seconds']} s with ordinary replies, {hostile['seconds']} s with 10 MB replies")
    assert hostile["seconds"] <= 2 * normal["seconds"], (hostile["seconds"], normal["seconds"])
    assert wall < 300
    assert "more than 1048576" in (r2.stdout + r2.stderr) or hostile["failed_samples"] >= 1
    assert BIG[:1000] not in (home / "runs" / "latest" / "run.json").read_text()
