"""Live sessions on the realtime clock: the cascade examiner talking with the freeze-omni and
openai-realtime runners, each against its protocol test double (freeze_omni_server.py,
openai_realtime_server.py: local servers speaking Socket.IO and the Realtime API's WebSocket events,
not models). Each double answers with speech (a Piper WAV) `reply_delay_s` after the user's last loud
sample, so where the reply lands, and that the examiner waits for it, is known. The examiner's LLM is
the local chat-completions test double (tests/judge/chat_server.py), asked from its worker thread
beside the event loop that paces the frames.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from duplexeval_common.jsonio import read_json
from duplexeval_common.wavio import write_wav

from tests.conftest import exact_speech
from duplexeval_runner_openai_realtime.runner import SERVER_VAD
from tests.judge import chat_server

from .servers import Doubles, cert  # noqa: F401  (cert: a fixture)
from .test_live import SUBSET, audible, dataset, files, run_stage, script

pytest.importorskip("socketio")

# run alone, after the parallel tests (make test): real-time sessions
pytestmark = pytest.mark.serial

FREEZE = __import__("pathlib").Path(__file__).with_name("freeze_omni_server.py")
REALTIME = FREEZE.with_name("openai_realtime_server.py")
KEY = "planted-live-key-81f2c3d4e5ACE"  # a test value, not shaped like a real key
DELAY = 0.5
SLACK = 0.2  # a frame, the loopback round trip, and the examiner's 20 ms ticks
# a loaded 2-core machine (make test runs two serial files at once) delays single sends past the
# default 20 ms, and a session that drifts on every try is ineligible; 100 ms is inside SLACK
PACE = {"drift_limit_ms": 100}


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DUPLEXEVAL_CACHE", str(tmp_path / "cache"))


@pytest.fixture
def reply_wav(tmp_path):
    path = tmp_path / "reply.wav"
    write_wav(path, exact_speech("Sure, I can help you with that dinner.", 24000), 24000)
    return str(path)


@pytest.fixture
def llm():
    srv = chat_server.start(lambda body, n: chat_server.ok(f"Line {n + 1}, please go on."))
    yield srv
    srv.shutdown()


def check_waits_for_the_reply(out, delay: float = DELAY, realtime: bool = True) -> dict:
    _d, user, model, _mix, exam, rec = files(out)
    assert rec["status"] == "ok" and rec["stats"]["placed_before_horizon"] == 0
    assert rec["clock"] == ("realtime" if realtime else "lockstep")
    turns = exam["turns"]
    assert turns[0]["answered"] and exam["goals_reached"][:1] == ["T1"]
    assert turns[1]["kind"] == "follow_up" and turns[1]["text"] == "Line 1, please go on."
    first = exam["model_turns"][0]
    end = int(round(turns[0]["end_s"] * 16000))
    start = (end + int(np.argmax(audible(model[end:], 0.01)))) / 16000
    assert start - turns[0]["end_s"] == pytest.approx(delay, abs=SLACK)
    assert abs(first["start_s"] - start) < 0.1                          # the examiner heard it start there
    assert turns[1]["start_s"] >= first["end_s"] + 0.4                   # and waited for its end
    spoken = audible(user)
    assert (spoken & audible(model, 0.01)).mean() < 0.02                 # no talking over each other
    return exam


def test_freeze_omni_live_session(tmp_path, cert, reply_wav, llm, monkeypatch):  # noqa: F811
    """... and the examiner's speech and transcriptions are never made on the event loop that paces
    the frames (they would delay every session's sends)."""
    import threading
    from duplexeval_runner_cascade import examiner as examiner_mod
    from duplexeval_runner_cascade.asr import WhisperASR
    threads = []
    for cls, name in ((examiner_mod.CascadeExaminer, "speech"), (WhisperASR, "transcribe")):
        real = getattr(cls, name)

        def spy(self, *a, _real=real, **kw):
            threads.append(threading.current_thread().name)
            return _real(self, *a, **kw)
        monkeypatch.setattr(cls, name, spy)
    with Doubles(tmp_path) as doubles:
        srv = doubles.start(FREEZE, "--cert", cert[0], "--key", cert[1], "--script",
                            json.dumps({"reply_delay_s": DELAY, "reply_wav": reply_wav}), url="https://127.0.0.1:{port}")
        data = dataset(tmp_path / "in", {"0": script(14.0)})
        out, samples = run_stage(tmp_path, "fo", data, "freeze-omni", {"url": srv.url, "ca_file": str(cert[0]), **PACE},
                                 {"llm": "openai", "llm_url": llm.base_url})
        assert samples[f"{SUBSET}/0"]["status"] == "ok", samples
        check_waits_for_the_reply(out)
    assert threads and "duplex-runner-loop" not in threads, threads


def test_openai_realtime_live_session_and_the_slow_examiner_yields_to_a_model_that_talks_over_it(
        tmp_path, reply_wav, llm, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with Doubles(tmp_path) as doubles:
        polite = doubles.start(REALTIME, "--script", json.dumps({"api_key": KEY, "reply_delay_s": DELAY,
                                                                 "reply_wav": reply_wav, "speed": 1.0}),
                               url="ws://127.0.0.1:{port}/v1")
        data = dataset(tmp_path / "in", {"0": script(14.0)})
        ex = {"llm": "openai", "llm_url": llm.base_url}
        out, samples = run_stage(tmp_path, "oa", data, "openai-realtime", {"url": polite.url, **PACE}, ex)
        assert samples[f"{SUBSET}/0"]["status"] == "ok", samples
        check_waits_for_the_reply(out)
        # a session whose VAD ends the user's turn after 50 ms of quiet gets an answer inside the
        # opening's first pause: the slow examiner stops its line there, the fast one talks on
        rude = doubles.start(REALTIME, "--script", json.dumps({"api_key": KEY, "reply_delay_s": 0.0,
                                                               "reply_wav": reply_wav, "speed": 1.0}),
                             url="ws://127.0.0.1:{port}/v1")
        for preset in ("slow", "fast"):
            out, samples = run_stage(tmp_path, f"rude-{preset}", data, "openai-realtime",
                                     {"url": rude.url, **PACE,
                                      "turn_detection": {**SERVER_VAD, "silence_duration_ms": 50}}, {**ex, "preset": preset})
            assert samples[f"{SUBSET}/0"]["status"] == "ok", samples
            exam = read_json(out / "samples" / SUBSET / "0" / "examiner.json")
            opening = exam["turns"][0]
            if preset == "slow":
                assert opening["yielded"] and opening["end_s"] < opening["planned_end_s"] - 0.3
            else:
                assert not opening["yielded"] and opening["end_s"] == opening["planned_end_s"]


def test_a_model_server_that_dies_mid_session_fails_that_session_and_a_rerun_completes_it(
        tmp_path, cert, reply_wav, llm):  # noqa: F811
    with Doubles(tmp_path) as doubles:
        srv = doubles.start(FREEZE, "--cert", cert[0], "--key", cert[1], "--script",
                            json.dumps({"reply_delay_s": DELAY, "reply_wav": reply_wav, "die_after": 100,
                                        "die_how": "disconnect", "die_in_session": 1, "die_times": 1}),
                            url="https://127.0.0.1:{port}")
        data = dataset(tmp_path / "in", {"0": script(6.0), "1": script(6.0)})
        args = ({"url": srv.url, "ca_file": str(cert[0]), **PACE}, {"llm": "openai", "llm_url": llm.base_url})
        out, samples = run_stage(tmp_path, "fo", data, "freeze-omni", *args)
        first, second = samples[f"{SUBSET}/0"], samples[f"{SUBSET}/1"]
        assert first["status"] == "failed" and "before the input ended" in first["reason"], first
        assert "\n" not in first["reason"] and second["status"] == "ok"
        assert not (out / "samples" / SUBSET / "0" / "examiner.json").exists()  # nothing of it scored
        out, samples = run_stage(tmp_path, "fo", data, "freeze-omni", *args)
        assert samples[f"{SUBSET}/0"]["status"] == "ok"
        assert read_json(out / "samples" / SUBSET / "0" / "examiner.json")["turns"][0]["kind"] == "opening"


def test_moshi_ws_live_session_in_lockstep(tmp_path, llm):
    """The moshi-ws runner (lockstep: frames as fast as the frame-locked server takes them) against
    its protocol double (moshi_server.py: the real moshi code on a tiny random-weight model, in the
    moshi environment), gated to answer with speech 0.5 s after the user's last loud sample."""
    import subprocess
    moshi_py = FREEZE.parents[2] / ".venvs" / "runner-moshi" / "bin" / "python"
    if not moshi_py.exists():
        pytest.skip("the Moshi protocol double runs in the moshi environment (scripts/setup-runner-venv.sh moshi)")
    reply = tmp_path / "reply24.wav"
    write_wav(reply, exact_speech("Sure, I can help you with that dinner.", 24000), 24000)
    err = open(tmp_path / "moshi.err", "w")
    proc = subprocess.Popen([str(moshi_py), str(FREEZE.with_name("moshi_server.py")), "--print-port",
                             "--reply-after-silence", str(DELAY), "--reply-wav", str(reply)],
                            stdout=subprocess.PIPE, stderr=err, text=True)
    try:
        line = proc.stdout.readline()
        assert line.strip().isdigit(), (tmp_path / "moshi.err").read_text()[-2000:]
        data = dataset(tmp_path / "in", {"0": script(14.0)})
        out, samples = run_stage(tmp_path, "mw", data, "moshi-ws", {"url": f"http://127.0.0.1:{int(line)}"},
                                 {"llm": "openai", "llm_url": llm.base_url})
        assert samples[f"{SUBSET}/0"]["status"] == "ok", samples
        _d, _user, _model, _mix, _exam, rec = files(out)
        assert rec["clock"] == "lockstep"
        check_waits_for_the_reply(out, delay=DELAY + 0.08, realtime=False)  # + the server's first, empty frame
    finally:
        proc.kill()
        proc.wait(5)
        err.close()
