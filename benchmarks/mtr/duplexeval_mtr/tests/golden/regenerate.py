"""Regenerate benchmarks/mtr/duplexeval_mtr/tests/golden/golden.json: run the released MTR-DuplexBench evaluation functions
on the constructed fixtures below and record what they return.

    python benchmarks/mtr/duplexeval_mtr/tests/golden/regenerate.py /path/to/MTR-DuplexBench-checkout [--out FILE]

The checkout must be ZhangHe0918/MTR-DuplexBench at commit 6d7c125 (its Eval/*.py are imported as
they are: pure Python, no network, no GPU). Eval/eval_single_scenario_pause_handling.py fails on
import (it imports `calculate_tor`, which eval_1_scenario.py does not define); before importing it
this script binds `eval_1_scenario.calculate_tor` to `check_if_speak_at_the_same_time`, the rule
the pause module needs (the function's own code then runs unchanged). eval_4_scenarios and
eval_single_scenario_background get client=None (they never use it). The functions' prints are
discarded. The output is canonical JSON (sorted keys), so a rerun writes the same bytes.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import subprocess
import sys
from pathlib import Path

COMMIT = "6d7c125"
HERE = Path(__file__).resolve().parent


def W(start, end, text="w"):
    return {"start": start, "end": end, "text": text}


def S(start, end, words, text=None):
    """A segment; its text defaults to its words' texts joined."""
    return {"start": start, "end": end, "words": words,
            "text": text if text is not None else " ".join(w["text"] for w in words)}


def run_of(start, n, dur=0.3, gap=0.1, text="word"):
    """n words from `start`, each `dur` long, `gap` apart (times rounded to 1 ms)."""
    out, t = [], start
    for _ in range(n):
        out.append(W(round(t, 3), round(t + dur, 3), text))
        t += dur + gap
    return out


SMOOTH = {"user_start": 1.0, "user_end": 5.0, "model_start": 5.0, "model_end": 12.0}
INTER = {"interruption_start": 10.0, "interruption_end": 14.0, "model_start": 14.0, "model_end": 20.0,
         "user_start": 1.0, "user_end": 5.0}
PAUSE = {"user_start": 1.0, "user_end": 8.0, "pause_start": 3.0, "pause_end": 5.0, "model_start": 8.0,
         "model_end": 14.0}
BG = {"user_start": 1.0, "user_end": 5.0, "model_start": 5.0, "model_end": 15.0,
      "background_start": 8.0, "background_end": 10.0}
REPLY = S(5.5, 9.5, run_of(5.5, 10))  # a 4 s reply after the user's turn


