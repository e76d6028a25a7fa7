"""The runner core's multi-round (MTR) protocol: round samples (round.json + history.wav) through
the controls, a teacher-forced and a replayed StepRunner double, and the stage (files, records,
bad rounds, ordinary samples untouched). Fast: no model beyond Piper and the Silero VAD."""

from __future__ import annotations


import numpy as np
import pytest
import soundfile as sf

from duplexeval_common import schemas
from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.jsonio import read_json, read_jsonl
from duplexeval_common.wavio import fit_length, resample
from duplexeval_runner.events import EventLog
from duplexeval_runner.harness import render
from duplexeval_runner.protocol import OfflineRunner, StepRunner, StreamRunner, history_mode
from duplexeval_runner.stage import make_stage
from duplexeval_runner_controls.always_talk import AlwaysTalkRunner
from duplexeval_runner_controls.fixed_latency import FixedLatencyRunner

from .conftest import first_audible, zeros
from .rounds_data import SUBSET, gt_history, make_round, round_json, write_round

SR = 16000


def pcm(path) -> np.ndarray:
    return sf.read(str(path), dtype="int16")[0]


def stage(tmp_path, root, runner: str, runner_args: dict | None = None, name: str = "out"):
    out = tmp_path / name
    config = {"runner": runner, "runner_args": runner_args or {}, "seed": 0}
    code = make_stage(config).run([root], out, config)
    return code, read_json(out / "stage.json"), out


# --- the stage: silence, files and records, bad rounds, ordinary samples ---

@pytest.fixture(scope="module")
def dataset(tmp_path_factory, speech):
    """Good rounds, bad rounds and an ordinary sample, side by side."""
    root = tmp_path_factory.mktemp("rounds")
    user = np.concatenate([zeros(0.4, SR), speech("Tell me a joke.", SR), zeros(2.2, SR)])
    n = len(user)
    end = n / SR
    start = 2.345
    hist = gt_history(n, SR, start)
    write_round(root, "d1-r02", user, hist, SR, round_json("d1", 2, start, end))
    write_round(root, "d1-r01", user, gt_history(n, SR, 0.0), SR, round_json("d1", 1, 0.0, end))
    write_round(root, "ordinary", user, None, SR, None)
    bad = {
        "bad-order": round_json("d2", 1, end, 1.0),                   # start_s > end_s
        "bad-end": round_json("d2", 2, 1.0, end + 0.5),               # not input.wav's length
        "bad-type": round_json("d2", 3, "1.0", end),                  # start_s not a number
        "bad-json": '{"format": "mtr-round/1", ',                     # not JSON
        "bad-format": round_json("d2", 5, 1.0, end, format="mtr-round/0"),
    }
    for sid, meta in bad.items():
        write_round(root, sid, user, hist, SR, meta)
    write_round(root, "short-history", user, hist[:-160], SR, round_json("d2", 6, 1.0, end))
    write_round(root, "no-history", user, None, SR, round_json("d2", 7, 1.0, end))
    write_round(root, "rate-history", user, None, SR, round_json("d2", 8, 1.0, end))
    sf.write(str(root / "samples" / SUBSET / "rate-history" / "history.wav"),
             resample(hist, SR, 8000), 8000, subtype="PCM_16")
    # the ordinary sample alone, for byte comparison
    alone = tmp_path_factory.mktemp("ordinary")
    write_round(alone, "ordinary", user, None, SR, None)
    return {"root": root, "alone": alone, "user": user, "start": start, "end": end}


