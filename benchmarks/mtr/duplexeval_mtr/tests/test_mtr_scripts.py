"""The mtr-script/1 format, the shipped mtr-mini / mtr-synth scripts and their generator."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from duplexeval_common.errors import DuplexEvalError
from duplexeval_mtr.dataset import script as M
from duplexeval_mtr.schemas import SCHEMAS
from duplexeval_tts import voices as voicemix

REPO = Path(__file__).resolve().parents[4]
GENERATOR = REPO / "benchmarks" / "mtr" / "datasets" / "mtr-synth" / "generate.py"
FEATURES = ["background_features", "interruption_features", "mix_s_features", "mix_si_features",
            "mix_sip_features", "mix_sipb_features", "pause_features", "smooth_features"]


def gen():
    spec = importlib.util.spec_from_file_location("mtr_generate", GENERATOR)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def load_all(folder: str) -> dict[str, M.MtrScript]:
    files = sorted((REPO / "benchmarks" / "mtr" / "datasets" / folder).glob("*.json"))
    return {p.stem: M.load(p, voicemix.parse_specs) for p in files}


def test_generator_check_passes_and_detects_a_change(tmp_path):
    r = subprocess.run([sys.executable, str(GENERATOR), "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    for name in ("synth", "mini"):
        (tmp_path / name).mkdir()
    r = subprocess.run([sys.executable, str(GENERATOR), "--synth-out", str(tmp_path / "synth"),
                        "--mini-out", str(tmp_path / "mini")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    p = tmp_path / "mini" / "smooth_safety.json"
    p.write_text(p.read_text().replace("I'm", "I am", 1))
    r = subprocess.run([sys.executable, str(GENERATOR), "--check", "--synth-out", str(tmp_path / "synth"),
                        "--mini-out", str(tmp_path / "mini")], capture_output=True, text=True)
    assert r.returncode == 1 and "mtr-mini" not in r.stderr and "mini/smooth_safety.json" in r.stderr


def test_synth_sizes_and_sets():
    scripts = load_all("mtr-synth")
    assert sorted(scripts) == sorted(FEATURES + ["interruption_instruction_following", "interruption_safety",
                                                 "smooth_instruction_following", "smooth_safety",
                                                 "synthetic_dialogue_quality"])
    for name, s in scripts.items():
        assert s.set == M.SUBSET_SETS[name]
        expected = 25 if s.task == "features" else 200 if s.task == "dialogue_quality" else 50
        assert len(s.dialogues) == expected, name
        for raw in s.dialogues:
            d = M.parse_dialogue(s, raw)
            if s.task == "dialogue_quality":
                users = [x for x in d["lines"] if x["role"] == "user"]
                assert 6 <= len(users) <= 10
                gaps = [x["gap_s"] for x in d["lines"][1:]]
                assert all(g == -0.2 or 0.2 <= g <= 1.0 for g in gaps)
            else:
                assert len(d["rounds"]) == 10
                feats = [r["features"] for r in d["rounds"]]
                # a background round is never followed by an interruption (generate.mix_features)
                assert not any("B" in feats[k] and feats[k + 1][0] == "I" for k in range(9))


def test_mini_is_small():
    scripts = load_all("mtr-mini")
    assert sorted(scripts) == sorted(FEATURES + ["smooth_instruction_following", "smooth_safety",
                                                 "synthetic_dialogue_quality"])
    for name, s in scripts.items():
        assert len(s.dialogues) == 1
        d = M.parse_dialogue(s, s.dialogues[0])
        if s.task == "dialogue_quality":
            assert len([x for x in d["lines"] if x["role"] == "user"]) == 6
            continue
        for r in d["rounds"]:
            # an interrupting turn may open with a cut-in of up to 12 words (generate.interrupt_turn)
            assert len(r["user"].split()) <= (24 if r["features"][0] == "I" else 14)
            assert len(r["response"].split()) <= 13


def test_interrupting_turns_outlast_tau():
    """Every interrupting user turn of both datasets has at least MIN_INTERRUPT_WORDS words, so it
    lasts well over the paper's tau = 2 s and the interruption window [start + tau, end] is not
    empty (built mtr-mini: at least 4.3 s; test_mtr_eval.py)."""
    n = 0
    for folder in ("mtr-mini", "mtr-synth"):
        for sc in load_all(folder).values():
            for d in sc.dialogues:
                for r in d.get("rounds", []):
                    if r["features"][0] == "I":
                        n += 1
                        assert len(r["user"].split()) >= gen().MIN_INTERRUPT_WORDS, (sc.subset, d["id"], r["user"])
    assert n > 1000


def test_content_pools():
    g = gen()
    questions = [q for q, _ in g.instructions()]
    assert len(set(questions)) == len(questions) >= 150
    assert len(set(g.SAFETY_REQUESTS)) == len(g.SAFETY_REQUESTS) >= 80
    assert sum(len(v) for v in g.TOPICS.values()) >= 90
    assert g.words(96) == "ninety-six" and g.words(250) == "two hundred and fifty"
    assert ("What is twelve times eight?", "Twelve times eight is ninety-six.") in g.instructions()


def test_round_sample_schema_carries_the_encoding_round():
    # the package's own schemas (duplexeval_mtr/schemas/), once schemas/mtr-*.schema.json
    folder = Path(SCHEMAS.folder)
    mine = json.loads((folder / "round-sample.schema.json").read_text())
    enc = json.loads((folder / "encoding.schema.json").read_text())
    assert mine["$defs"]["encoding_round"] == enc["$defs"]["round"]


def script(tmp_path: Path, name: str, doc: dict) -> Path:
    p = tmp_path / f"{name}.json"
    p.write_text(json.dumps(doc))
    return p


ROUND = {"features": ["S"], "user": "What is two plus two?", "response": "Four.", "gap_s": 0.5, "reply_gap_s": 0.4}


@pytest.mark.parametrize("change, problem", [
    ({"format": "fdb-script/2"}, "format must be 'mtr-script/1'"),
    ({"extra": 1}, "unknown key"),
    ({"subset": "other_safety"}, "differs from the file name"),
    ({"set": "pause"}, "set must be one of smooth, interruption"),
    ({"dialogues": []}, "'dialogues' must be a non-empty list"),
    ({"voices": {"listener": {"engine": "flite"}}}, "voices: expected an object"),
    ({"background_gain_db": 3}, "background_gain_db"),
])
def test_file_level_problems(tmp_path, change, problem):
    doc = {"format": "mtr-script/1", "dialogues": [{"id": "a", "opener": "Hi.", "rounds": [ROUND]}]} | change
    with pytest.raises(DuplexEvalError, match=problem):
        M.load(script(tmp_path, "smooth_safety", doc), voicemix.parse_specs)


@pytest.mark.parametrize("rnd, problem", [
    ({**ROUND, "features": ["I"]}, "missing interrupt_at"),
    ({**ROUND, "features": ["P", "S"]}, "features must be"),
    ({**ROUND, "gap_s": 0}, "gap_s must be a number in"),
    ({**ROUND, "user": " "}, "user must be non-empty text"),
    ({k: v for k, v in ROUND.items() if k != "response"}, "missing response"),
])
def test_entry_problems_name_the_round(tmp_path, rnd, problem):
    s = M.load(script(tmp_path, "smooth_safety", {"format": "mtr-script/1",
                                                  "dialogues": [{"id": "a", "opener": "Hi.", "rounds": [rnd]}]}),
               voicemix.parse_specs)
    with pytest.raises(ValueError, match=problem) as err:
        M.parse_dialogue(s, s.dialogues[0])
    assert "\n" not in str(err.value)


def test_pause_and_background_ranges():
    base = {**ROUND, "user": "one two three four"}
    for extra, problem in (({"features": ["S", "P"], "pause": {"after_word": 4, "length_s": 1.5}}, "after_word"),
                           ({"features": ["S", "P"], "pause": {"after_word": 2, "length_s": 2.5}}, "length_s"),
                           ({"features": ["S", "B"], "background": {"text": "x", "at": 0.6}}, "background.at")):
        with pytest.raises(ValueError, match=problem):
            M._parse_round(base | extra, 1)
    with pytest.raises(ValueError, match="exactly one I round per pair"):
        M.check_set("S+I+P+B", [["S", "P", "B"], ["S"]])
    M.check_set("S+I+P+B", [["I", "P"], ["S", "B"]])
