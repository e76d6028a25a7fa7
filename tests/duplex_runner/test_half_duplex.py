"""The `half-duplex` runner against tests/duplex_runner/audio_chat_server.py, a chat-completions test
double on 127.0.0.1 that answers with a tone after a fixed delay (a protocol double, not a model).

Known by construction: the double answers `delay_s` after a request; a reply starts at the VAD's
detection time plus that delay and the client's overhead (clock measured), or plus exactly
`fixed_compute_s` (clock fixed); it stops at the detection of the user's next speech, within one
32 ms frame and the endpointer's lag of its true onset (known to the sample: Piper speech with exact
zeros around it)."""

import json
import os
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from duplexeval_common import schemas
from duplexeval_common.errors import DuplexEvalError, MissingDependency
from duplexeval_common.jsonio import read_json, read_jsonl
from duplexeval_runner.cli import main
from duplexeval_runner.events import EventLog
from duplexeval_runner.harness import render
from duplexeval_runner.protocol import SessionFailed

from .conftest import make_dataset, zeros
from .servers import Doubles

pytest.importorskip("openai")
from duplexeval_runner_half_duplex.runner import HalfDuplexRunner  # noqa: E402

SCRIPT = Path(__file__).with_name("audio_chat_server.py")
SR, OUT_SR = 16000, 24000
KEY = "planted-hd-key-0123456789abcdefACE"   # a test value, not shaped like a real key
SUBSET = "synthetic_user_interruption"


@pytest.fixture
def server(tmp_path):
    with Doubles(tmp_path) as doubles:
        yield lambda **script: doubles.start(SCRIPT, "--script", json.dumps(script), url="http://127.0.0.1:{port}/v1")


@pytest.fixture(scope="module")
def dialogue():
    """Two questions 2 s apart: the first reply (4 s) is still playing when the second starts."""
    from tests.conftest import exact_speech
    u1, u2 = exact_speech("Can you tell me the capital of France?", SR), exact_speech("What about Germany?", SR)
    user = np.concatenate([zeros(0.3, SR), u1, zeros(2.0, SR), u2, zeros(4.0, SR)])
    return user, (round(0.3 * SR) + len(u1) + round(2.0 * SR)) / SR


def runner(url, **args):
    return HalfDuplexRunner(seed=0, url=url, max_retries=0, timeout_s=20, **args)