def cases() -> list[dict]:
    c = []

    def speak(name, segs, a, b):
        c.append({"name": name, "call": "check_if_speak_at_the_same_time", "segments": segs,
                  "window": [a, b]})

    # speak(): duration threshold 1.0 s (>=), word count > 3, per segment, words fully inside
    speak("speak/one-word-0.99s", [S(2.0, 2.99, [W(2.0, 2.99)])], 1.0, 5.0)
    speak("speak/one-word-1.00s", [S(2.0, 3.0, [W(2.0, 3.0)])], 1.0, 5.0)
    speak("speak/three-short-words", [S(2.0, 2.9, run_of(2.0, 3, 0.2, 0.1))], 1.0, 5.0)
    speak("speak/four-short-words", [S(2.0, 3.2, run_of(2.0, 4, 0.2, 0.1))], 1.0, 5.0)
    speak("speak/word-crossing-end", [S(4.5, 6.0, [W(4.5, 5.5)])], 1.0, 5.0)
    speak("speak/word-ending-at-end", [S(4.0, 5.0, [W(4.0, 5.0)])], 1.0, 5.0)
    speak("speak/two-segments-0.6s-each", [S(1.5, 2.1, [W(1.5, 2.1)]), S(3.0, 3.6, [W(3.0, 3.6)])], 1.0, 5.0)
    speak("speak/segment-touching-start", [S(0.0, 1.0, [W(0.0, 1.0)])], 1.0, 5.0)
    speak("speak/no-segments", [], 1.0, 5.0)
    speak("speak/segment-without-words", [S(2.0, 4.0, [], "hello there")], 1.0, 5.0)

    def ipu(name, segs, a, b):
        c.append({"name": name, "call": "check_time_range_in_ipu", "segments": segs, "window": [a, b]})

    long_seg = S(5.0, 12.0, run_of(5.0, 18))
    ipu("ipu/fully-inside", [long_seg], 8.3, 10.0)
    ipu("ipu/partly-outside", [long_seg], 10.3, 12.5)
    ipu("ipu/fully-outside", [long_seg], 13.0, 14.0)
    ipu("ipu/end-within-tolerance", [S(5.0, 10.1, run_of(5.0, 13))], 8.3, 10.0)
    ipu("ipu/gap-2.0s", [S(5.0, 12.0, [W(5.0, 8.0), W(10.0, 12.0)])], 7.5, 10.5)
    ipu("ipu/gap-2.5s", [S(5.0, 12.0, [W(5.0, 7.5), W(10.0, 12.0)])], 7.5, 10.5)
    ipu("ipu/first-word-after-start", [S(5.0, 12.0, [W(8.5, 12.0)])], 8.3, 10.0)
    ipu("ipu/split-over-two-segments", [S(5.0, 9.0, run_of(5.0, 10)), S(9.0, 12.0, run_of(9.0, 7))],
        8.3, 10.0)
    ipu("ipu/empty-range", [long_seg], 9.0, 9.0)

    for name, segs in (("latency/reply-after", [REPLY]),
                       ("latency/overlapping-start", [S(4.0, 7.0, run_of(4.0, 7))]),
                       ("latency/ended-before", [S(2.0, 4.0, run_of(2.0, 5))]),
                       ("latency/earliest-start-wins", [S(8.0, 9.0, run_of(8.0, 2)), S(6.0, 7.5, run_of(6.0, 3))])):
        c.append({"name": name, "call": "calculate_latency", "segments": segs, "timestamps": SMOOTH})
    for name, segs in (("frequency/mixed", [S(5.0, 5.4, [W(5.0, 5.4, "yeah")], "Yeah."),
                                            S(6.0, 8.9, [W(6.0, 7.0, "uh"), W(7.0, 8.9, "huh")], "uh, huh!"),
                                            S(9.0, 12.0, run_of(9.0, 7))]),
                       ("frequency/three-words", [S(5.0, 6.0, run_of(5.0, 3, 0.2, 0.1), "a b c")]),
                       ("frequency/3.0s-two-words", [S(5.0, 8.0, [W(5.0, 6.0), W(6.5, 8.0)], "oh well")]),
                       ("frequency/none", [])):
        c.append({"name": name, "call": "calculate_frequency", "segments": segs})

    def ev(name, call, scenario, features, ts, segs):
        c.append({"name": name, "call": call, "scenario": scenario, "features": features,
                  "timestamps": ts, "segments": segs})

    st = "smooth-turntaking"
    ev("smooth/success", "eval_1_scenario", st, ["S"], SMOOTH, [REPLY])
    ev("smooth/silent", "eval_1_scenario", st, ["S"], SMOOTH, [])
    ev("smooth/backchannel-0.99s-during-user", "eval_1_scenario", st, ["S"], SMOOTH,
       [S(2.0, 2.99, [W(2.0, 2.99, "yeah")]), REPLY])
    ev("smooth/one-word-1.00s-during-user", "eval_1_scenario", st, ["S"], SMOOTH,
       [S(2.0, 3.0, [W(2.0, 3.0, "yeah")]), REPLY])
    ev("smooth/two-words-0.5s-during-user", "eval_1_scenario", st, ["S"], SMOOTH,
       [S(2.0, 2.5, [W(2.0, 2.2, "oh"), W(2.3, 2.5, "yes")]), REPLY])
    ev("smooth/four-words-during-user", "eval_1_scenario", st, ["S"], SMOOTH,
       [S(2.0, 3.2, run_of(2.0, 4, 0.2, 0.1)), REPLY])
    ev("smooth/short-reply-0.9s", "eval_1_scenario", st, ["S"], SMOOTH, [S(6.0, 6.9, [W(6.0, 6.9, "sure")])])
    ev("smooth/model-start-0.0", "eval_1_scenario", st, ["S"], {**SMOOTH, "user_start": 0.0, "model_start": 0.0}, [REPLY])
    ev("smooth/user-start-0.0", "eval_1_scenario", st, ["S"], {**SMOOTH, "user_start": 0.0}, [REPLY])
    ev("smooth/talking-through-end", "eval_1_scenario", st, ["S"], SMOOTH, [S(3.0, 9.0, run_of(3.0, 15))])

    it = "interruption"
    stop = S(14.6, 18.6, run_of(14.6, 10))
    ev("interruption/stops-and-replies", "eval_2_scenarios", it, ["I"], INTER, [S(6.0, 10.0, run_of(6.0, 10)), stop])
    ev("interruption/keeps-talking-1.5s", "eval_2_scenarios", it, ["I"], INTER,
       [S(6.0, 11.5, run_of(6.0, 13) + [W(11.2, 11.5)]), stop])
    ev("interruption/talks-0.99s-after-cut-in", "eval_2_scenarios", it, ["I"], INTER,
       [S(6.0, 10.99, run_of(6.0, 12) + [W(10.8, 10.99)]), stop])
    ev("interruption/talks-in-tau-edge", "eval_2_scenarios", it, ["I"], INTER,
       [S(6.0, 10.0, run_of(6.0, 10)), S(10.5, 12.0, [W(10.5, 12.0)]), stop])
    ev("interruption/talks-after-tau", "eval_2_scenarios", it, ["I"], INTER,
       [S(6.0, 10.0, run_of(6.0, 10)), S(12.5, 13.8, [W(12.5, 13.8)]), stop])
    ev("interruption/no-reply", "eval_2_scenarios", it, ["I"], INTER, [S(6.0, 10.0, run_of(6.0, 10))])
    ev("interruption/as-smooth-via-eval_2", "eval_2_scenarios", st, ["S"], SMOOTH, [REPLY])

    ps = "pause-handling"
    reply8 = S(8.4, 12.4, run_of(8.4, 10))
    ev("pause/silent-in-pause", "eval_single_scenario_pause", ps, ["P"], PAUSE, [reply8])
    ev("pause/talks-in-pause", "eval_single_scenario_pause", ps, ["P"], PAUSE, [S(3.5, 5.0, run_of(3.5, 4)), reply8])
    ev("pause/talks-in-code-tail", "eval_single_scenario_pause", ps, ["P"], PAUSE,
       [S(5.2, 6.0, [W(5.2, 6.0, "okay"), W(5.3, 5.9, "so")]), reply8])
    ev("pause/backchannel-in-pause", "eval_single_scenario_pause", ps, ["P"], PAUSE, [S(3.5, 4.0, [W(3.5, 4.0, "mm")]), reply8])
    ev("pause/no-pause-given", "eval_single_scenario_pause", ps, ["P"],
       {k: v for k, v in PAUSE.items() if not k.startswith("pause")}, [S(3.5, 5.0, run_of(3.5, 4)), reply8])
    ev("pause/pause-0.0-given", "eval_single_scenario_pause", ps, ["P"],
       {**PAUSE, "pause_start": 0.0, "pause_end": 0.0}, [reply8])

    bgs = "smooth-turntaking_background_pause-handling"  # reaches eval_3's eval_1 branch (see docs)
    bg_reply = S(5.4, 12.0, run_of(5.4, 17))
    ev("background/kept-talking", "eval_single_scenario_background", bgs, ["B"], BG, [bg_reply])
    ev("background/stopped-at-background", "eval_single_scenario_background", bgs, ["B"], BG,
       [S(5.4, 8.5, run_of(5.4, 8)), S(11.0, 13.0, run_of(11.0, 5))])
    ev("background/ends-before-background-end", "eval_single_scenario_background", bgs, ["B"], BG,
       [S(5.4, 9.8, run_of(5.4, 11))])
    ev("background/silent", "eval_single_scenario_background", bgs, ["B"], BG, [])
    ev("background/starts-after-background", "eval_single_scenario_background", bgs, ["B"], BG,
       [S(10.5, 14.0, run_of(10.5, 9))])

    ev("mix/S+P", "eval_3_scenarios", "smooth-turntaking_pause-handling", ["S", "P"],
       {**SMOOTH, "pause_start": 2.0, "pause_end": 3.0}, [S(2.2, 2.6, [W(2.2, 2.6, "mm")]), REPLY])
    ev("mix/I+P", "eval_3_scenarios", "interruption_pause-handling", ["I", "P"],
       {**INTER, "pause_start": 11.0, "pause_end": 12.0}, [S(6.0, 10.0, run_of(6.0, 10)), stop])
    ev("mix/S+P+B-kept", "eval_4_scenarios", "smooth-turntaking_background_pause-handling", ["S", "P", "B"],
       {**BG, "pause_start": 2.0, "pause_end": 3.0}, [bg_reply])
    ev("mix/S+P+B-stopped", "eval_4_scenarios", "smooth-turntaking_background_pause-handling", ["S", "P", "B"],
       {**BG, "pause_start": 2.0, "pause_end": 3.0}, [S(5.4, 8.5, run_of(5.4, 8)), S(11.0, 13.0, run_of(11.0, 5))])
    ev("mix/I+P+B-kept", "eval_4_scenarios", "interruption_background_pause-handling", ["I", "P", "B"],
       {**INTER, "pause_start": 11.0, "pause_end": 12.0, "background_start": 15.0, "background_end": 17.0},
       [S(6.0, 10.0, run_of(6.0, 10)), S(14.5, 19.5, run_of(14.5, 13))])
    ev("mix/I+P+B-stopped", "eval_4_scenarios", "interruption_background_pause-handling", ["I", "P", "B"],
       {**INTER, "pause_start": 11.0, "pause_end": 12.0, "background_start": 15.0, "background_end": 17.0},
       [S(6.0, 10.0, run_of(6.0, 10)), S(14.5, 16.0, run_of(14.5, 4))])
    ev("mix/I+P-via-eval_4", "eval_4_scenarios", "interruption_pause-handling", ["I", "P"],
       {**INTER, "pause_start": 11.0, "pause_end": 12.0}, [S(6.0, 10.0, run_of(6.0, 10)), stop])
    ev("mix/S+P-via-eval_4", "eval_4_scenarios", "smooth-turntaking_pause-handling", ["S", "P"],
       {**SMOOTH, "pause_start": 2.0, "pause_end": 3.0}, [REPLY])
    return c


