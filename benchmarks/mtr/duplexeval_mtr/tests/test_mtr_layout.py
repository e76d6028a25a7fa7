"""mtr_layout: the pure timeline of an MTR dialogue, checked by construction with fixed durations."""

from __future__ import annotations

import copy
import random
from pathlib import Path

import pytest

from duplexeval_mtr.dataset import layout as L
from duplexeval_mtr.dataset import script as M
from duplexeval_tts import voices as voicemix

SR = 16000
EPS = 1.5 / SR   # a fraction of a length is placed to the nearest sample


def script(set_: str | None, task: str = "features") -> M.MtrScript:
    return M.MtrScript("x_" + task, task, set_, Path("x.json"), "0" * 64, [], M.DEFAULT_VOICES, -10.0, 0)


def rnd(k: int, feats: list, **kw) -> dict:
    r = {"features": feats, "user": f"user turn number {k} has seven words", "response": f"response {k}",
         "reply_gap_s": 0.5}
    r |= {"interrupt_at": 0.3} if feats[0] == "I" else {"gap_s": 0.6}
    if "P" in feats:
        r["pause"] = {"after_word": 3, "length_s": 1.5}
    if "B" in feats:
        r["background"] = {"text": "dinner is ready", "at": 0.4}
    return r | kw


def fixed(dialogue: dict, model: float = 4.0, user: float = 2.0, bg: float = 1.0, opener: float = 2.0) -> dict:
    out = {}
    for p in L.pieces(dialogue):
        if p.key == "opener":
            out[p.key] = opener
        elif p.voice == "model":
            out[p.key] = model
        elif p.voice == "background":
            out[p.key] = bg
        else:
            out[p.key] = user / 2 if p.key.endswith((".a", ".b")) else user
    return out


def generated(set_: str, seed: int) -> dict:
    """A dialogue of `set_` with the generator's random draws (benchmarks/mtr/datasets/mtr-synth/generate.py)."""
    import importlib.util
    path = Path(__file__).resolve().parents[2] / "datasets" / "mtr-synth" / "generate.py"
    spec = importlib.util.spec_from_file_location("mtr_generate", path)
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    raw = gen.feature_dialogue(random.Random(seed), f"d{seed}", set_, False)
    return M.parse_dialogue(script(set_), raw)


def check_invariants(d: dict, lay: L.Layout, durations: dict) -> None:
    by = {p.key: p for p in lay.placements}
    rounds = d["rounds"]
    turns = []
    for k, r in enumerate(rounds, 1):
        rk = f"r{k:02d}"
        keys = [f"{rk}.user.a", f"{rk}.user.b"] if "pause" in r else [f"{rk}.user"]
        turns.append((by[keys[0]].start, by[keys[-1]].end))
    for k, r in enumerate(rounds, 1):
        rk, w = f"r{k:02d}", lay.windows[k - 1]
        f = w.fields()
        ts = f["encoding"]["timestamps"]
        prev = by["opener" if k == 1 else f"r{k - 1:02d}.model"]
        model = by[f"{rk}.model"]
        # every timestamp is a sample index / SR
        for v in ts.values():
            assert abs(round(v * SR) - v * SR) < 0.01
        assert (ts["user_start"], ts["user_end"]) == turns[k - 1]
        assert (ts["model_start"], ts["model_end"]) == (model.start, model.end)
        assert model.start > ts["user_end"]
        if r["features"][0] == "I":
            full = durations[prev.key]
            assert prev.start + full / 4 - EPS <= ts["interruption_start"] <= prev.start + full / 2 + EPS
            assert (ts["interruption_start"], ts["interruption_end"]) == turns[k - 1]
            # the interrupted response stops 0.5 s after the interruption starts (unless it ended)
            assert prev.end == pytest.approx(min(prev.start + full, ts["interruption_start"] + L.CUT_AFTER_S),
                                             abs=2e-6)
        else:
            assert "interruption_start" not in ts
            assert ts["user_start"] >= prev.end
        if "P" in r["features"]:
            assert ts["user_start"] < ts["pause_start"] < ts["pause_end"] < ts["user_end"]
            assert ts["pause_end"] - ts["pause_start"] == pytest.approx(r["pause"]["length_s"], abs=2e-6)
            assert [u["text"] for u in f["user_lines"]] == list(L.split_pause(r["user"], r["pause"]["after_word"]))
        else:
            assert "pause_start" not in ts and len(f["user_lines"]) == 1
        if "B" in r["features"]:
            full = durations[model.key]
            limit = model.end - L.BG_END_MARGIN_S
            if k < len(rounds) and rounds[k]["features"][0] == "I":
                limit = min(limit, turns[k][0] - 0.5)
                assert ts["background_end"] <= turns[k][0] - 0.5 + 2e-6
            assert ts["background_start"] <= model.start + full / 2 + EPS
            if ts["background_start"] < model.start + full / 4 - EPS:   # too long to start at 1/4:
                assert ts["background_end"] == pytest.approx(limit, abs=2e-6)   # as late as it fits
            assert model.start <= ts["background_start"] < ts["background_end"] <= model.end - L.BG_END_MARGIN_S + 2e-6
        else:
            assert "background_start" not in ts
        # windows
        assert f["start_s"] == turns[k - 1][0]
        if k < len(rounds):
            assert f["end_s"] == turns[k][1] and f["muted"] == [list(turns[k])]
        else:
            assert f["end_s"] == lay.duration_s == pytest.approx(model.end + L.TAIL_S, abs=2e-6)
            assert f["muted"] == []
        # history: every GT line (not background) that starts before start_s, sorted
        hist = f["history"]
        assert [h["start"] for h in hist] == sorted(h["start"] for h in hist)
        assert all(h["start"] < f["start_s"] for h in hist)
        assert len([h for h in hist if h["role"] == "user"]) == k - 1
        assert len([h for h in hist if h["role"] == "assistant"]) == k    # opener + responses 1..k-1
        assert "dinner is ready" not in {h["text"] for h in hist}


