"""Round samples through real runners: the cascade (its LLM context is the GT history, in order; its
models never run on the history) and a network runner against a local protocol test double
(replayed: the output before start_s is the GT, the model's reply queued before it plays on)."""

from __future__ import annotations

import functools
import json
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from duplexeval_common import schemas
from duplexeval_common.jsonio import read_json, read_jsonl
from duplexeval_runner.events import EventLog
from duplexeval_runner.harness import render
from duplexeval_runner.protocol import SessionFailed
from duplexeval_runner.stage import make_stage

from . import servers
from .conftest import zeros
from .rounds_data import OPENER, SUBSET, gt_history, make_round, round_json, write_round
from .servers import Doubles, cert  # noqa: F401  (cert: a fixture)

SR = 16000
OUT_SR = 22050
JOKE, ANSWER = "Tell me a joke.", "Why did the chicken cross the road?"
LINES = [{"role": "assistant", "start": 0.0, "end": 1.0, "text": OPENER},
         {"role": "user", "start": 1.2, "end": 2.0, "text": JOKE},
         {"role": "assistant", "start": 2.3, "end": 3.4, "text": "Why did the chicken"},
         {"role": "assistant", "start": 3.4, "end": 3.6, "text": " cross the road? "}]
CONTEXT = [{"role": "assistant", "content": OPENER}, {"role": "user", "content": JOKE},
           {"role": "assistant", "content": ANSWER}]


# --- the cascade with stand-in models (fast) ---

class FakeASR:
    def __init__(self):
        self.calls = 0

    def transcribe(self, audio):
        self.calls += 1
        return "To get to the other side?"

    def settings(self):
        return {}

    def record(self):
        return {}


class FakeLLM:
    def __init__(self):
        self.contexts: list[list[dict]] = []

    def reply(self, history):
        self.contexts.append([dict(m) for m in history])
        return "Yes, exactly.", 3

    def settings(self):
        return {}

    def record(self):
        return {}


class FakeTTS:
    sr = OUT_SR

    def synthesize(self, text, reuse=False):
        return np.full(OUT_SR, 0.5, dtype=np.float32)

    def settings(self):
        return {}

    def record(self):
        return {}


def fake_cascade(**args):
    from duplexeval_runner_cascade.cascade import CascadeRunner
    r = CascadeRunner(**args)
    r.asr, r.llm, r.tts = FakeASR(), FakeLLM(), FakeTTS()
    r._load_vad()
    r._ready = True
    return r


def dialogue(speech):
    """The user channel: a history turn (A) at 1.2 s, the round's turn (B) at start_s."""
    a, b = speech(JOKE, SR), speech("To get to the other side?", SR)
    user = np.concatenate([zeros(1.2, SR), a, zeros(1.7, SR), b, zeros(2.5, SR)])
    start = (round(1.2 * SR) + len(a) + round(1.7 * SR)) / SR
    return user, start, start + len(b) / SR


