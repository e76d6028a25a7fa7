"""A local HTTP server speaking the chat-completions API, for the judge tests.

It is a test double of an OpenAI-compatible endpoint, not a model: it answers each request from
a script (a fixed text, an HTTP error with or without Retry-After, a malformed body, a delay)
and records every request (path, Authorization header, body, arrival time) and the most
requests it ever had in flight at once, so the client's requests, retries, cache and
concurrency can be checked offline. It listens on 127.0.0.1 only.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable


def completion(text: str, model: str, tokens_in: int = 100, tokens_out: int = 20) -> dict:
    return {"id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": tokens_in, "completion_tokens": tokens_out,
                      "total_tokens": tokens_in + tokens_out}}


class Action:
    """What the server does for one request."""

    def __init__(self, text: str | None = None, status: int = 200, retry_after: str | None = None,
                 body: bytes | None = None, delay_s: float = 0.0, model_suffix: str = "-2024-04-09"):
        self.text, self.status, self.retry_after = text, status, retry_after
        self.body, self.delay_s, self.model_suffix = body, delay_s, model_suffix


def ok(text: str, delay_s: float = 0.0) -> Action:
    return Action(text=text, delay_s=delay_s)


def error(status: int, retry_after: str | None = None) -> Action:
    return Action(status=status, retry_after=retry_after)


def malformed() -> Action:
    return Action(body=b"{this is not json")


def slow(text: str, delay_s: float) -> Action:
    return Action(text=text, delay_s=delay_s)


class ChatServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256

    def __init__(self, script: list[Action] | Callable[[dict, int], Action]):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script = script
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_port}/v1"

    def next_action(self, body: dict) -> Action:
        with self.lock:
            n = len(self.requests) - 1
            if callable(self.script):
                return self.script(body, n)
            return self.script[min(n, len(self.script) - 1)]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        srv: ChatServer = self.server
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with srv.lock:
            srv.requests.append({"path": self.path, "auth": self.headers.get("Authorization"),
                                 "body": body, "t": time.monotonic()})
            srv.in_flight += 1
            srv.max_in_flight = max(srv.max_in_flight, srv.in_flight)
        try:
            action = srv.next_action(body)
            if action.delay_s:
                time.sleep(action.delay_s)
            if action.body is not None:
                data, status = action.body, 200
            elif action.status != 200:
                data, status = json.dumps({"error": {"message": f"test double: HTTP {action.status}"}}).encode(), \
                    action.status
            else:
                data, status = json.dumps(completion(action.text, body["model"] + action.model_suffix)).encode(), 200
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if action.retry_after is not None:
                self.send_header("Retry-After", action.retry_after)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
            pass
        finally:
            with srv.lock:
                srv.in_flight -= 1

    def log_message(self, *a):
        pass


def start(script) -> ChatServer:
    srv = ChatServer(script)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv
