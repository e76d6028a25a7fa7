"""scripts/test-passes.sh (`make test`'s passes) when it is interrupted: Ctrl-C reaches the script
and its pytest (one process group); no further pass starts, the filler is stopped, the folder of
temporary files in memory is removed, and the exit is 130. Its PYTEST_RUN is a stand-in here (a
script that records which pass it is and sleeps), so what is tested is the script's own handling."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

STAND_IN = """import sys, time
from pathlib import Path
args = sys.argv[1:]
kind = "serial" if "serial" in args else "filler" if "filler and not serial" in args else "first"
with open(sys.argv[0] + ".log", "a") as f:
    f.write(kind + "\\n")
time.sleep(60)
"""


def _interrupt(tmp_path: Path, started: set[str], first_sleeps: bool = True) -> tuple[int, str, list[str], float]:
    """Run the script with the stand-in; once every pass in `started` has begun, SIGINT to its group
    (as Ctrl-C in a terminal). (exit, output, the passes that began, seconds from the signal to the end)"""
    fake = tmp_path / "pytest_stand_in.py"
    fake.write_text(STAND_IN if first_sleeps else STAND_IN.replace("time.sleep(60)",
                                                                   'time.sleep(0 if kind == "first" else 60)'))
    log = Path(str(fake) + ".log")
    env = {**os.environ, "PYTEST_RUN": f"{sys.executable} {fake}", "TEST_WORKERS": "2", "SERIAL_WORKERS": "1"}
    p = subprocess.Popen(["bash", str(ROOT / "scripts" / "test-passes.sh")], cwd=ROOT, env=env, start_new_session=True,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (log.is_file() and started <= set(log.read_text().split())):
        time.sleep(0.05)
    time.sleep(0.3)
    t0 = time.monotonic()
    os.killpg(p.pid, signal.SIGINT)
    out, _ = p.communicate(timeout=60)
    return p.returncode, out, sorted(log.read_text().split()), time.monotonic() - t0


def _memory_folder(out: str) -> Path | None:
    for line in out.splitlines():
        if line.startswith("make test: temporary folders in memory, in "):
            return Path(line.rsplit(" ", 1)[1])
    return None


def test_an_interrupted_first_pass_starts_no_other_and_removes_its_folder(tmp_path):
    rc, out, started, _ = _interrupt(tmp_path, {"first"})
    assert rc == 130, out
    assert started == ["first"], out
    assert "make test: interrupted" in out
    shm = _memory_folder(out)
    assert shm is None or not shm.exists(), out


def test_an_interrupted_serial_pass_stops_the_filler_too(tmp_path):
    rc, out, started, seconds = _interrupt(tmp_path, {"serial", "filler"}, first_sleeps=False)
    assert rc == 130, out
    # the filler runs in the background, where Ctrl-C does not reach it: the script stops it
    assert seconds < 30, seconds
    assert started == ["filler", "first", "serial"]
    shm = _memory_folder(out)
    assert shm is None or not shm.exists(), out
    left = subprocess.run(["pgrep", "-f", str(tmp_path / "pytest_stand_in.py")], capture_output=True, text=True)
    assert left.stdout.split() == [], left.stdout
