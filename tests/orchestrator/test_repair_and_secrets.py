"""Two properties of whole runs, through `duplexeval eval` with real stages:

- a stage repaired on rerun: the freeze-omni runner loses one sample because its server dies in
  that session; the run is partial and says which sample and why; `eval` again completes that
  sample, every stage downstream runs again with it (content keys), and only then is the run ok;
- secrets: a key planted in the environment, in a setting and in a URL never reaches any file of
  the home (store, configs, records, run.json, logs, caches), in the local runtime and (with
  DUPLEXEVAL_DOCKER_TESTS=1) in the docker runtime.

The servers are test doubles started here on 127.0.0.1: the Freeze-Omni protocol double of
tests/duplex_runner/freeze_omni_server.py and a chat-completions server; neither is a model.
"""

import json
import os
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from duplexeval_common.jsonio import read_json

from ..conftest import command
from ..conftest import SUBSET_ARGS
from ..duplex_runner.servers import cert  # noqa: F401  (a fixture)
from ..duplex_runner.test_freeze_omni import server  # noqa: F401  (a fixture: a Freeze-Omni protocol double)

S_ENV = "planted-env-key-0123456789ABCDEFGH"
S_URL = "planted-url-pw-9876543210ZYXW"
S_CFG = "planted-cfg-key-AAAABBBBCCCCDDDD1234"
ANSWER = "Analysis: the reply addresses the interruption.\nI would rate the AI's response as 4"


def dx(home, *args, env=None):
    base = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "MODEL_URL", "MODEL_CA")}
    return subprocess.run([command("duplexeval"), "--home", str(home), *args], capture_output=True, text=True,
                          env={**base, "DUPLEXEVAL_CACHE": str(home / "cache"), **(env or {})}, timeout=1800)


def test_a_sample_repaired_on_rerun_reaches_the_metrics(tmp_path, server, cert):  # noqa: F811
    srv = server(reply_delay_s=0.5, die_after=40, die_how="disconnect", die_in_session=2)
    env = {"MODEL_URL": srv.url, "MODEL_CA": str(cert[0])}
    # (about repair, not pacing: in make test's parallel pass a send may be late by more than 100 ms)
    args = ["eval", "--model", "freeze-omni", *SUBSET_ARGS, "--judge", "none", "--limit", "1", "--runner-arg", "drift_limit_ms=1000"]
    first = dx(tmp_path, *args, env=env)
    assert first.returncode == 1, first.stderr[-3000:]
    run1 = read_json(tmp_path / "runs" / "latest" / "run.json")
    assert run1["status"] == "partial"
    lost = "synthetic_turn_taking/0"  # the second session: samples run in subset order
    assert list(run1["missing"]) == [lost]
    assert run1["missing"][lost].startswith("runner: failed:") and "closed the connection" in run1["missing"][lost]
    assert f"{lost}: runner: failed" in first.stdout
    metrics1 = read_json(tmp_path / "store" / run1["stages"][-1]["key"] / "metrics.json")
    assert metrics1["subsets"]["synthetic_turn_taking"]["counts"]["eligible"] == 0

    second = dx(tmp_path, *args, env=env)
    assert second.returncode == 0, second.stderr[-3000:]
    run2 = read_json(tmp_path / "runs" / "latest" / "run.json")
    assert run2["status"] == "ok" and run2["missing"] == {}
    s1, s2 = ({s["name"]: s for s in r["stages"]} for r in (run1, run2))
    assert s2["dataset"]["cached"] and s2["dataset"]["key"] == s1["dataset"]["key"]
    # the runner stage is the same stage (same inputs), repaired in place: only the lost sample ran
    assert s2["runner"]["key"] == s1["runner"]["key"] and not s2["runner"]["cached"]
    runner = read_json(tmp_path / "store" / s2["runner"]["key"] / "stage.json")
    assert {k: v.get("cached", False) for k, v in runner["samples"].items()} == {
        "synthetic_pause_handling/0": True, lost: False, "synthetic_user_interruption/0": True}
    # everything downstream has a new key and ran again
    for name in ("asr", "judge", "aggregate"):
        assert s2[name]["key"] != s1[name]["key"] and not s2[name]["cached"], name
    metrics2 = read_json(tmp_path / "store" / s2["aggregate"]["key"] / "metrics.json")
    assert metrics2["subsets"]["synthetic_turn_taking"]["counts"]["eligible"] == 1
    assert all(m["coverage"] == 1 for m in metrics2["subsets"].values())


