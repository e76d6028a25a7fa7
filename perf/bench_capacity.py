"""`duplexeval capacity` against the Freeze-Omni protocol test double, as docs/performance.md reports it.

The server is tests/duplex_runner/freeze_omni_server.py over HTTPS with a self-signed certificate: a
protocol test double, NOT the model. It answers each end of user speech with a Piper sentence (about
6 s) due 0.5 s later, so the official turn-taking latency is 0.5 s up to a frame and the ASR's timing.
The sweep runs in a fresh DUPLEXEVAL_HOME (fdb-mini is synthesized there first) unless --home is
given; the load average is printed before and after, since a busy machine sets the drift figures.

Usage: .venv/bin/python perf/bench_capacity.py [--max-level 16] [--samples 8] [--home DIR] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
REPLY = "Sure, here is a short answer. It has a few sentences, and it keeps going for a little while."


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--max-level", type=int, default=16)
    p.add_argument("--samples", type=int, default=8)
    p.add_argument("--home", type=Path, default=None)
    p.add_argument("--out", type=Path, default=None)
    a = p.parse_args()
    from tests.conftest import exact_speech
    from tests.duplex_runner.servers import Doubles, make_cert
    from duplexeval_common.wavio import write_wav
    tmp = Path(tempfile.mkdtemp(prefix="bench-capacity-"))
    home = a.home or tmp / "home"
    out = a.out or tmp / "sweep"
    cert, key = make_cert(tmp)
    reply = tmp / "reply.wav"
    write_wav(reply, exact_speech(REPLY, 24000), 24000)
    dx = str(Path(sys.executable).with_name("duplexeval"))
    env = {**os.environ, "DUPLEXEVAL_HOME": str(home)}
    with Doubles(tmp) as doubles:
        srv = doubles.start(REPO / "tests" / "duplex_runner" / "freeze_omni_server.py", "--cert", cert, "--key", key,
                            "--script", json.dumps({"reply_delay_s": 0.5, "reply_wav": str(reply)}),
                            url="https://127.0.0.1:{port}")
        env.update(MODEL_URL=srv.url, MODEL_CA=str(cert))
        print("load average before:", " ".join(f"{x:.2f}" for x in os.getloadavg()), flush=True)
        t0 = time.perf_counter()
        rc = subprocess.run([dx, "capacity", "--model", "freeze-omni", "--max-level", str(a.max_level),
                             "--samples", str(a.samples), "--out", str(out)], env=env).returncode
        wall = time.perf_counter() - t0
        print("load average after:", " ".join(f"{x:.2f}" for x in os.getloadavg()), flush=True)
    print(f"exit {rc}, {wall:.0f} s wall; {out}/capacity.md:")
    md = out / "capacity.md"
    print(md.read_text() if md.exists() else "(not written)")
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