def test_silence_round_is_the_gt_history_then_zeros_and_bad_rounds_fail_alone(tmp_path, dataset):
    code, rec, out = stage(tmp_path, dataset["root"], "silence")
    st = rec["samples"]
    assert code == 1                                     # failed samples, no --allow-failures
    ok = {"d1-r01", "d1-r02", "ordinary"}
    assert {k.split("/")[1] for k, v in st.items() if v["status"] == "ok"} == ok
    reasons = {k.split("/")[1]: v["reason"] for k, v in st.items() if v["status"] == "failed"}
    expect = {
        "bad-order": "round.json: start_s", "bad-end": "round.json: end_s",
        "bad-type": "round.json: start_s must be a number", "bad-json": "round.json is not valid JSON",
        "bad-format": "round.json: format must be 'mtr-round/1'", "short-history": "history.wav is",
        "no-history": "history.wav is missing", "rate-history": "history.wav is",
    }
    assert set(reasons) == set(expect)
    for sid, words in expect.items():
        r = reasons[sid]
        assert r.startswith(("round.json", "history.wav")) and words in r and "\n" not in r, r
    assert "match" in reasons["short-history"] and "8000 Hz" in reasons["rate-history"]
    assert "0 <= start_s <= end_s" in reasons["bad-order"] and "input.wav's length" in reasons["bad-end"]
    for sid in reasons:                                   # nothing half-written
        assert not (out / "samples" / SUBSET / sid).exists()

    src = dataset["root"] / "samples" / SUBSET / "d1-r02"
    d = out / "samples" / SUBSET / "d1-r02"
    s0 = round(dataset["start"] * SR)
    y, h = pcm(d / "output.wav"), pcm(src / "history.wav")
    assert len(y) == len(h) == len(dataset["user"]) and sf.info(str(d / "output.wav")).channels == 1
    assert np.array_equal(y[:s0], h[:s0]) and np.abs(h[:s0]).max() > 5000   # the GT, to the sample
    assert not y[s0:].any()                                                  # silence's own output
    r = read_json(d / "runner.json")
    assert schemas.problem("runner-record", r) is None
    assert r["round"] == {"dialogue_id": "d1", "round": 2, "start_s": 2.345, "end_s": round(dataset["end"], 6),
                          "history": "teacher-forced", "model_history_s": 0.0}
    assert r["stats"]["forced_steps"] == 3                                   # 1 s frames starting before 2.345
    events = read_jsonl(d / "events.jsonl")
    assert all(schemas.problem("runner-event", e) is None for e in events)
    (he,) = [e for e in events if e["type"] == "history_end"]
    assert he["t"] == 2.345 and he["history"] == "teacher-forced" and he["model_history_s"] == 0.0

    r1 = read_json(out / "samples" / SUBSET / "d1-r01" / "runner.json")     # start_s 0: no history
    assert r1["round"]["start_s"] == 0.0 and r1["stats"]["forced_steps"] == 0
    assert not pcm(out / "samples" / SUBSET / "d1-r01" / "output.wav").any()


def test_ordinary_samples_are_byte_for_byte_unchanged(tmp_path, dataset):
    """Beside round samples, an ordinary sample's files are those of a run without any round."""
    _, _, mixed = stage(tmp_path, dataset["root"], "fixed-latency", {"delay_s": 0.5}, name="mixed")
    code, _, alone = stage(tmp_path, dataset["alone"], "fixed-latency", {"delay_s": 0.5}, name="alone")
    assert code == 0
    for f in ("output.wav", "events.jsonl", "runner.json"):
        a = (mixed / "samples" / SUBSET / "ordinary" / f).read_bytes()
        b = (alone / "samples" / SUBSET / "ordinary" / f).read_bytes()
        assert a == b, f
    rec = read_json(alone / "samples" / SUBSET / "ordinary" / "runner.json")
    assert "round" not in rec and "forced_steps" not in rec["stats"]
    assert not any(e["type"] == "history_end" for e in read_jsonl(alone / "samples" / SUBSET / "ordinary" / "events.jsonl"))
    assert rec["stats"]["replies"] == 1                     # it did reply: the file is not trivially equal


# --- the controls through the harness ---

def test_always_talk_talks_from_the_round_start_and_the_gt_before(speech):
    user = np.concatenate([zeros(0.3, SR), speech("Hello there.", SR), zeros(3.0, SR)])
    start = 2.5                                           # mid-frame: frames are 1 s
    rnd = make_round(user, SR, start)
    r = AlwaysTalkRunner()
    r.setup()
    log = EventLog(record_wall=False)
    out, session = render(r, user, SR, log, round_=rnd)
    s0 = round(start * SR)
    p = r.phrase(SR)
    n = min(len(p), len(out) - s0)
    assert np.array_equal(out[:s0], rnd.history[:s0])
    assert np.array_equal(out[s0:s0 + n], p[:n])          # the phrase from its first sample, at start_s
    assert abs(out[s0]) > 1e-3
    assert session.round_record["history"] == "teacher-forced" and session.round_record["model_history_s"] == 0.0
    assert session.stats["forced_steps"] == 3
    (speak,) = log.of_type("speak")
    assert speak["t"] == start


