"""The cascade's configurable parts (duplexeval_runner_cascade/parts.py): an asr-aligner backend as its
ASR, an OpenAI-compatible endpoint as its LLM (against tests/duplex_runner/audio_chat_server.py, a
chat-completions test double, not a model, in its text mode), a tts-synth engine as its TTS, SenseVoice
and the `bailing` profile's install hints. The offline default's placement, barge-in and history are
test_cascade_logic.py's; its real models test_cascade.py's."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from duplexeval_common.errors import DuplexEvalError, MissingDependency
from duplexeval_runner.events import EventLog
from duplexeval_runner.harness import render
from duplexeval_runner.protocol import SessionFailed
from duplexeval_runner_cascade import parts
from duplexeval_runner_cascade.cascade import CascadeRunner

from .conftest import zeros
from .servers import Doubles
from .test_cascade_logic import FakeASR, FakeTTS

SCRIPT = Path(__file__).with_name("audio_chat_server.py")
SR = 16000


def test_the_part_lists_are_the_components_registries():
    from duplexeval_asr.backends import BACKENDS
    from duplexeval_tts.engines import ENGINES
    assert set(parts.ALIGNER_ASR) == set(BACKENDS.names()) - {"precomputed"}
    assert set(parts.SYNTH_TTS) == set(ENGINES.names()) - {"piper"}


@pytest.fixture
def chat(tmp_path):
    with Doubles(tmp_path) as doubles:
        yield lambda **script: doubles.start(SCRIPT, "--script", json.dumps(script), url="http://127.0.0.1:{port}/v1")


def endpoint_cascade(url, **args):
    r = CascadeRunner(seed=7, llm_backend="openai", llm_url=url, llm_model="double", llm_max_retries=0,
                      clock="fixed", fixed_compute_s=0.6, **args)
    r.asr, r.tts = FakeASR(), FakeTTS()
    r._load_vad()
    r._ready = True
    return r


def test_an_endpoint_llm_answers_each_turn_through_the_one_client(chat, speech, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    srv = chat(delay_s=0.0, modes=["text"])
    r = endpoint_cascade(srv.url)
    u = speech("Hello there.", SR)
    user = np.concatenate([zeros(0.3, SR), u, zeros(3.0, SR), u, zeros(3.0, SR)])
    log = EventLog(record_wall=False)
    out, _ = render(r, user, SR, log)
    llm, speaks, ends = log.of_type("llm"), log.of_type("speak"), log.of_type("vad_end")
    assert [e["text"] for e in llm] == ["This is the double's reply number 1.", "This is the double's reply number 2."]
    assert [e["tokens"] for e in llm] == [7, 7]
    for e, s in zip(ends, speaks):
        assert s["t"] == pytest.approx(e["detected_t"] + 0.6, abs=1 / 22050)
    req = srv.rows("request", n=2)
    assert req[0]["model"] == "double" and req[0]["seed"] == 7 and req[0]["temperature"] == 0.0
    assert req[0]["max_tokens"] == 40 and req[0]["modalities"] is None
    assert req[0]["roles"] == ["system", "user"] and req[1]["roles"] == ["system", "user", "assistant", "user"]
    assert r.deterministic is False and r.settings()["llm"]["base_url"] == srv.url
    assert "llm-endpoint" in r.models()


def test_a_failing_llm_endpoint_fails_the_sample_with_one_line(chat, speech, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    srv = chat(delay_s=0.0, modes=["500"])
    user = np.concatenate([zeros(0.3, SR), speech("Hello there.", SR), zeros(1.5, SR)])
    with pytest.raises(SessionFailed) as exc:
        render(endpoint_cascade(srv.url), user, SR, EventLog())
    msg = str(exc.value)
    assert msg.startswith("runner 'cascade': the LLM endpoint: ") and "HTTP 500" in msg and "\n" not in msg


@pytest.mark.parametrize("where", ["setting", "environment"])
def test_a_key_is_never_sent_to_a_clear_text_llm_endpoint(where, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "planted-cascade-key-4242ACE")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    url = "http://example.com/v1"
    if where == "environment":                                   # $OPENAI_BASE_URL is checked as llm_url is
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        url = None
    with pytest.raises(DuplexEvalError) as exc:
        CascadeRunner(seed=7, llm_backend="openai", llm_url=url, llm_model="double")
    msg = str(exc.value)
    assert "not encrypted" in msg and "example.com" in msg and "planted-cascade-key" not in msg and "\n" not in msg


def test_an_asr_aligner_backend_transcribes_the_turn(speech):
    pytest.importorskip("faster_whisper")
    asr = parts.make_asr({"asr_backend": "faster-whisper", "asr_args": {"cpu_threads": 1}})
    text = asr.transcribe(np.concatenate([zeros(0.2, SR), speech("Can you tell me the capital of France?", SR),
                                          zeros(0.2, SR)]))
    assert "capital" in text.lower() and "france" in text.lower()
    assert asr.settings()["backend"] == "faster-whisper" and asr.record()["model_sha256"]
    with pytest.raises(DuplexEvalError) as exc:
        parts.make_asr({"asr_backend": "faster-whisper", "asr_args": {"beam_size": 0}})
    assert "asr_args" in str(exc.value) and "beam_size" in str(exc.value) and "\n" not in str(exc.value)


def test_a_tts_synth_engine_speaks_the_reply_trimmed():
    if shutil.which("espeak-ng") is None:
        pytest.skip("the espeak-ng binary")
    tts = parts.EngineTTS({"tts_engine": "espeak-ng", "tts_args": {}})
    audio = tts.synthesize("Paris is the capital.")
    assert tts.sr > 0 and len(audio) / tts.sr > 0.5
    assert abs(audio[0]) > 1e-3 and abs(audio[-1]) > 1e-3       # starts with sound where it is placed
    assert tts.settings()["engine"] == "espeak-ng"
    with pytest.raises(DuplexEvalError) as exc:
        parts.EngineTTS({"tts_engine": "espeak-ng", "tts_args": {"rate": 9}})
    assert "tts_args" in str(exc.value) and "rate" in str(exc.value)


def test_sensevoice_and_the_bailing_profile_say_what_is_missing_in_one_line(monkeypatch, tmp_path):
    monkeypatch.delenv("SENSEVOICE_DIR", raising=False)
    with pytest.raises(MissingDependency) as exc:
        CascadeRunner(profile="bailing")
    msg = str(exc.value)
    assert "SenseVoice" in msg and "funasr==1.2.7" in msg and "\n" not in msg
    (tmp_path / "model.pt").write_bytes(b"x")
    monkeypatch.setenv("SENSEVOICE_DIR", str(tmp_path))
    import importlib.util
    real = importlib.util.find_spec                                  # funasr absent, whatever is installed
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "funasr" else real(name, *a))
    with pytest.raises(MissingDependency) as exc:
        parts.make_asr({"asr_backend": "sensevoice", "asr_args": {}})
    assert "funasr is not installed" in str(exc.value)
    with pytest.raises(DuplexEvalError) as exc:
        parts.make_asr({"asr_backend": "sensevoice", "asr_args": {"language": "klingon"}})
    assert "asr_args" in str(exc.value) and "language" in str(exc.value)


def test_the_bailing_profile_is_the_papers_cascade():
    from duplexeval_runner import profiles
    prof = profiles.load("duplexeval_runner_cascade", "cascade", "bailing")
    CascadeRunner.SETTINGS.check_profile("cascade", prof)
    d = prof.defaults
    assert (d["asr_backend"], d["llm_backend"], d["llm_model"], d["tts_engine"]) == ("sensevoice", "openai", "gpt-4o",
                                                                                       "chattts")
    assert d["min_silence_ms"] == 200 and "wwbin2017/bailing" in prof.source and "2511.10262" in prof.source
