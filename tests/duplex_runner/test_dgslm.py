"""The in-process `dgslm` runner (dGSLM: HuBERT + k-means, SpeechDLM, unit HiFi-GAN; fairseq).

fairseq lives in the runner's own environment, .venvs/runner-dgslm (scripts/setup-runner-venv.sh
dgslm; `make setup` calls it): every test runs that environment's python in a subprocess, and all
of them skip, saying so, when it does not exist. The model is the tiny random-weight one of
duplexeval_runner_dgslm/tiny.py (`model_dir: "tiny:<seed>"`): fairseq's own HubertModel,
SpeechDLM and CodeHiFiGANVocoder with small widths, whose audio is noise. One script (the
`probe` fixture) builds it once and drives the runner through the core's harness (`render`) on
short inputs made here, whose speech and silence are known by construction; the tests assert on
what it returns. One stage run (`duplex-runner run`) checks the records and that a bad sample fails
alone.
"""

from __future__ import annotations

import json
import re
import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pytest

from duplexeval_common.jsonio import read_json
from duplexeval_common.wavio import write_wav

ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / ".venvs" / "runner-dgslm"
PY = VENV / "bin" / "python"
CLI = VENV / "bin" / "duplex-runner"
SR = 16000
F = 320

pytestmark = pytest.mark.own_env("runner-dgslm")  # waits for it, or skips without it (the root conftest.py)

# Inputs at 16 kHz, made of silence and noise bursts (speech to the runner's level detector, -40 dBFS):
# (start_s, end_s) of each burst, total length.
BURSTS = {
    "tf": ([(0.1, 0.5), (0.7, 1.1)], 1.2),
    "tt": ([(0.2, 0.8)], 1.4),                  # prefix until 0.8 + endpoint 0.2 = 1.0 s (frame 50)
    "ui": ([(0.1, 0.5), (0.9, 1.2)], 1.8),      # context; respond at 0.7; interruption at 0.96; respond_2 at 1.4
}
ARGS = {"model_dir": "tiny:0", "threads": 1, "hubert_context": 12, "vocoder_context": 8}

