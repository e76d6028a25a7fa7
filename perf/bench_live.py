"""Live sessions (fdb-v2; components/duplex-runner/duplexeval_runner/live.py): what one costs.

`lockstep`: one 120 s session of fdb-v2-mini's `daily` task, the cascade examiner (Silero VAD,
faster-whisper tiny.en, SmolLM2-135M greedy, Piper) against the cascade runner on its fixed clock,
through the runner stage in this process; wall seconds, real-time factor, the process's peak RSS,
and the same session again served from the examiner's request cache (a replay: no generation).

`realtime`: how many live sessions at once one machine drives within the drift limit: sessions of
`--seconds` against the freeze-omni runner's protocol test double (tests/duplex_runner/
freeze_omni_server.py, not the model; it answers with Piper speech 0.5 s after the user's last loud
sample), the examiner's LLM a local chat-completions test double (tests/judge/chat_server.py, not a
model), at concurrency 1, 2, 4, ...: per level the drift p99 and max over every frame, the sessions
past the drift limit on their last try, the tries, and the examiner turns answered.

Usage: .venv/bin/python perf/bench_live.py lockstep [--seconds 120]
       .venv/bin/python perf/bench_live.py realtime [--seconds 20] [--levels 1,2,4,8]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def tasks_script(seconds: float, task: int = 0) -> dict:
    from duplexeval_fdb_v2.live import live_json
    from duplexeval_fdb_v2.tasks import load_tasks
    tasks = load_tasks(REPO / "benchmarks" / "fdb-v2" / "datasets" / "fdb-v2-mini")
    return live_json(sorted(tasks.values(), key=lambda t: t.id)[task % len(tasks)], seconds, 16000)


def dataset(root: Path, scripts: list[dict]) -> Path:
    rows = []
    for i, doc in enumerate(scripts):
        d = root / "samples" / "daily" / str(i)
        d.mkdir(parents=True)
        (d / "live.json").write_text(json.dumps(doc))
        rows.append({"subset": "daily", "id": str(i), "task": "daily"})
    (root / "manifest.json").write_text(json.dumps({"dataset": "bench-live", "samples": rows}))
    return root


def run_stage(data: Path, out: Path, runner: str, runner_args: dict, examiner_args: dict) -> float:
    from duplexeval_runner.stage import make_stage
    cfg = {"runner": runner, "runner_args": runner_args, "seed": 0,
           "examiner": {"engine": "cascade", "args": examiner_args}}
    t0 = time.perf_counter()
    make_stage(cfg).run([data], out, cfg, allow_failures=True)
    return time.perf_counter() - t0


def lockstep(a) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="bench-live-"))
    os.environ["DUPLEXEVAL_CACHE"] = str(tmp / "cache")  # a cold request cache, this run's own
    data = dataset(tmp / "in", [tasks_script(a.seconds)])
    wall = run_stage(data, tmp / "a", "cascade", {"clock": "fixed"}, {})
    replay = run_stage(data, tmp / "b", "cascade", {"clock": "fixed"}, {})
    d = tmp / "a" / "samples" / "daily" / "0"
    exam = json.loads((d / "examiner.json").read_text())
    notes = json.loads((tmp / "a" / "stage.json").read_text()).get("invocation_notes", {})
    same = all((d / n).read_bytes() == (tmp / "b" / "samples" / "daily" / "0" / n).read_bytes()
               for n in ("input.wav", "output.wav", "examiner.json", "events.jsonl"))
    return {"seconds": a.seconds, "wall_s": round(wall, 1), "rtf": round(wall / a.seconds, 3),
            "replay_wall_s": round(replay, 1), "replay_same_bytes": same,
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
            "examiner_turns": len(exam["turns"]), "answered": sum(t["answered"] for t in exam["turns"]),
            "llm": notes.get("examiner_llm"), "cores": os.cpu_count()}


def realtime(a) -> list[dict]:
    from tests.conftest import exact_speech
    from tests.duplex_runner.servers import Doubles, make_cert
    from tests.judge import chat_server
    from duplexeval_common.wavio import write_wav
    tmp = Path(tempfile.mkdtemp(prefix="bench-live-rt-"))
    os.environ["DUPLEXEVAL_CACHE"] = str(tmp / "cache")
    cert, key = make_cert(tmp)
    reply = tmp / "reply.wav"
    write_wav(reply, exact_speech("Sure, I can help you with that dinner.", 24000), 24000)
    llm = chat_server.start(lambda body, n: chat_server.ok("That sounds good, tell me more."))
    rows = []
    with Doubles(tmp) as doubles:
        srv = doubles.start(REPO / "tests" / "duplex_runner" / "freeze_omni_server.py", "--cert", cert, "--key", key,
                            "--script", json.dumps({"reply_delay_s": 0.5, "reply_wav": str(reply)}),
                            url="https://127.0.0.1:{port}")
        for level in [int(x) for x in a.levels.split(",")]:
            data = dataset(tmp / f"in-{level}", [tasks_script(a.seconds, i % 4) for i in range(level)])
            out = tmp / f"out-{level}"
            wall = run_stage(data, out, "freeze-omni", {"url": srv.url, "ca_file": str(cert), "concurrency": level},
                             {"llm": "openai", "llm_url": llm.base_url})
            drifts, late, tries, answered, turns, failed = [], 0, 0, 0, 0, 0
            for d in sorted((out / "samples" / "daily").iterdir()):
                if not (d / "runner.json").exists():
                    failed += 1
                    continue
                rec = json.loads((d / "runner.json").read_text())
                late += rec["status"] == "ineligible"
                tries += rec["stats"].get("tries", 1)
                drifts += [json.loads(line)["drift_ms"] for line in (d / "events.jsonl").read_text().splitlines()
                           if '"type":"send"' in line.replace(" ", "")]
                exam = json.loads((d / "examiner.json").read_text())
                turns += len(exam["turns"])
                answered += sum(t["answered"] for t in exam["turns"])
            x = np.asarray(drifts or [0.0])
            rows.append({"sessions": level, "wall_s": round(wall, 1), "drift_p99_ms": round(float(np.percentile(x, 99)), 2),
                         "drift_max_ms": round(float(x.max()), 2), "ineligible": late, "failed": failed,
                         "tries": tries, "turns": turns, "answered": answered})
            print(json.dumps(rows[-1]), flush=True)
    llm.shutdown()
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mode", choices=("lockstep", "realtime"))
    p.add_argument("--seconds", type=float, default=None)
    p.add_argument("--levels", default="1,2,4,8")
    a = p.parse_args()
    if a.mode == "lockstep":
        a.seconds = a.seconds or 120.0
        print(json.dumps(lockstep(a), indent=1))
    else:
        a.seconds = a.seconds or 20.0
        print(json.dumps(realtime(a), indent=1))


if __name__ == "__main__":
    main()