@pytest.mark.parametrize("set_", ["smooth", "interruption", "pause", "background", "S", "S+I", "S+I+P", "S+I+P+B"])
def test_generated_sets_lay_out_with_the_invariants(set_):
    for seed in range(6):
        d = generated(set_, seed)
        dur = fixed(d, model=6.0, user=2.4, bg=1.0)
        lay = L.layout(d, dur, SR)
        check_invariants(d, lay, dur)
        feats = [r["features"] for r in d["rounds"]]
        assert len(feats) == 10
        if "+" in set_:   # per pair exactly one I; one P (S+I+P...); one B (S+I+P+B)
            for a in range(0, 10, 2):
                pair = feats[a:a + 2]
                assert sum(f[0] == "I" for f in pair) == 1
                assert sum("P" in f for f in pair) == (1 if "P" in set_ else 0)
                assert sum("B" in f for f in pair) == (1 if "B" in set_ else 0)


def test_background_moves_earlier_to_end_before_the_response_and_the_next_interruption():
    d = M.parse_dialogue(script("S+I+P+B"), {"id": "x", "opener": "hello there", "rounds": [
        rnd(1, ["S", "P", "B"], background={"text": "dinner is ready", "at": 0.5}),
        rnd(2, ["I"], interrupt_at=0.5)]})
    dur = fixed(d, model=8.0, bg=1.2)
    lay = L.layout(d, dur, SR)
    check_invariants(d, lay, dur)
    ts = lay.windows[0].encoding["timestamps"]
    # at 0.5 it would end at 4 + 1.2 s > the interruption (at 4 s) - 0.5 s: it is moved earlier
    assert ts["background_end"] == pytest.approx(lay.windows[1].encoding["timestamps"]["interruption_start"] - 0.5)
    assert ts["background_start"] - ts["model_start"] >= 8.0 / 4 - EPS


def test_a_background_too_long_to_start_at_a_quarter_starts_as_late_as_it_fits():
    """mtr-synth's background-010 round 7: a 2.14 s line inside a 3.00 s response cannot start at
    1/4 of it and end 0.2 s before its end; it starts at 0.66 s, inside the response."""
    d = M.parse_dialogue(script("background"), {"id": "x", "opener": "hello there", "rounds": [
        rnd(1, ["B"], background={"text": "next stop, central station", "at": 0.37})]})
    dur = fixed(d, model=3.0, bg=2.14)
    lay = L.layout(d, dur, SR)
    check_invariants(d, lay, dur)
    ts = lay.windows[0].encoding["timestamps"]
    assert ts["background_start"] - ts["model_start"] == pytest.approx(3.0 - 0.2 - 2.14, abs=2e-6)
    assert ts["background_end"] == pytest.approx(ts["model_start"] + 3.0 - L.BG_END_MARGIN_S, abs=2e-6)


def test_a_background_that_cannot_fit_is_one_layout_error():
    d = M.parse_dialogue(script("background"), {"id": "x", "opener": "hello there", "rounds": [rnd(1, ["B"])]})
    with pytest.raises(L.LayoutError, match="round 1: the background line .* does not fit inside the response"):
        L.layout(d, fixed(d, model=2.0, bg=1.9), SR)
    lay = L.layout(d, fixed(d, model=2.0, bg=1.8), SR)   # exactly from the response's start
    ts = lay.windows[0].encoding["timestamps"]
    assert ts["background_start"] == pytest.approx(ts["model_start"], abs=2e-6)