PROBE = r"""
import json, sys, logging
import numpy as np
logging.disable(logging.WARNING)
from duplexeval_common.errors import DuplexEvalError
from duplexeval_runner.events import EventLog
from duplexeval_runner.harness import render
from duplexeval_runner_dgslm.runner import DGSLMRunner
from duplexeval_runner_dgslm import model as M

spec = json.loads(sys.argv[1])
SR, F = 16000, 320

def signal(bursts, total, seed):
    rng = np.random.default_rng(seed)
    x = np.zeros(int(round(total * SR)), np.float32)
    for a, b in bursts:
        i, j = int(round(a * SR)), int(round(b * SR))
        x[i:j] = 0.2 * rng.standard_normal(j - i)
    return x

def run(runner, x, task=None, key="s/0", sr=SR):
    out, session = render(runner, x, sr, EventLog(record_wall=False), key=key, task=task)
    return out, session

def rld(rle):
    return [u for u, n in rle for _ in range(n)]

res = {}
r = DGSLMRunner(seed=0, **spec["args"])
r.setup()
res["silence_unit"] = r.silence_unit
tf = signal(*spec["bursts"]["tf"], seed=1)
o1, s1 = run(r, tf, task="pause_handling")
o2, _ = run(r, tf, task="pause_handling")
res["tf_len"] = [len(tf), len(o1)]
res["same_seed_same_bytes"] = o1.tobytes() == o2.tobytes()
res["tf_stats"] = {k: s1.stats[k] for k in ("mode", "mode_from", "phases", "units", "steps")}
# the units fed on channel A are the tokenizer's units of the input, heard frame by frame
tok = M.Tokenizer(r.parts["hubert"], r.parts["hubert_layer"], False, r.parts["centroids"],
                  spec["args"]["hubert_context"], "cpu")
units = []
for k in range(len(tf) // F):
    units += tok.push(tf[k * F:(k + 1) * F])
res["tokenizer_units"] = units
res["fed_units"] = rld(s1.stats["units"]["user_fed"])
# lockstep: changing the input after frame k leaves output frames <= k as they were
k = 30
after = tf.copy(); after[(k + 1) * F:] = 0.0   # the second burst is silence instead
oa, _ = run(r, after, task="pause_handling")
res["after_k_prefix_same"] = oa[:(k + 1) * F].tobytes() == o1[:(k + 1) * F].tobytes()
res["after_k_rest_differs"] = oa[(k + 1) * F:].tobytes() != o1[(k + 1) * F:].tobytes()
before = tf.copy(); before[5 * F:7 * F] = 0.2 * np.random.default_rng(11).standard_normal(2 * F)
ob, sb = run(r, before, task="pause_handling")
res["before_prefix_same"] = ob[:5 * F].tobytes() == o1[:5 * F].tobytes()
res["before_changes_output"] = ob.tobytes() != o1.tobytes()
res["before_changes_units"] = sb.stats["units"]["model"] != s1.stats["units"]["model"]
# other seeds, other lengths and rates
r9 = DGSLMRunner(seed=9, **spec["args"])
o9, _ = run(r9, tf, task="pause_handling")
res["other_seed_differs"] = o9.tobytes() != o1.tobytes()
odd = np.concatenate([tf, tf[:500]])
oo, so = run(r, odd, task="backchannel")
res["odd_len"] = [len(odd), len(oo), so.stats["steps"]]
x24 = np.interp(np.arange(int(len(tf) * 1.5)) / 1.5, np.arange(len(tf)), tf).astype(np.float32)
o24, _ = run(r, x24, task="backchannel", sr=24000)
res["len_24k"] = [len(x24), len(o24)]
# turn taking
tt = signal(*spec["bursts"]["tt"], seed=2)
ot, st = run(r, tt, task="smooth_turn_taking")
res["tt_stats"] = {k: st.stats[k] for k in ("mode", "mode_from", "phases", "units")}
res["tt_tokenizer_units"] = []
tok.reset()
for k in range(len(tt) // F):
    res["tt_tokenizer_units"] += tok.push(tt[k * F:(k + 1) * F])
# interruption: the same dialogue with another interruption
ui = signal(*spec["bursts"]["ui"], seed=3)
ou, su = run(r, ui, task="user_interruption")
ui2 = ui.copy()
i, j = int(0.9 * SR), int(1.2 * SR)
ui2[i:j] = 0.3 * np.sin(2 * np.pi * 440 * np.arange(j - i) / SR)   # a tone: as loud, other units
ou2, su2 = run(r, ui2, task="user_interruption")
res["ui_stats"] = {k: su.stats[k] for k in ("mode", "mode_from", "phases", "units")}
res["ui2_phases"] = su2.stats["phases"]
res["ui_first_diff"] = int(np.flatnonzero(ou != ou2)[0]) if (ou != ou2).any() else None
res["ui_model_units"] = [rld(su.stats["units"]["model"]), rld(su2.stats["units"]["model"])]
tok.reset()
res["ui_tokenizer_units"] = []
for k in range(len(ui) // F):
    res["ui_tokenizer_units"] += tok.push(ui[k * F:(k + 1) * F])
# the mode: from the subset's name without a task, from the setting, a default for other tasks
res["modes"] = {}
for key, task, args in [("candor_turn_taking/1", None, {}), ("x/1", "user_interruption", {"mode": "teacher_force"}),
                        ("mtr/1", "multi_round", {}), ("nothing/1", None, {})]:
    rr = r if not args else DGSLMRunner(seed=0, **{**spec["args"], **args})
    _, ss = run(rr, tf[:3200], task=task, key=key)
    res["modes"][key] = [ss.stats["mode"], ss.stats["mode_from"]]
# too long for the SpeechDLM's positions: one line, before any step
try:
    run(r, np.zeros(62 * SR, np.float32), task="pause_handling", key="long/0")
    res["too_long"] = None
except DuplexEvalError as exc:
    res["too_long"] = str(exc)
print("RESULT " + json.dumps(res))
"""


