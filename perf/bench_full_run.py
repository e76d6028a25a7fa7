"""A whole FDB v1.0 set through `duplexeval eval` against a realtime server with N sessions at once.

The server is tests/duplex_runner/freeze_omni_server.py over HTTPS with a self-signed certificate: a
Freeze-Omni protocol test double, NOT the model (it answers each end of user speech with a Piper
sentence due 0.5 s later). The run is the user's command, `duplexeval eval --model freeze-omni
--dataset fdb-synth --runner-arg concurrency=N`, in a fresh DUPLEXEVAL_HOME (or --home), with the
default ASR and `--judge none` (the interruption subset's judged column needs an LLM judge; its other
numbers do not). Reported: each stage's wall seconds and peak resident memory (its process, and the
largest of its ended children: stage.json's timings), the runner stage's wall
time over the set's audio time, drift p50 / p99 / max over every frame sent, late frames, ineligible
and failed sessions, the tries, the peak resident memory of the largest process the run started, and
the load average before and after (a busy machine sets the drift figures).

Usage: .venv/bin/python perf/bench_full_run.py [--concurrency 16] [--dataset fdb-synth] [--limit N]
                                               [--home DIR] [--asr faster-whisper]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
REPLY = "Sure, here is a short answer. It has a few sentences, and it keeps going for a little while."
PROBE = ("import resource,subprocess,sys;r=subprocess.run(sys.argv[1:]);"
         "print('PEAK_KIB', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr);"
         "sys.exit(r.returncode)")


def stages_of(home: Path) -> dict[str, dict]:
    """{component: stage.json} of the store (one run in a fresh home: one stage per component)."""
    out = {}
    for f in sorted((home / "store").glob("*/stage.json")):
        doc = json.loads(f.read_text())
        out[doc["component"]] = {**doc, "dir": f.parent}
    return out


def audio_seconds(dataset_dir: Path) -> float:
    import soundfile as sf
    return sum(sf.info(str(p)).duration for p in sorted((dataset_dir / "samples").glob("*/*/input.wav")))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--dataset", default="fdb-synth")
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--home", type=Path, default=None)
    p.add_argument("--asr", default="faster-whisper")
    a = p.parse_args()
    from tests.conftest import exact_speech
    from tests.duplex_runner.servers import Doubles, make_cert
    from duplexeval.capacity import drift_summary, session_numbers
    from duplexeval_common.wavio import write_wav
    tmp = Path(tempfile.mkdtemp(prefix="bench-full-run-"))
    home = a.home or tmp / "home"
    cert, key = make_cert(tmp)
    reply = tmp / "reply.wav"
    write_wav(reply, exact_speech(REPLY, 24000), 24000)
    dx = str(Path(sys.executable).with_name("duplexeval"))
    cmd = [dx, "--home", str(home), "eval", "--model", "freeze-omni", "--dataset", a.dataset, "--judge", "none",
           "--asr", a.asr, "--runner-arg", f"concurrency={a.concurrency}"]
    if a.limit:
        cmd += ["--limit", str(a.limit)]
    with Doubles(tmp) as doubles:
        srv = doubles.start(REPO / "tests" / "duplex_runner" / "freeze_omni_server.py", "--cert", cert, "--key", key,
                            "--script", json.dumps({"reply_delay_s": 0.5, "reply_wav": str(reply)}),
                            url="https://127.0.0.1:{port}")
        env = {**os.environ, "MODEL_URL": srv.url, "MODEL_CA": str(cert)}
        load0 = os.getloadavg()
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, "-c", PROBE, *cmd], env=env, stderr=subprocess.PIPE, text=True)
        wall = time.perf_counter() - t0
        load1 = os.getloadavg()
    peak = [int(line.split()[1]) for line in r.stderr.splitlines() if line.startswith("PEAK_KIB")]
    sys.stderr.write("".join(line + "\n" for line in r.stderr.splitlines()[-20:] if not line.startswith("PEAK_KIB")))
    stages = stages_of(home)
    runner = stages.get("duplex-runner")
    if runner is None:
        print(f"eval exited {r.returncode} before the runner stage was written")
        return 1
    keys = sorted(runner["samples"])
    drifts, ineligible, limit, span = session_numbers(runner["dir"], keys)
    failed = sorted(k for k, v in runner["samples"].items() if v.get("status") == "failed")
    tries = 0
    for k in keys:
        f = runner["dir"] / "samples" / k / "runner.json"
        if f.is_file():
            tries += json.loads(f.read_text()).get("stats", {}).get("tries", 1)
    audio = audio_seconds(stages["tts-synth"]["dir"]) if "tts-synth" in stages else None
    d = drift_summary(drifts, limit or 20.0)
    runner_s = runner["timings"]["seconds"]
    doc = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": f"{platform.machine()}, "
        f"{os.cpu_count()} cores", "dataset": a.dataset, "samples": len(keys), "concurrency": a.concurrency,
        "eval_exit": r.returncode, "eval_wall_s": round(wall, 1), "audio_s": round(audio, 1) if audio else None,
        "stages_s": {c: round(s["timings"]["seconds"], 1) for c, s in stages.items()},
        "stages_peak_rss_mib": {c: [s["timings"].get("peak_rss_mib"), s["timings"].get("peak_rss_children_mib")]
                                for c, s in stages.items()},
        "runner_over_audio": round(runner_s / audio, 4) if audio else None,
        "sessions_span_s": span, **d, "drift_limit_ms": limit, "ineligible": len(ineligible),
        "failed": len(failed), "tries": tries, "peak_rss_mib": round(max(peak) / 1024) if peak else None,
        "load_before": [round(x, 2) for x in load0], "load_after": [round(x, 2) for x in load1],
        "failed_first": failed[:3], "ineligible_first": sorted(ineligible.items())[:3],
    }
    print(json.dumps(doc, indent=1))
    return r.returncode


if __name__ == "__main__":
    raise SystemExit(main())