def test_fixed_latency_teacher_forced_replies_only_to_the_round_turn(speech):
    """A history user turn, then the round's user turn at start_s: one reply, at E + delay_s after
    the round's turn; the history turn's end is heard (logged) but places nothing."""
    a, b = speech("Tell me a joke.", SR), speech("Another one please.", SR)
    start = 0.3 + len(a) / SR + 1.5                        # the GT model talks in between
    user = np.concatenate([zeros(0.3, SR), a, zeros(1.5, SR), b, zeros(2.0, SR)])
    assert round(start * SR) == round(0.3 * SR) + len(a) + round(1.5 * SR)
    e_b = start + len(b) / SR
    rnd = make_round(user, SR, start)
    r = FixedLatencyRunner(delay_s=0.4)
    r.setup()
    log = EventLog(record_wall=False)
    out, session = render(r, user, SR, log, round_=rnd)
    ends = log.of_type("vad_end")
    assert len(ends) == 2 and ends[0].get("history") is True and "history" not in ends[1]
    assert 0.3 < ends[0]["t"] <= 0.3 + len(a) / SR + 0.001 and abs(ends[1]["t"] - e_b) <= 0.001
    (speak,) = log.of_type("speak")
    assert abs(speak["t"] - (e_b + 0.4)) <= 0.001
    s0 = round(start * SR)
    assert np.array_equal(out[:s0], rnd.history[:s0])
    assert abs(first_audible(out[s0:], 1e-3) / SR + start - (e_b + 0.4)) <= 0.001
    assert session.stats["replies"] == 1 and session.round_record["model_history_s"] == 0.0


# --- StepRunner doubles: replayed (no force) and teacher-forced (force called as the rule says) ---

class Replayed(StepRunner):
    """No force: `history` stays "replayed". It says 1 s of 0.5 at 1.0 s (before the round's start,
    playing past it) and 0.3 s of 0.25 at 2.5 s."""
    name = "replayed-double"
    clock = "simulated"
    deterministic = True
    frame_ms = 100.0

    def __init__(self):
        self.steps = 0

    def step(self, frame, session):
        self.steps += 1
        t = session.now() - 0.1                          # the frame's start
        if abs(t - 1.0) < 1e-9:
            session.place(np.full(SR, 0.5, np.float32), t=1.0)
        if abs(t - 2.5) < 1e-9:
            session.place(np.full(int(0.3 * SR), 0.25, np.float32), t=2.5)
        return None


def test_a_step_runner_without_force_is_replayed_and_keeps_audio_queued_across_the_start():
    user = np.zeros(3 * SR, np.float32)
    start = 1.6
    rnd = make_round(user, SR, start)
    r = Replayed()
    assert history_mode(r) == "replayed"
    out, session = render(r, user, SR, EventLog(record_wall=False), round_=rnd)
    s0 = round(start * SR)
    assert r.steps == 30                                  # every frame stepped, none forced
    assert np.array_equal(out[:s0], rnd.history[:s0])    # its own history output discarded
    assert np.all(out[s0:2 * SR] == 0.5)                  # queued before start_s, plays past it: kept
    assert not out[2 * SR:int(2.5 * SR)].any()
    assert np.all(out[int(2.5 * SR):int(2.8 * SR)] == 0.25) and not out[int(2.8 * SR):].any()
    assert session.round_record == {"dialogue_id": "d1", "round": 2, "start_s": 1.6, "end_s": 3.0,
                                    "history": "replayed", "model_history_s": 0.6}
    assert "forced_steps" not in session.stats


class Forced(StepRunner):
    """Teacher-forced at 8 kHz while the input is at 16 kHz: records what force and step get."""
    name = "forced-double"
    clock = "simulated"
    deterministic = True
    history = "teacher-forced"
    in_sr = 8000
    frame_ms = 80.0

    def __init__(self):
        self.calls: list[tuple[str, float]] = []
        self.gt: list[np.ndarray] = []

    def force(self, user_frame, assistant_frame, session):
        assert len(user_frame) == len(assistant_frame) == 640 and session.round["round"] == 2
        self.calls.append(("force", session.now()))
        self.gt.append(assistant_frame)
        return np.full(640, 0.7, np.float32)             # placed, then replaced before start_s

    def step(self, frame, session):
        self.calls.append(("step", session.now()))
        return np.full(640, 0.1, np.float32)