def venv_python(code: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(PY), "-c", textwrap.dedent(code), *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


@pytest.fixture(scope="module")
def probe() -> dict:
    proc = venv_python(PROBE, json.dumps({"args": ARGS, "bursts": BURSTS}))
    (line,) = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
    return json.loads(line[len("RESULT "):])


def rld(rle):
    return [u for u, n in rle for _ in range(n)]


def frames(t: float) -> int:
    return int(round(t * SR / F))


def test_same_seed_same_bytes_and_another_seed_other_bytes(probe):
    assert probe["same_seed_same_bytes"] is True
    assert probe["other_seed_differs"] is True


def test_output_is_the_inputs_length_at_any_length_and_rate(probe):
    n_in, n_out = probe["tf_len"]
    assert n_in == n_out == 19200
    n_in, n_out, steps = probe["odd_len"]
    assert n_in == n_out == 19700 and steps == -(-19700 // F)
    assert probe["len_24k"][0] == probe["len_24k"][1] == 28800


def test_lockstep_cannot_read_ahead(probe):
    """Silencing the input after frame 30 leaves output frames 0..30 byte for byte; it changes later."""
    assert probe["after_k_prefix_same"] is True
    assert probe["after_k_rest_differs"] is True


def test_teacher_forcing_feeds_the_real_user_units(probe):
    """Channel A gets exactly the tokenizer's units of the input, one step behind (position 0 is the
    bos marker), and a change in the user audio before frame k changes what the model says after it."""
    fed = probe["fed_units"]
    assert fed[0] == -1 and fed[1:] == probe["tokenizer_units"][:len(fed) - 1]
    assert len(set(fed[1:])) > 3   # the bursts and the silence are different units
    assert probe["before_prefix_same"] is True
    assert probe["before_changes_output"] is True and probe["before_changes_units"] is True
    st = probe["tf_stats"]
    assert st["mode"] == "teacher_force" and st["mode_from"] == "task pause_handling"
    assert [p["phase"] for p in st["phases"]] == ["teacher_force"]


def test_turn_taking_prefix_then_silence_forced_on_the_user(probe):
    st = probe["tt_stats"]
    assert st["mode"] == "turn_taking" and st["mode_from"] == "task smooth_turn_taking"
    phases = [(p["phase"], p["frame"]) for p in st["phases"]]
    k = frames(0.8) + frames(0.2) - 1   # the 10th quiet frame after the burst
    assert phases == [("prefix", 0), ("respond", k)]
    sil = probe["silence_unit"]
    model = rld(st["units"]["model"])
    fed = rld(st["units"]["user_fed"])
    assert set(model[:k]) == {sil}                          # the model stream is silence in the prefix
    assert fed[1:k] == probe["tt_tokenizer_units"][:k - 1]   # the user's own units in the prefix
    assert set(fed[k:]) == {sil}                            # then silence forced on the user stream
    assert len(set(model[k:])) > 1                           # and the model sampled


def test_interruption_samples_twice(probe):
    """Pass 1 (context, then its answer, the user silent) gives the output until the interruption ends,
    whatever the interruption is; pass 2 heard the interruption and speaks after it."""
    st = probe["ui_stats"]
    assert st["mode"] == "interruption"
    phases = [(p["phase"], p["frame"]) for p in st["phases"]]
    respond, onset, end = frames(0.5) + frames(0.2) - 1, frames(0.9) + 2, frames(1.2) + frames(0.2) - 1
    assert phases == [("context", 0), ("respond", respond), ("interruption", onset), ("respond_2", end)]
    assert probe["ui2_phases"] == st["phases"]
    sil = probe["silence_unit"]
    model = rld(st["units"]["model"])
    fed = rld(st["units"]["user_fed"])
    assert set(model[:respond]) == {sil} and set(fed[respond:]) == {sil}
    p2 = rld(st["units"]["pass_2_user_fed"])
    assert len(p2) == end - onset and p2 == probe["ui_tokenizer_units"][onset - 1:end - 1]
    # the other interruption changes nothing before respond_2, and the response after it
    m1, m2 = probe["ui_model_units"]
    assert m1[:end] == m2[:end] and m1[end:] != m2[end:]
    assert probe["ui_first_diff"] is not None and probe["ui_first_diff"] >= end * F


def test_the_mode_comes_from_the_task_the_subset_or_the_setting(probe):
    assert probe["modes"] == {
        "candor_turn_taking/1": ["turn_taking", "subset name 'candor_turn_taking' (task smooth_turn_taking)"],
        "x/1": ["teacher_force", "setting mode"],
        "mtr/1": ["teacher_force", "default (task 'multi_round' has no paper variant)"],
        "nothing/1": ["teacher_force", "default (subset 'nothing' has no task)"],
    }


def test_a_sample_too_long_for_the_speech_dlm_is_one_line(probe):
    msg = probe["too_long"]
    assert msg is not None and "\n" not in msg
    m = re.match(r"runner 'dgslm': long/0: 62\.0 s is 3100 units, more than the (\d+) units \([\d.]+ s\) "
                 r"the SpeechDLM's (\d+) positions leave beside its start unit and the one predicted$", msg)
    assert m and int(m[1]) == int(m[2]) - 2 and int(m[1]) < 3100, msg


# --- weights: a folder --------------------------------------------------------------------------

FILES = ["hubert_fisher.pt", "hubert_fisher_km_500.bin", "speech_dlm_base.pt", "dict.unitA.txt", "dict.unitB.txt",
         "hifigan_vocoder", "config.json"]

CHECK = r"""
import sys, logging
logging.disable(logging.WARNING)
from duplexeval_common.errors import DuplexEvalError
from duplexeval_runner_dgslm.runner import DGSLMRunner
try:
    r = DGSLMRunner(seed=0, model_dir=sys.argv[1])
    r.setup()
    print("LOADED")
except DuplexEvalError as exc:
    print("ERROR " + str(exc))
"""


def _check(folder: Path) -> str:
    out = venv_python(CHECK, str(folder)).stdout.strip().splitlines()
    assert len(out) == 1, out
    return out[0]


def test_a_folder_missing_a_file_is_one_line_naming_it(tmp_path):
    for name in FILES:
        (tmp_path / name).write_bytes(b"x")
    (tmp_path / "speech_dlm_base.pt").unlink()
    line = _check(tmp_path)
    assert line == (f"ERROR runner 'dgslm': model_dir {tmp_path} has no speech_dlm_base.pt (the SpeechDLM checkpoint; "
                    "https://dl.fbaipublicfiles.com/textless_nlp/dgslm/checkpoints/speech_dlm/speech_dlm_base.pt)")


def test_a_checkpoint_of_another_architecture_is_one_line(tmp_path):
    """Every file present, but hubert_fisher.pt holds a vocoder-like state dict: one line naming it."""
    venv_python(r"""
import sys, torch
torch.save({"generator": {"w": torch.zeros(2)}}, sys.argv[1])
""", str(tmp_path / "hubert_fisher.pt"))
    for name in FILES[1:]:
        (tmp_path / name).write_bytes(b"not a checkpoint")
    line = _check(tmp_path)
    assert line.startswith(f"ERROR runner 'dgslm': loading {tmp_path / 'hubert_fisher.pt'} failed (")
    assert "is it the Fisher HuBERT checkpoint?" in line


# --- through the stage ------------------------------------------------------------------------

def test_the_stage_records_each_samples_mode_and_fails_only_the_bad_sample(tmp_path):
    rng = np.random.default_rng(5)
    inputs = tmp_path / "in"
    x = np.zeros(SR, np.float32)
    x[1600:8000] = 0.2 * rng.standard_normal(6400)
    for subset, audio in [("synthetic_turn_taking", x), ("synthetic_pause_handling", x[:8000]),
                          ("candor_backchannel", np.zeros(62 * SR, np.float32))]:
        d = inputs / "samples" / subset / "0"
        d.mkdir(parents=True)
        write_wav(d / "input.wav", audio, SR)
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"runner": "dgslm", "runner_args": ARGS, "seed": 0}))
    proc = subprocess.run([str(CLI), "run", "--config", str(config), "--input", str(inputs), "--output",
                           str(tmp_path / "out")], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode != 0
    failed = [ln for ln in proc.stderr.splitlines() if ln.startswith("error: candor_backchannel/0")]
    assert len(failed) == 1 and "the SpeechDLM's 3072 positions leave" in failed[0], proc.stderr[-2000:]
    for subset, mode in [("synthetic_turn_taking", "turn_taking"), ("synthetic_pause_handling", "teacher_force")]:
        rec = read_json(tmp_path / "out" / "samples" / subset / "0" / "runner.json")
        assert rec["runner"] == "dgslm" and rec["clock"] == "lockstep" and rec["deterministic"] is True
        assert rec["stats"]["mode"] == mode and rec["profile"]["name"] == "dgslm"
        assert rec["models"]["dgslm"]["seed"] == 0 and rec["models"]["dgslm"]["version"] == "0.12.3.1"
        assert rec["settings"]["torch"].startswith("2.13.0") and rec["settings"]["temperature"] == 1.0
    assert not (tmp_path / "out" / "samples" / "candor_backchannel" / "0" / "output.wav").exists()