def upstream(segments: list[dict]) -> list[dict]:
    """The released functions' segment shape: {"timestamp": (start, end), "text", "words"}."""
    return [{"timestamp": (s["start"], s["end"]), "text": s["text"], "words": s["words"]} for s in segments]


def load(checkout: Path) -> dict:
    sys.path.insert(0, str(checkout / "Eval"))
    e1 = importlib.import_module("eval_1_scenario")
    e1.calculate_tor = e1.check_if_speak_at_the_same_time  # the pause module's missing import
    mods = {m: importlib.import_module(m) for m in (
        "eval_2_scenarios", "eval_3_scenarios", "eval_4_scenarios", "eval_single_scenario_background",
        "eval_single_scenario_pause_handling")}
    return {"check_if_speak_at_the_same_time": e1.check_if_speak_at_the_same_time,
            "calculate_latency": e1.calculate_latency, "calculate_frequency": e1.calculate_frequency,
            "check_time_range_in_ipu": mods["eval_4_scenarios"].check_time_range_in_ipu,
            "eval_1_scenario": lambda s, sc, t: e1.eval_1_scenario(s, sc, t),
            "eval_2_scenarios": lambda s, sc, t: mods["eval_2_scenarios"].eval_2_scenarios(s, sc, t),
            "eval_3_scenarios": lambda s, sc, t: mods["eval_3_scenarios"].eval_3_scenarios(s, sc, t),
            "eval_4_scenarios": lambda s, sc, t: mods["eval_4_scenarios"].eval_4_scenarios(s, sc, t, None),
            "eval_single_scenario_background": lambda s, sc, t: mods["eval_single_scenario_background"]
            .eval_single_scenario_background(s, sc, t, None),
            "eval_single_scenario_pause": lambda s, sc, t: mods["eval_single_scenario_pause_handling"]
            .eval_single_scenario_pause(s, sc, t)}