class _Chat(BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.server.auth.append(self.headers.get("Authorization"))
        ok = self.headers.get("Authorization") in (f"Bearer {S_ENV}", f"Bearer {S_CFG}")
        body = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "gpt-4-turbo",
                           "choices": [{"index": 0, "finish_reason": "stop",
                                        "message": {"role": "assistant", "content": ANSWER}}]}
                          if ok else {"error": {"message": "bad key"}}).encode()
        self.send_response(200 if ok else 401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


@pytest.fixture
def chat():
    srv = HTTPServer(("127.0.0.1", 0), _Chat)
    srv.auth = []
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv
    srv.shutdown()


def planted_secret_runs(home, server, cert, chat, runtime):  # noqa: F811
    extra = ["--runtime", runtime]
    denv = {"DUPLEXEVAL_DOCKER_NETWORK": "host"} if runtime == "docker" else {}
    base_url = f"http://127.0.0.1:{chat.server_address[1]}/v1"
    # 1. a judged pipeline, the key in the environment
    r = dx(home, "eval", "--model", "fixed-latency", "--judge", "official-gpt", "--limit", "1",
           "--judge-arg", f"base_url={base_url}", *extra, env={"OPENAI_API_KEY": S_ENV, **denv})
    assert r.returncode == 0, r.stderr[-3000:]
    # 2. the same with the key in a setting
    r = dx(home, "eval", "--model", "fixed-latency", "--judge", "official-gpt", "--limit", "1",
           "--judge-arg", f"base_url={base_url}", "--judge-arg", f"api_key={S_CFG}",
           "--judge-arg", "cache=false", *extra,
           env={"OPENAI_API_KEY": S_ENV, **denv})
    assert r.returncode == 0, r.stderr[-3000:]
    assert f"Bearer {S_ENV}" in chat.auth and f"Bearer {S_CFG}" in chat.auth
    # 3. a networked runner whose URL carries a password, from the environment, then from a setting
    srv = server(reply_delay_s=0.5, basic_auth=f"user:{S_URL}")
    url = srv.url.replace("https://", f"https://user:{S_URL}@")
    r = dx(home, "eval", "--model", "freeze-omni", "--judge", "none", "--limit", "1", *extra,
           "--runner-arg", "drift_limit_ms=1000", env={"MODEL_URL": url, "MODEL_CA": str(cert[0]), **denv})
    assert r.returncode == 0, r.stderr[-3000:]
    r = dx(home, "eval", "--model", "freeze-omni", "--judge", "none", "--limit", "1", "--runner-arg",
           f"url={url}", "--runner-arg", f"ca_file={cert[0]}", "--runner-arg", "drift_limit_ms=1000", *extra,
           env=denv)
    assert r.returncode == 0, r.stderr[-3000:]
    for text in (r.stdout, r.stderr):
        assert S_URL not in text
    found = []
    for p in home.rglob("*"):
        if p.is_file() and not p.is_symlink():
            data = p.read_bytes()
            found += [(str(p.relative_to(home)), s) for s in (S_ENV, S_URL, S_CFG) if s.encode() in data]
    assert found == []
    files = [p for p in home.rglob("*") if p.is_file()]
    assert any(p.name == "runner.json" for p in files) and any(p.parent.name == "logs" for p in files)


def test_planted_secrets_never_reach_a_file_local(tmp_path, server, cert, chat):  # noqa: F811
    planted_secret_runs(tmp_path, server, cert, chat, "local")