def test_fixed_clock_places_each_reply_fixed_compute_after_the_endpoint_and_barge_in_cuts_it(server, dialogue, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    srv = server(delay_s=0.2, reply_s=4.0)
    user, s2 = dialogue
    r = runner(srv.url, clock="fixed", fixed_compute_s=0.7)
    log = EventLog(record_wall=False)
    out, _ = render(r, user, SR, log)
    assert len(out) == len(user) and all(schemas.problem("runner-event", e) is None for e in log.rows)
    ends, speaks, starts = log.of_type("vad_end"), log.of_type("speak"), log.of_type("vad_start")
    assert len(ends) == len(speaks) == 2
    for e, s in zip(ends, speaks):
        assert s["endpoint_t"] == e["detected_t"] and s["t"] == pytest.approx(e["detected_t"] + 0.7, abs=1 / OUT_SR)
        assert s["text"].startswith("This is the double's reply number")
    (cut,) = log.of_type("interrupt")
    assert cut["t"] == starts[1]["detected_t"] and cut["reason"] == "user_speech" and cut["unheard"] is False
    assert s2 <= cut["t"] <= s2 + 0.032 + 0.1                  # one frame plus the endpointer's lag
    a, b = round(speaks[0]["t"] * SR), round(cut["t"] * SR)
    assert np.abs(out[a + 20:b - 20]).max() > 0.3               # it was speaking (the double's tone)
    assert np.abs(out[a - 200:a - 10]).max() == 0               # not before its placement
    assert np.abs(out[b + 40:round(speaks[1]["t"] * SR) - 20]).max() < 1e-3   # silent after the cut
    assert {k: log.stats[k] for k in ("turns", "replies", "interrupts")} == {"turns": 2, "replies": 2, "interrupts": 1}
    assert r.deterministic is False and "compute_s" not in log.stats
    req = srv.rows("request", n=2)
    assert [q["mode"] for q in req] == ["audio", "audio"]
    assert req[0]["modalities"] == ["text", "audio"] and req[0]["audio"] == {"voice": "alloy", "format": "wav"}
    assert req[0]["model"] == "gpt-4o-audio-preview" and req[0]["seed"] == 0
    import hashlib
    assert req[0]["auth_sha256"] == hashlib.sha256(f"Bearer {KEY}".encode()).hexdigest()
    # the second turn carries the first (its audio and the reply's transcript): the history
    assert req[0]["roles"] == ["system", "user"] and req[1]["roles"] == ["system", "user", "assistant", "user"]
    assert req[1]["input_audio_parts"] == 2
    # the turn's audio: from the VAD's start - 200 ms to its end + 200 ms, never past the detection
    lo = max(round((starts[0]["t"] - 0.2) * SR), 0)
    hi = min(round((ends[0]["t"] + 0.2) * SR), round(ends[0]["detected_t"] * SR))
    assert req[0]["last_input_samples"] == hi - lo


def test_measured_clock_places_the_reply_at_the_endpoint_plus_the_servers_delay(server, dialogue, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)     # a local server without authentication
    srv = server(delay_s=0.5, reply_s=1.0, reply_sr=16000)  # a WAV at another rate: resampled to 24 kHz
    user, _ = dialogue
    log = EventLog()
    out, _ = render(runner(srv.url), user, SR, log)
    speaks = log.of_type("speak")
    assert len(speaks) == 2
    for s in speaks:
        assert 0.5 <= s["t"] - s["endpoint_t"] <= 0.5 + 0.4, s    # the double's delay plus the client's overhead
        assert s["end_t"] - s["t"] == pytest.approx(1.0, abs=1e-3)
    assert log.stats["compute_s"]["llm"][0] >= 0.5 and len(log.stats["compute_s"]["latency"]) == 2


@pytest.mark.parametrize("mode, reason", [
    ("text", "the endpoint answered without audio (it sent text: \"This is the double's reply number 1.\")"),
    ("500", "failed after 1 attempts (last: HTTP 500)"),
    ("close", "failed after 1 attempts (last: connection error"),
    ("bad-audio", "the endpoint's audio is not base64"),
])
def test_a_failed_turn_fails_the_sample_with_one_line(server, dialogue, monkeypatch, mode, reason):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    srv = server(delay_s=0.0, modes=[mode])
    user, _ = dialogue
    with pytest.raises(SessionFailed) as exc:
        render(runner(srv.url, clock="fixed"), user[:round(4.0 * SR)], SR, EventLog())
    msg = str(exc.value)
    assert msg.startswith("runner 'half-duplex': ") and reason in msg and "\n" not in msg, msg


def test_a_retry_after_a_500_completes_the_turn_and_pcm16_replies_are_read(server, dialogue, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    srv = server(delay_s=0.0, reply_s=1.5, modes=["500", "audio"])
    user, _ = dialogue
    r = HalfDuplexRunner(seed=0, url=srv.url, max_retries=1, clock="fixed", audio_format="pcm16")
    log = EventLog()
    out, _ = render(r, user[:round(4.5 * SR)], SR, log)
    (s,) = log.of_type("speak")
    assert s["end_t"] - s["t"] == pytest.approx(1.5, abs=1e-3)
    assert [q["mode"] for q in srv.rows("request", n=2)] == ["500", "audio"]
    assert srv.rows("request", n=2)[1]["audio"]["format"] == "pcm16"


def test_settings_and_missing_parts_are_one_line(monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with pytest.raises(DuplexEvalError) as exc:        # a key never crosses the network in clear
        HalfDuplexRunner(url="http://example.com/v1")
    assert "not encrypted" in str(exc.value) and KEY not in str(exc.value)
    monkeypatch.delenv("MODEL_URL", raising=False)   # nor by the client's own $OPENAI_BASE_URL
    monkeypatch.setenv("OPENAI_BASE_URL", "http://example.com/v1")
    with pytest.raises(DuplexEvalError, match="not encrypted"):
        HalfDuplexRunner()
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("MODEL_URL", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(DuplexEvalError) as exc:        # OpenAI's API without a key
        HalfDuplexRunner()
    assert "needs an API key in $OPENAI_API_KEY" in str(exc.value)
    with pytest.raises(DuplexEvalError) as exc:
        HalfDuplexRunner(url="http://127.0.0.1:9/v1", history_messages=-1)
    assert "history_messages" in str(exc.value) and "\n" not in str(exc.value)
    # VocalNet is not on PyPI and its code is not importable here: the hint, in one line
    monkeypatch.delenv("VOCALNET_CODE", raising=False)
    with pytest.raises(MissingDependency) as exc:
        HalfDuplexRunner(backend="vocalnet", model_dir=str(tmp_path))
    msg = str(exc.value)
    assert "VocalNet is not on PyPI" in msg and "SJTU-OmniAgent/VocalNet" in msg and "\n" not in msg


def test_through_the_stage_a_dying_server_fails_one_sample_and_the_key_is_written_nowhere(server, tmp_path, dialogue,
                                                                                        monkeypatch):
    """Two samples; the double answers the first sample's first turn with a 500 and echoes the key in
    every transcript: that sample fails with its reason, the other completes, and no written file
    holds the key."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    srv = server(delay_s=0.1, reply_s=1.0, modes=["500", "audio"], echo_auth=True)
    user, _ = dialogue
    short = user[:round(4.5 * SR)]
    data = make_dataset(tmp_path / "data", {(SUBSET, "1"): (short, SR), (SUBSET, "2"): (short, SR)})
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"runner": "half-duplex", "seed": 0,
                               "runner_args": {"url": srv.url, "clock": "fixed", "fixed_compute_s": 0.4,
                                               "max_retries": 0}}))
    out = tmp_path / "out"
    res = CliRunner().invoke(main, ["run", "--input", str(data), "--output", str(out), "--config", str(cfg)],
                             catch_exceptions=False)
    assert res.exit_code != 0
    stage = read_json(out / "stage.json")
    one, two = stage["samples"][f"{SUBSET}/1"], stage["samples"][f"{SUBSET}/2"]
    assert one["status"] == "failed" and "HTTP 500" in one["reason"] and "\n" not in one["reason"], one
    assert two["status"] == "ok", two
    d = out / "samples" / SUBSET / "2"
    rec = read_json(d / "runner.json")
    assert schemas.problem("runner-record", rec) is None and rec["runner"] == "half-duplex"
    assert rec["settings"]["chat_audio"]["base_url"] == srv.url and rec["settings"]["runner_out_sr"] == OUT_SR
    (speak,) = [e for e in read_jsonl(d / "events.jsonl") if e["type"] == "speak"]
    assert speak["t"] == pytest.approx(speak["endpoint_t"] + 0.4, abs=1e-4)
    assert speak["text"].startswith("This is the double's reply number 2.")   # the echoed key is gone
    written = [p for p in out.rglob("*") if p.is_file()]
    assert written and not [p for p in written if KEY.encode() in p.read_bytes()]
    assert os.environ["OPENAI_API_KEY"] == KEY


def test_a_reply_over_max_reply_bytes_fails_the_sample_naming_the_limit(server, dialogue, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    srv = server(delay_s=0.0, reply_s=2.0)                  # about 128 kB of base64 audio
    user, _ = dialogue
    with pytest.raises(SessionFailed) as exc:
        render(runner(srv.url, clock="fixed", max_reply_bytes=4096), user[:round(4.0 * SR)], SR, EventLog())
    msg = str(exc.value)
    assert "more than 4096" in msg and "\n" not in msg, msg