def run_case(fns: dict, case: dict):
    segs = upstream(case["segments"])
    call = case["call"]
    with contextlib.redirect_stdout(io.StringIO()):
        if call in ("check_if_speak_at_the_same_time",):
            return {"value": fns[call](segs, *case["window"])}
        if call == "check_time_range_in_ipu":
            return {"value": fns[call](case["window"][0], case["window"][1], segs)}
        if call == "calculate_latency":
            return {"value": fns[call](segs, case["timestamps"])}
        if call == "calculate_frequency":
            return {"value": fns[call](segs)}
        success, latency, frequency = fns[call](segs, case["scenario"], case["timestamps"])
        return {"success": success, "latency": latency, "frequency": frequency}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkout", type=Path, help="MTR-DuplexBench checkout (work tree) at commit 6d7c125")
    ap.add_argument("--out", type=Path, default=HERE / "golden.json")
    args = ap.parse_args()
    try:
        head = subprocess.run(["git", "-C", str(args.checkout), "rev-parse", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        head = None
    if head is not None and not head.startswith(COMMIT):
        sys.exit(f"error: {args.checkout} is at {head}, not {COMMIT}")
    fns = load(args.checkout)
    out = []
    for case in cases():
        out.append({**case, "upstream": run_case(fns, case)})
    doc = {"upstream": {"repo": "ZhangHe0918/MTR-DuplexBench", "commit": COMMIT, "files": "Eval/eval_*.py"},
           "command": "python benchmarks/mtr/duplexeval_mtr/tests/golden/regenerate.py <MTR-DuplexBench checkout at 6d7c125>",
           "note": ("eval_single_scenario_pause_handling imported with eval_1_scenario.calculate_tor bound "
                    "to check_if_speak_at_the_same_time; eval_4/background called with client=None"),
           "cases": out}
    args.out.write_text(json.dumps(doc, sort_keys=True, indent=1) + "\n")
    print(f"{len(out)} cases -> {args.out}")


if __name__ == "__main__":
    main()
