"""The `moshi-ws` runner against a protocol test double of Moshi's WebSocket server.

The double (moshi_server.py) is NOT Moshi and not a model anyone should evaluate: it speaks the
byte protocol of kyutai-labs/moshi @ e6a55d2 moshi/server.py and runs the real moshi code on a
tiny random-weight model, so its audio is noise and its text is token ids. It runs in the moshi
environment (.venvs/runner-moshi, made by scripts/setup-runner-venv.sh moshi); without it the
tests that need a server are skipped with that reason. Each double is its own process on
127.0.0.1; the ones a test needs start together, once for the module.

What is known by construction: the server steps once per 1920 input samples and its first step
yields nothing, so in lockstep the output is one frame of zeros and then one decoded frame per
input frame after the first, back to back; a session whose query carries `seed` is reseeded, so
the same input gives the same output in every session of any double started with the same
weights, whenever its handshake comes.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.jsonio import read_json, read_jsonl
from duplexeval_runner.events import EventLog
from duplexeval_runner.harness import render
from duplexeval_runner.protocol import SessionFailed
from duplexeval_runner.stage import make_stage

from .conftest import make_dataset
from .servers import cert  # noqa: F401  (a fixture)

pytest.importorskip("aiohttp")
pytest.importorskip("sphn")
from duplexeval_runner_moshi_ws.runner import MoshiWSRunner, endpoint  # noqa: E402

# run alone, after the parallel tests (make test): real-time sessions: frame drift is asserted
pytestmark = pytest.mark.serial

ROOT = Path(__file__).resolve().parents[2]
SERVER = Path(__file__).with_name("moshi_server.py")
MOSHI_PY = ROOT / ".venvs" / "runner-moshi" / "bin" / "python"
SR = 24000
FRAME = 1920
TEACHER = "You are a wise and friendly teacher. Answer questions or provide advice in a clear and engaging way."
CHAT = "You enjoy having a good conversation."
SECRET_PW = "pw-Zq81xKv20ToPsecret"
SECRET_TOKEN = "tok-77AbCdEf0123456789"

DOUBLES = {  # name: the double's options
    "plain": [],
    "late": ["--handshake-delay", "1.0"],
    "dies": ["--die-after-frames", "5", "--die-times", "1"],
    "stalls": ["--stall-after-frames", "3"],
    # hostile servers (still the test double, not a model): one 0x02 text frame of 120,000 characters in
    # every session; one frame of 100,000 bytes in the first session only
    "longtext": ["--text-chars", "120000"],
    "oversize": ["--oversize-bytes", "100000", "--oversize-times", "1"],
}


class Double:
    def __init__(self, proc: subprocess.Popen, port: int):
        self.proc, self.port = proc, port
        self.url = f"http://127.0.0.1:{port}"

    def sessions(self) -> list[dict]:
        with urllib.request.urlopen(f"{self.url}/api/sessions", timeout=5) as r:
            return json.loads(r.read())

    def post_settings(self, settings: dict) -> None:
        req = urllib.request.Request(f"{self.url}/api/settings", data=json.dumps(settings).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=5):
            pass


@pytest.fixture(scope="module")
def doubles(tmp_path_factory):
    if not MOSHI_PY.exists():
        pytest.skip(f"the Moshi protocol double runs in the moshi environment, {MOSHI_PY.parent.parent} is "
                    "missing (make it with scripts/setup-runner-venv.sh moshi)")
    logs = tmp_path_factory.mktemp("moshi-doubles")
    procs = {name: subprocess.Popen([str(MOSHI_PY), str(SERVER), "--print-port", *opts], stdout=subprocess.PIPE,
                                    stderr=open(logs / f"{name}.err", "w"), text=True)
             for name, opts in DOUBLES.items()}
    try:
        out = {}
        for name, proc in procs.items():
            line = proc.stdout.readline()
            if not line.strip().isdigit():
                proc.wait(5)
                pytest.fail(f"the {name} double did not start: {(logs / f'{name}.err').read_text()[-2000:]}")
            out[name] = Double(proc, int(line))
        yield out
    finally:
        for proc in procs.values():
            proc.kill()   # throwaway doubles: nothing to flush
        for proc in procs.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(5)


def noise(seconds: float, seed: int) -> np.ndarray:
    """A stand-in for speech (the tiny model hears nothing in particular): bursts of noise."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(int(round(seconds * SR))) * 0.1).astype(np.float32)
    x[: SR // 5] = 0.0
    return x


SAMPLES = {("x_turn_taking", "1"): noise(1.0, 1), ("x_turn_taking", "2"): noise(0.6, 2)}


def frames(n: int) -> int:
    return -(-n // FRAME)


def stage_run(tmp_path, name: str, runner_args: dict, samples: dict | None = None):
    root = tmp_path / "in"
    if not root.exists():
        make_dataset(root, {k: (x, SR) for k, x in (samples or SAMPLES).items()})
    out = tmp_path / name
    config = {"runner": "moshi-ws", "runner_args": runner_args, "seed": 0}
    code = make_stage(config).run([root], out, config)
    return code, read_json(out / "stage.json"), out


def sample_dir(out: Path, key: tuple[str, str]) -> Path:
    return out / "samples" / key[0] / key[1]


def render_one(runner: MoshiWSRunner, x: np.ndarray, key: str = "x_turn_taking/1"):
    log = EventLog()
    y, session = render(runner, x, SR, log, key=key)
    return y, log


# --- lockstep and realtime through the stage ---

def test_lockstep_places_output_by_frame_count(doubles, tmp_path):
    """Two samples: output exactly the input's length, one frame of zeros, then one decoded frame per
    input frame back to back; text recorded on the output's timeline."""
    srv = doubles["plain"]
    before = len(srv.sessions())
    code, stage, out = stage_run(tmp_path, "lockstep", {"url": srv.url, "server_seed": 7})
    assert code == 0, stage["samples"]
    for key, x in SAMPLES.items():
        d = sample_dir(out, key)
        info = sf.info(str(d / "output.wav"))
        assert (info.frames, info.samplerate) == (len(x), SR)
        y, _ = sf.read(str(d / "output.wav"), dtype="float32")
        assert not y[:FRAME].any() and y[FRAME:2 * FRAME].std() > 1e-4   # the skipped first step
        rec = read_json(d / "runner.json")
        assert rec["runner"] == "moshi-ws" and rec["clock"] == "lockstep" and rec["kind"] == "stream"
        assert rec["status"] == "ok" and rec["deterministic"] is False
        n = frames(len(x))
        st = rec["stats"]
        assert st["frames_sent"] == n and st["out_frames"] == n - 1 and st["missing_frames"] == 0
        assert st["skip_frames"] == 1 and st["text_pieces"] > 0
        s = rec["settings"]
        assert s["clock"] == "lockstep" and s["frame_samples"] == FRAME and s["runner_in_sr"] == SR
        assert s["opus"]["delay_samples_per_leg"] == 156 and s["opus"]["compensated"] is False
        assert s["url"] == f"ws://127.0.0.1:{srv.port}/api/chat"
        assert rec["profile"]["name"] == "moshi" and "d7336bd" in rec["profile"]["source"]
        ev = read_jsonl(d / "events.jsonl")
        placed = [e["placed_at"] for e in ev if e["type"] == "recv_audio"]
        assert placed == pytest.approx([(j + 1) * 0.08 for j in range(n - 1)], abs=1e-6)
        texts = [e for e in ev if e["type"] == "text"]
        assert len(texts) == st["text_pieces"] and all(e["text"].startswith(" <") for e in texts)
        assert all(round(e["t"] / 0.08, 6).is_integer() for e in texts)   # the frame it came with
    sessions = srv.sessions()[before:]
    assert [(s["query"], s["frames_in"], s["state"]) for s in sessions] == [
        ({"seed": "7"}, frames(len(x)), "closed") for x in SAMPLES.values()]


def test_lockstep_output_does_not_depend_on_when_the_handshake_comes(doubles):
    """The same input and seed on a double whose handshake comes 1 s late: the same output, sample
    for sample (placement counts frames; the clock starts at the handshake)."""
    x = SAMPLES[("x_turn_taking", "1")]
    outs, logs = [], []
    for name in ("plain", "late"):
        y, log = render_one(MoshiWSRunner(url=doubles[name].url, server_seed=7), x)
        outs.append(y)
        logs.append(log)
    assert logs[1].stats["handshake_wait_s"] >= 1.0 > logs[0].stats["handshake_wait_s"]
    assert np.array_equal(outs[0], outs[1]) and outs[0].std() > 1e-4
    assert [e["text"] for e in logs[0].of_type("text")] == [e["text"] for e in logs[1].of_type("text")]


def test_realtime_places_output_at_arrival_from_the_handshake(doubles, tmp_path):
    """Realtime on the late double: frames on the clock, output placed at arrival, measured from the
    handshake (a clock started at connect would put the first output after 1 s)."""
    srv = doubles["late"]
    code, stage, out = stage_run(tmp_path, "realtime", {"url": srv.url, "clock": "realtime"})
    assert code == 0, stage["samples"]
    for key, x in SAMPLES.items():
        d = sample_dir(out, key)
        assert sf.info(str(d / "output.wav")).frames == len(x)
        rec = read_json(d / "runner.json")
        assert rec["clock"] == "realtime" and rec["settings"]["placement"] == "at arrival"
        ev = read_jsonl(d / "events.jsonl")
        sends = [e for e in ev if e["type"] == "send"]
        assert [e["t"] for e in sends[:3]] == [0.08, 0.16, 0.24] and len(sends) == frames(len(x))
        recv = [e for e in ev if e["type"] == "recv_audio"]
        assert recv, "no output arrived"
        # the first output comes after input frame 1 was sent, on the clock that starts at the
        # handshake, a second after the connection
        assert recv[0]["t"] >= 0.16 - 1e-3 and recv[0]["placed_at"] == pytest.approx(recv[0]["t"], abs=1e-4)
        wall = {e["kind"] if e["type"] == "server_event" else e["type"]: e["wall"] for e in ev
                if e["type"] == "clock_start" or (e["type"] == "server_event" and e["kind"] in ("connect", "handshake"))}
        assert wall["clock_start"] - wall["connect"] >= 1.0 and wall["clock_start"] >= wall["handshake"]
        assert rec["status"] == "ok" or "drift" in rec["ineligible"]["reason"]   # a loaded CPU may lag


# --- profiles ---

def test_personaplex_profile_sends_the_prompt_of_each_task(doubles, tmp_path):
    """voice_prompt and text_prompt in the query (FDB's prompt per task), no seed parameter."""
    srv = doubles["plain"]
    samples = {("x_user_interruption", "1"): noise(0.4, 3), ("x_turn_taking", "1"): noise(0.4, 4)}
    before = len(srv.sessions())
    # the double is Moshi's server, whose first step yields nothing (PersonaPlex's does not)
    code, stage, out = stage_run(tmp_path, "pp", {"url": srv.url, "profile": "personaplex", "skip_frames": 1},
                                 samples)
    assert code == 0, stage["samples"]
    queries = [s["query"] for s in srv.sessions()[before:]]
    assert sorted(queries, key=lambda q: q["text_prompt"]) == [
        {"voice_prompt": "NATF2.pt", "text_prompt": TEACHER}, {"voice_prompt": "NATF2.pt", "text_prompt": CHAT}]
    rec = read_json(sample_dir(out, ("x_user_interruption", "1")) / "runner.json")
    assert rec["profile"]["name"] == "personaplex" and "3428dfd" in rec["profile"]["source"]
    assert rec["profile"]["by_task"]["user_interruption"]["text_prompt"] == TEACHER
    assert rec["settings"]["server_seed"] is None
    ev = read_jsonl(sample_dir(out, ("x_user_interruption", "1")) / "events.jsonl")
    (conn,) = [e for e in ev if e["type"] == "server_event" and e["kind"] == "connect"]
    assert conn["text_prompt"] == TEACHER and conn["voice_prompt"] == "NATF2.pt"


def test_query_parameters_are_percent_encoded(doubles):
    srv = doubles["plain"]
    prompt = "Ünïcode & a=b?c#d +plus %20 / done."
    before = len(srv.sessions())
    render_one(MoshiWSRunner(url=srv.url, profile="personaplex", skip_frames=1, text_prompt=prompt,
                             query={"extra": "x y", "n": 3}), noise(0.3, 5), key="x_user_interruption/9")
    (s,) = srv.sessions()[before:]
    assert s["query"] == {"voice_prompt": "NATF2.pt", "text_prompt": prompt, "extra": "x y", "n": "3"}


def test_flm_audio_profile_posts_its_settings_before_each_session(doubles, tmp_path):
    srv = doubles["plain"]
    before = len(srv.sessions())
    try:
        code, stage, out = stage_run(tmp_path, "flm", {"url": srv.url, "profile": "flm-audio"})
        assert code == 0, stage["samples"]
        sessions = srv.sessions()[before:]
        # LMGen's own temp_text is 0.7 and top_k_text 25: the POST came before each session
        assert [(s["settings"]["temp_text"], s["settings"]["top_k_text"]) for s in sessions] == [(0.01, 0)] * 2
        d = sample_dir(out, ("x_turn_taking", "1"))
        rec = read_json(d / "runner.json")
        assert rec["settings"]["settings_url"] == f"http://127.0.0.1:{srv.port}/api/settings"
        assert rec["settings"]["settings"]["temp_audio"] == 0.1 and rec["profile"]["name"] == "flm-audio"
        assert any(e["type"] == "server_event" and e["kind"] == "settings" and e["status"] == 200
                   for e in read_jsonl(d / "events.jsonl"))
    finally:  # the double keeps settings between sessions: back to LMGen's defaults for the others
        srv.post_settings({"temp_text": 0.7, "top_k_text": 25, "use_sampling": True})


# --- failures ---

def test_server_dying_mid_sample_fails_that_sample_and_a_rerun_completes_it(doubles, tmp_path):
    srv = doubles["dies"]   # its first session drops the connection after 5 frames
    code, stage, out = stage_run(tmp_path, "dies", {"url": srv.url})
    first, second = (stage["samples"][f"{s}/{i}"] for s, i in SAMPLES)
    assert code == 1 and first["status"] == "failed" and second["status"] == "ok"
    # lost while frames were still to send, or after: either way not every input frame was answered
    assert "connection to the server was lost" in first["reason"]
    assert "before the input ended" in first["reason"] or "did not answer the whole input" in first["reason"]
    code, stage, out = stage_run(tmp_path, "dies", {"url": srv.url})
    assert code == 0 and stage["samples"]["x_turn_taking/1"]["status"] == "ok"
    assert stage["samples"]["x_turn_taking/2"].get("cached") is True
    x = SAMPLES[("x_turn_taking", "1")]
    assert sf.info(str(sample_dir(out, ("x_turn_taking", "1")) / "output.wav")).frames == len(x)


def test_stalled_server_fails_the_sample_after_the_quiet_timeout(doubles):
    t = time.monotonic()
    with pytest.raises(SessionFailed, match=r"sent no audio for 1\.0 s .*stuck"):
        render_one(MoshiWSRunner(url=doubles["stalls"].url, quiet_timeout_s=1.0), noise(1.0, 6))
    assert time.monotonic() - t < 6


def test_missing_handshake_and_refused_connection_fail_with_their_reason(doubles):
    with pytest.raises(SessionFailed, match="no progress opening the session within 0.3 s"):
        render_one(MoshiWSRunner(url=doubles["late"].url, open_timeout_s=0.3), noise(0.3, 7))
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(SessionFailed, match=f"cannot connect to ws://127.0.0.1:{port}/api/chat"):
        render_one(MoshiWSRunner(url=f"http://127.0.0.1:{port}"), noise(0.3, 7))


def test_concurrent_sessions_queue_at_the_servers_lock(doubles, tmp_path):
    """Moshi's server holds one session at a time: the second connection gets its handshake only
    when the first ends. With a generous open timeout both complete (each clock starting at its own
    handshake); with a short one the waiting sample fails with that reason."""
    srv = doubles["plain"]
    code, stage, out = stage_run(tmp_path, "conc", {"url": srv.url, "concurrency": 2})
    assert code == 0, stage["samples"]
    ev = [read_jsonl(sample_dir(out, key) / "events.jsonl") for key in SAMPLES]

    def wall(events, kind):
        return [e["wall"] for e in events if e["type"] == "server_event" and e["kind"] == kind][0]

    a, b = sorted(ev, key=lambda e: wall(e, "handshake"))
    last_output_a = [e["wall"] for e in a if e["type"] == "recv_audio"][-1]
    # b connected while a ran, and got its handshake only after a's session was over
    assert wall(b, "connect") < last_output_a < wall(b, "handshake")
    assert [e["t"] for e in b if e["type"] == "recv_audio"][0] == pytest.approx(0.08)
    # the late double's handshake comes 1 s into each session: the second waits at least 2 s
    code, stage, out = stage_run(tmp_path, "conc-short", {"url": doubles["late"].url, "concurrency": 2,
                                                          "open_timeout_s": 1.6})
    statuses = sorted(s["status"] for s in stage["samples"].values())
    assert code == 1 and statuses == ["failed", "ok"]
    (reason,) = [s["reason"] for s in stage["samples"].values() if s["status"] == "failed"]
    assert "no progress opening the session" in reason


def test_credentials_in_the_url_reach_the_server_and_no_file(doubles, tmp_path):
    srv = doubles["plain"]
    before = len(srv.sessions())
    url = f"http://user:{SECRET_PW}@127.0.0.1:{srv.port}/?token={SECRET_TOKEN}"
    samples = {("x_turn_taking", "1"): noise(0.3, 8)}
    code, stage, out = stage_run(tmp_path, "secret", {"url": url}, samples)
    assert code == 0, stage["samples"]
    (s,) = srv.sessions()[before:]
    assert s["query"] == {"token": SECRET_TOKEN}
    for f in out.rglob("*"):
        if f.is_file() and f.suffix in (".json", ".jsonl"):
            text = f.read_text()
            assert SECRET_PW not in text and SECRET_TOKEN not in text, f
    rec = read_json(sample_dir(out, ("x_turn_taking", "1")) / "runner.json")
    assert rec["settings"]["auth_scheme"] == "basic" and "redacted" in rec["settings"]["url"]


# --- hostile servers: a huge text frame, a frame over the size limit ---

def test_a_huge_text_frame_is_kept_capped_and_costs_no_time(doubles, tmp_path):
    """The longtext double sends one 0x02 frame of 120,000 "A"s per session: the stage takes about as
    long as against the plain double, and events.jsonl keeps the first 4,000 characters and a marker."""
    from duplexeval_runner.events import MAX_TEXT_CHARS
    times = {}
    for name in ("plain", "longtext"):
        t = time.monotonic()
        code, stage, out = stage_run(tmp_path, name, {"url": doubles[name].url, "server_seed": 7})
        times[name] = time.monotonic() - t
        assert code == 0, stage["samples"]
    for key in SAMPLES:
        d = sample_dir(out, key)
        texts = [e["text"] for e in read_jsonl(d / "events.jsonl") if e["type"] == "text"]
        (long,) = [x for x in texts if x.startswith("AAAA")]
        assert long == "A" * MAX_TEXT_CHARS + f"…[truncated {120000 - MAX_TEXT_CHARS} characters]"
        assert (d / "events.jsonl").stat().st_size < 100_000
    # uncapped, writing that one text (every string is scrubbed of secrets) took minutes
    assert times["longtext"] < 1.5 * times["plain"] + 5.0, times


def test_a_frame_over_the_size_limit_fails_that_sample_in_one_line(doubles, tmp_path):
    """The oversize double sends a 100,000-byte frame in its first session only: with max_message_bytes
    65536 that sample fails with one line naming the limit, the other completes."""
    code, stage, out = stage_run(tmp_path, "oversize", {"url": doubles["oversize"].url,
                                                        "max_message_bytes": 65536})
    first, second = (stage["samples"][f"{s}/{i}"] for s, i in SAMPLES)
    assert code == 1 and first["status"] == "failed" and second["status"] == "ok", stage["samples"]
    reason = first["reason"]
    assert "a server message was larger than max_message_bytes (65536 bytes)" in reason, reason
    assert "\n" not in reason and reason.startswith("runner 'moshi-ws': ")
    x = SAMPLES[("x_turn_taking", "2")]
    assert sf.info(str(sample_dir(out, ("x_turn_taking", "2")) / "output.wav")).frames == len(x)


# --- settings, without a server ---

def test_urls():
    e = endpoint("127.0.0.1", 8990)
    assert e.chat_url([]) == "ws://127.0.0.1:8990/api/chat" and e.settings_url() == "http://127.0.0.1:8990/api/settings"
    assert endpoint("host:9000", 8998).chat_url([]) == "ws://host:9000/api/chat"
    assert endpoint("https://h.example", 8998).chat_url([]) == "wss://h.example/api/chat"
    assert endpoint("wss://h:1/", 8998).chat_url([("a", "b c")]) == "wss://h:1/api/chat?a=b%20c"
    e = endpoint("http://h:2/proxy/api/chat?k=v", 8998)
    assert e.chat_url([("x", "1")]) == "ws://h:2/proxy/api/chat?k=v&x=1"
    assert e.settings_url() == "http://h:2/proxy/api/settings"
    assert endpoint("http://[::1]:5", 8998).chat_url([]) == "ws://[::1]:5/api/chat"


@pytest.mark.parametrize("args, message", [
    ({"url": "ftp://h:1"}, "url must look like"),
    ({"url": "http://h:1", "clock": "simulated"}, "clock must be"),
    ({"url": "http://h:1", "window": 0}, "window must be"),
    ({"url": "http://h:1", "skip_frames": -1}, "skip_frames must be"),
    ({"url": "http://h:1", "query": {"text_prompt": "x"}}, "with its own runner_arg"),
    ({"url": "http://h:1", "query": {"a": [1]}}, "must be a string or a number"),
    ({"url": "http://h:1", "server_seed": "7"}, "server_seed must be an integer"),
    ({"url": "http://h:1", "settings": [1]}, "settings must be a JSON object"),
    ({"url": "http://h:1", "open_timeout_s": 0}, "open_timeout_s must be a number > 0"),
    ({"url": "http://h:1", "ca_file": "/nonexistent.pem"}, "is not a file"),
    ({"url": "http://h:1", "profile": "nope"}, "unknown profile 'nope'"),
    ({"url": "http://h:1", "colour": 1}, "unknown runner_args colour"),
])
def test_bad_settings_are_one_line_errors(args, message):
    with pytest.raises(DuplexEvalError, match=message) as e:
        MoshiWSRunner(**args)
    assert "moshi-ws" in str(e.value) and "\n" not in str(e.value)


def test_url_from_the_environment(monkeypatch):
    monkeypatch.delenv("MODEL_URL", raising=False)
    with pytest.raises(DuplexEvalError, match="no server URL: set the environment variable MODEL_URL"):
        MoshiWSRunner()
    monkeypatch.setenv("MODEL_URL", "https://gpu-box:8998")
    monkeypatch.setenv("MODEL_INSECURE", "1")
    r = MoshiWSRunner(profile="flm-audio", clock="realtime")
    assert r.settings()["url"] == "wss://gpu-box:8998/api/chat" and r.insecure is True
    assert r.clock == "realtime" and r.args["default_port"] == 8990
    assert MoshiWSRunner(url="http://other:1").endpoint.netloc == "other:1"   # the arg wins


# --- TLS: a minimal in-process double over wss with a self-signed certificate ---

@pytest.fixture(scope="module")
def tls_double(cert):
    """A PROTOCOL TEST DOUBLE (not a model) served over HTTPS with a self-signed certificate, the way
    `python -m moshi.server --ssl DIR` serves: handshake, then one echoed frame per input frame after
    the first (Moshi's frame lock); POST /api/settings answers success."""
    import ssl
    import threading

    import asyncio
    import sphn
    from aiohttp import WSMsgType, web

    posted: list = []

    async def chat(request):
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        writer, reader = sphn.OpusStreamWriter(SR), sphn.OpusStreamReader(SR)
        await ws.send_bytes(b"\x00")
        pending, steps = np.zeros(0, np.float32), 0
        async for msg in ws:
            if msg.type != WSMsgType.BINARY or msg.data[:1] != b"\x01":
                continue
            pending = np.concatenate([pending, reader.append_bytes(msg.data[1:])])
            while len(pending) >= FRAME:
                frame, pending = pending[:FRAME], pending[FRAME:]
                steps += 1
                if steps > 1:
                    await ws.send_bytes(b"\x01" + writer.append_pcm(frame))
        return ws

    async def settings(request):
        posted.append(await request.json())
        return web.json_response({"status": "success"})

    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(cert[0], cert[1])
    loop = asyncio.new_event_loop()
    started = threading.Event()
    state = {}

    async def serve():
        app = web.Application()
        app.router.add_get("/api/chat", chat)
        app.router.add_post("/api/settings", settings)
        state["runner"] = web.AppRunner(app)
        await state["runner"].setup()
        site = web.TCPSite(state["runner"], "127.0.0.1", 0, ssl_context=ctx)
        await site.start()
        state["port"] = site._server.sockets[0].getsockname()[1]
        started.set()

    thread = threading.Thread(target=lambda: (loop.run_until_complete(serve()), loop.run_forever()), daemon=True)
    thread.start()
    started.wait(10)
    yield f"https://127.0.0.1:{state['port']}", cert[0], posted
    asyncio.run_coroutine_threadsafe(state["runner"].cleanup(), loop).result(5)
    loop.call_soon_threadsafe(loop.stop)


def test_wss_with_a_self_signed_certificate(tls_double, monkeypatch):
    monkeypatch.delenv("MODEL_CA", raising=False)
    monkeypatch.delenv("MODEL_INSECURE", raising=False)
    url, cert, posted = tls_double
    x = noise(0.5, 9)
    with pytest.raises(SessionFailed, match=r"cannot connect to wss://127\.0\.0\.1:\d+/api/chat .*ca_file"):
        render_one(MoshiWSRunner(url=url, insecure=False), x)
    for args in ({"ca_file": str(cert)}, {"insecure": True}):
        y, log = render_one(MoshiWSRunner(url=url, profile="flm-audio", **args), x)
        assert len(y) == len(x) and log.stats["out_frames"] == frames(len(x)) - 1
        # the echo comes back one frame late, through two Opus legs of 156 samples each
        lag = int(np.argmax(np.correlate(y, x[FRAME:3 * FRAME], "valid"))) - FRAME
        assert lag == pytest.approx(312, abs=3)
    assert len(posted) == 2 and posted[0]["temp_audio"] == 0.1


def test_a_failed_send_reports_what_the_receiver_saw_even_when_it_runs_late():
    """A send into a transport that is closing fails before the receiver has read the close: the
    session's reason is still the receiver's (the CI machine once ran the receiver only after the
    sender's next yield, and the reason named the transport's write error instead)."""
    import asyncio
    from types import SimpleNamespace

    from duplexeval_runner_moshi_ws import runner as mod

    class ClosingWS:
        async def send_bytes(self, data):
            raise ConnectionResetError("Cannot write to closing transport")

    conn = object.__new__(mod._Connection)
    conn.lockstep, conn.ended, conn.sent, conn.decoded, conn.stats = False, None, 0, 0, {"bytes_sent": 0}
    conn.writer = SimpleNamespace(append_pcm=lambda pcm: b"\x00" * 8)
    conn.ws, conn.r = ClosingWS(), SimpleNamespace(scrub=lambda text: text)
    lost = f"runner {mod.NAME!r}: the connection to the server was lost (no WebSocket close frame)"

    async def receiver_late():
        await asyncio.sleep(0.2)   # many yields after the failed send
        conn.ended = conn.ended or lost

    async def main():
        late = asyncio.ensure_future(receiver_late())
        await conn.send(np.zeros(mod.FRAME, dtype=np.float32), 3)
        await late

    asyncio.run(main())
    assert conn.ended == lost