def test_force_gets_every_frame_starting_before_start_s_with_the_gt_at_in_sr():
    user = np.zeros(2 * SR, np.float32)
    start = 1.0                                           # 12.5 frames of 80 ms: frame 12 straddles it
    rnd = make_round(user, SR, start)
    r = Forced()
    out, session = render(r, user, SR, EventLog(record_wall=False), round_=rnd)
    kinds = [k for k, _ in r.calls]
    assert kinds == ["force"] * 13 + ["step"] * 12
    assert r.calls[12][1] == pytest.approx(1.04) and r.calls[13][1] == pytest.approx(1.12)
    want = fit_length(resample(rnd.history, SR, 8000), 2 * 8000)
    assert np.array_equal(np.concatenate(r.gt), want[:13 * 640])
    s0 = SR
    assert np.array_equal(out[:s0], rnd.history[:s0])
    # the forced frame straddling start_s placed 0.7 over [0.96, 1.04): its part after start_s stays
    assert np.allclose(out[s0 + 40:int(1.03 * SR)], 0.7, atol=0.02)
    assert np.allclose(out[int(1.1 * SR):int(1.9 * SR)], 0.1, atol=0.01)
    assert session.stats["forced_steps"] == 13
    assert session.round_record["model_history_s"] == pytest.approx(1.0)


def test_history_modes_a_kind_cannot_have_are_one_line_errors():
    class NoForce(StepRunner):
        name = "no-force"
        history = "teacher-forced"

    class Stream(StreamRunner):
        name = "stream"
        history = "teacher-forced"

    class Step(StepRunner):
        name = "step"
        history = "external"

    class Odd(OfflineRunner):
        name = "odd"
        history = "forced"

    for cls, words in ((NoForce, "force() of its own"), (Stream, "no StepRunner"),
                       (Step, "only an OfflineRunner"), (Odd, "unknown history mode 'forced'")):
        with pytest.raises(DuplexEvalError) as exc:
            history_mode(cls())
        assert words in str(exc.value) and "\n" not in str(exc.value)
    assert history_mode(OfflineRunner()) == "replayed" and history_mode(Forced()) == "teacher-forced"


def test_every_runner_states_its_mode_in_its_own_class():
    """Read from the source (moshi lives in its own environment): each runner class sets `history`."""
    import ast
    from pathlib import Path
    runners = Path(__file__).resolve().parents[2] / "components" / "runners"
    want = {
        ("controls/duplexeval_runner_controls/silence.py", "SilenceRunner"): "teacher-forced",
        ("controls/duplexeval_runner_controls/always_talk.py", "AlwaysTalkRunner"): "teacher-forced",
        ("controls/duplexeval_runner_controls/fixed_latency.py", "FixedLatencyRunner"): "teacher-forced",
        ("cascade/duplexeval_runner_cascade/cascade.py", "CascadeRunner"): "teacher-forced",
        ("replay/duplexeval_runner_replay/runner.py", "ReplayRunner"): "external",
        ("moshi/duplexeval_runner_moshi/runner.py", "MoshiRunner"): "replayed",
        ("moshi-ws/duplexeval_runner_moshi_ws/runner.py", "MoshiWSRunner"): "replayed",
        ("freeze-omni/duplexeval_runner_freeze_omni/runner.py", "FreezeOmniRunner"): "replayed",
        ("openai-realtime/duplexeval_runner_openai_realtime/runner.py", "OpenAIRealtimeRunner"): "replayed",
        ("gemini-live/duplexeval_runner_gemini_live/runner.py", "GeminiLiveRunner"): "replayed",
    }
    for (path, cls), mode in want.items():
        tree = ast.parse((runners / path).read_text())
        (node,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls]
        found = [st.value.value for st in node.body if isinstance(st, ast.Assign)
                 and [getattr(t, "id", None) for t in st.targets] == ["history"]]
        assert found == [mode], (cls, found)
        doc = ast.get_docstring(tree)
        assert "Multi-round samples" in doc and f'`history` "{mode}"' in doc, cls


def test_replay_is_external_its_file_kept_after_start_s_and_the_gt_before(tmp_path):
    from duplexeval_common.wavio import write_wav
    from duplexeval_runner_replay.runner import ReplayRunner
    user = np.zeros(2 * SR, np.float32)
    made = np.full(2 * SR, 0.3, np.float32)
    (tmp_path / SUBSET / "d1-r02").mkdir(parents=True)
    write_wav(tmp_path / SUBSET / "d1-r02" / "output.wav", made, SR)
    start = 0.75
    rnd = make_round(user, SR, start)
    out, session = render(ReplayRunner(tree=str(tmp_path)), user, SR, EventLog(record_wall=False),
                          key=f"{SUBSET}/d1-r02", round_=rnd)
    s0 = round(start * SR)
    assert np.array_equal(out[:s0], rnd.history[:s0])
    assert np.allclose(out[s0:], 0.3, atol=1e-4)
    assert session.round_record["history"] == "external" and session.round_record["model_history_s"] == 0.75