def test_missing_or_bad_duration():
    d = M.parse_dialogue(script("smooth"), {"id": "x", "opener": "hello there", "rounds": [rnd(1, ["S"])]})
    dur = fixed(d)
    for bad in (None, 0, -1.0, float("nan"), True):
        with pytest.raises(L.LayoutError, match="piece r01.model"):
            L.layout(d, dur | {"r01.model": bad}, SR)


def test_layout_is_pure():
    d = generated("S+I+P+B", 3)
    dur = fixed(d)
    before, dur_before = copy.deepcopy(d), dict(dur)
    a, b = L.layout(d, dur, SR), L.layout(d, dur, SR)
    assert a == b and d == before and dur == dur_before
    # modelled durations need not lie on the sample grid: times still come back as sample indexes
    lay = L.layout(d, {k: v + 1e-5 for k, v in dur.items()}, SR)
    for p in lay.placements:
        assert round(p.start * SR) == p.start_n and round(p.end * SR) == p.end_n


def test_opener_interrupted_in_round_one():
    d = M.parse_dialogue(script("interruption"), {"id": "x", "opener": "hi", "rounds": [
        rnd(1, ["I"], interrupt_at=0.25), rnd(2, ["I"], interrupt_at=0.5)]})
    dur = fixed(d, opener=4.0)
    lay = L.layout(d, dur, SR)
    check_invariants(d, lay, dur)
    assert lay.windows[0].encoding["timestamps"]["interruption_start"] == pytest.approx(L.LEAD_S + 1.0)
    assert lay.windows[0].history[0]["end"] == pytest.approx(L.LEAD_S + 1.5)   # the cut opener


def dq(lines: list) -> dict:
    return M.parse_dialogue(script(None, "dialogue_quality"), {"id": "dq", "lines": lines})


def test_dialogue_quality_layout():
    d = dq([{"role": "user", "text": "one", "gap_s": 0.5},
            {"role": "assistant", "text": "two", "gap_s": -0.2, "backchannels": [{"text": "mm-hm", "at": 0.5}]},
            {"role": "user", "text": "three", "gap_s": 0.4},
            {"role": "assistant", "text": "four", "gap_s": 0.3}])
    dur = {"l00": 2.0, "l01": 4.0, "l01.bc0": 0.5, "l02": 1.5, "l03": 2.0}
    lay = L.layout(d, dur, SR)
    by = {p.key: p for p in lay.placements}
    assert (by["l00"].start, by["l00"].end) == (0.5, 2.5)
    assert by["l01"].start == pytest.approx(2.3)              # starts 0.2 s before the user ends
    assert (by["l01.bc0"].start, by["l01.bc0"].end) == (pytest.approx(4.3), pytest.approx(4.8))
    assert by["l01.bc0"].backchannel and by["l01.bc0"].channel == "user"
    assert by["l02"].start == pytest.approx(6.7) and by["l03"].start == pytest.approx(8.5)
    assert lay.duration_s == pytest.approx(10.5 + L.TAIL_S) and lay.windows == []


def test_dialogue_quality_backchannel_that_cannot_fit():
    d = dq([{"role": "user", "text": "one", "gap_s": 0.5},
            {"role": "assistant", "text": "two", "gap_s": 0.3, "backchannels": [{"text": "mm-hm", "at": 0.5}]}])
    with pytest.raises(L.LayoutError, match=r"lines\[1\].backchannels\[0\]"):
        L.layout(d, {"l00": 2.0, "l01": 0.6, "l01.bc0": 0.5}, SR)


def test_shipped_scripts_lay_out_with_modelled_durations():
    """Every dialogue of mtr-synth and mtr-mini fits with durations modelled from word counts."""
    root = Path(__file__).resolve().parents[2] / "datasets"
    n = 0
    for folder in ("mtr-synth", "mtr-mini"):
        for path in sorted((root / folder).glob("*.json")):
            s = M.load(path, voicemix.parse_specs)
            for raw in s.dialogues:
                d = M.parse_dialogue(s, raw)
                rate = {"user": 0.2, "model": 0.28, "background": 0.3}
                dur = {p.key: 0.3 + rate[p.voice] * len(p.text.split()) for p in L.pieces(d)}
                lay = L.layout(d, dur, SR)
                if "rounds" in d:
                    check_invariants(d, lay, {k: round(v * SR) / SR for k, v in dur.items()})
                n += 1
    assert n == 611