def test_cascade_llm_context_is_the_gt_history_and_its_models_skip_the_history(speech):
    pytest.importorskip("faster_whisper")
    user, start, e_b = dialogue(speech)
    rnd = make_round(user, SR, start, lines=LINES)
    r = fake_cascade(clock="fixed", fixed_compute_s=0.5)
    log = EventLog(record_wall=False)
    out, session = render(r, user, SR, log, round_=rnd)
    assert r.asr.calls == 1                                   # the history turn never reached the ASR
    (ctx,) = r.llm.contexts
    assert ctx == CONTEXT + [{"role": "user", "content": "To get to the other side?"}]
    (ev,) = log.of_type("llm_context")
    assert ev["messages"] == CONTEXT and schemas.problem("runner-event", ev) is None
    (vs,), (ve,) = log.of_type("vad_start"), log.of_type("vad_end")
    assert start - 0.032 <= vs["t"] <= start + 0.1 and abs(ve["t"] - e_b) <= 0.1   # only the round's turn
    (speak,) = log.of_type("speak")
    assert speak["t"] == pytest.approx(ve["detected_t"] + 0.5, abs=1 / OUT_SR)
    s0 = round(start * SR)
    assert np.array_equal(out[:s0], rnd.history[:s0])
    i = round(speak["t"] * SR)
    assert not out[s0:i - 10].any() and abs(out[i + 100] - 0.5) < 0.01
    assert session.round_record["history"] == "teacher-forced" and session.round_record["model_history_s"] == 0.0
    assert session.stats["forced_steps"] == -(-s0 // 512)


def test_cascade_bad_history_lines_fail_the_sample_with_one_line(speech):
    pytest.importorskip("faster_whisper")
    user = np.zeros(SR, np.float32)
    rnd = make_round(user, SR, 0.5, lines=[{"role": "narrator", "text": "x"}])
    with pytest.raises(SessionFailed) as exc:
        render(fake_cascade(clock="fixed"), user, SR, EventLog(record_wall=False), round_=rnd)
    msg = str(exc.value)
    assert "history[0] must have role user|assistant" in msg and "\n" not in msg


@pytest.mark.slow
def test_cascade_real_models_on_a_round(tmp_path, speech):
    """One short real run (SmolLM2, faster-whisper tiny.en, Piper, Silero) through the stage."""
    pytest.importorskip("faster_whisper")
    user, start, _ = dialogue(speech)
    root = tmp_path / "in"
    write_round(root, "d1-r02", user, gt_history(len(user), SR, start), SR,
                round_json("d1", 2, start, len(user) / SR, LINES))
    config = {"runner": "cascade", "runner_args": {"clock": "fixed", "fixed_compute_s": 0.5}, "seed": 0}
    t0 = time.monotonic()
    code = make_stage(config).run([root], tmp_path / "out", config)
    print(f"real cascade round: {time.monotonic() - t0:.1f} s")
    assert code == 0
    d = tmp_path / "out" / "samples" / SUBSET / "d1-r02"
    rec = read_json(d / "runner.json")
    assert rec["round"]["history"] == "teacher-forced" and rec["stats"]["turns"] == 1
    events = read_jsonl(d / "events.jsonl")
    (ctx,) = [e for e in events if e["type"] == "llm_context"]
    assert ctx["messages"] == CONTEXT
    (asr,) = [e for e in events if e["type"] == "asr"]
    assert "side" in asr["text"].lower() and asr["t"] > start
    speaks = [e for e in events if e["type"] == "speak"]
    assert len(speaks) == 1 and speaks[0]["t"] > start


# --- a network runner against the Freeze-Omni protocol double ---

FREEZE = Path(__file__).with_name("freeze_omni_server.py")
talk = functools.partial(servers.talk, sr=SR)


@pytest.fixture
def server(cert, tmp_path):
    with Doubles(tmp_path) as doubles:
        yield lambda **script: doubles.start(FREEZE, "--cert", cert[0], "--key", cert[1], "--script",
                                             json.dumps(script), url="https://127.0.0.1:{port}")


def test_a_network_runner_is_replayed_and_its_reply_across_the_start_is_kept(tmp_path, server, cert):
    """The double replies with a 1 s tone 0.3 s after the history turn's end E = 0.7 s, i.e. over
    [1.0, 2.0]; the round starts at 1.5 s: its first half is replaced by the GT, its second kept."""
    pytest.importorskip("socketio")
    srv = server(reply_delay_s=0.3)
    user = talk(("silence", 0.2), ("speech", 0.5), ("silence", 1.8))
    start = 1.5
    root = tmp_path / "in"
    src = write_round(root, "d1-r02", user, gt_history(len(user), SR, start), SR,
                      round_json("d1", 2, start, len(user) / SR))
    config = {"runner": "freeze-omni", "runner_args": {"url": srv.url, "ca_file": str(cert[0]), "grace_s": 0.0},
              "seed": 0}
    code = make_stage(config).run([root], tmp_path / "out", config)
    assert code == 0, read_json(tmp_path / "out" / "stage.json")["samples"]
    d = tmp_path / "out" / "samples" / SUBSET / "d1-r02"
    y = servers.output(d, len(user), SR)
    gt = sf.read(str(src / "history.wav"), dtype="int16")[0]
    out16 = sf.read(str(d / "output.wav"), dtype="int16")[0]
    s0 = round(start * SR)
    assert np.array_equal(out16[:s0], gt[:s0])
    assert y[s0 + int(0.07 * SR):int(1.9 * SR)].std() > 0.1          # the tone queued before start_s plays on
    rec = read_json(d / "runner.json")
    assert schemas.problem("runner-record", rec) is None
    r = rec["round"]
    assert r["history"] == "replayed" and r["start_s"] == 1.5
    assert abs(r["model_history_s"] - 0.5) <= 0.07, r               # [1.0, 1.5) of model audio replaced
    events = read_jsonl(d / "events.jsonl")
    (he,) = [e for e in events if e["type"] == "history_end"]
    assert he["t"] == 1.5 and he["history"] == "replayed"
