"""What the network runners' tests share about their protocol test doubles (none of them is a model).

- `make_cert` / the `cert` fixture: a self-signed certificate for 127.0.0.1 and localhost, made with
  the openssl CLI (the test is skipped without it), as a model server's `--ssl` mode would use;
- `Doubles`: starts a double script (freeze_omni_server.py, openai_realtime_server.py,
  gemini_live_server.py) in its own process with `--record <file>`, reads the `PORT <n>` line it
  prints once it listens, and stops every one it started on exit;
- `Double`: one started double, its URL and the JSON-lines record it appends to;
- `talk`: the input the doubles listen to, a tone for speech and exact zeros for silence (the
  doubles only measure loudness); `output`: a sample's output.wav, checked against the input.

A runner test defines its own `server` fixture on these, e.g.

    @pytest.fixture
    def server(cert, tmp_path):
        with Doubles(tmp_path) as doubles:
            yield lambda **script: doubles.start(SCRIPT, "--script", json.dumps(script), url="ws://127.0.0.1:{port}")

(a fixture that needs only `cert` and `tmp_path`, so another test folder can import it with `cert`).
"""

from __future__ import annotations

import contextlib
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from duplexeval_common.jsonio import read_jsonl

START_TIMEOUT_S = 30.0  # for the PORT line (a cold interpreter importing its server library)
STOP_TIMEOUT_S = 5.0


def make_cert(directory: Path) -> tuple[Path, Path]:
    """(cert.pem, key.pem): a self-signed RSA certificate for localhost and 127.0.0.1, two days."""
    directory.mkdir(parents=True, exist_ok=True)
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-keyout", str(key), "-out", str(cert), "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                   check=True, capture_output=True)
    return cert, key


@pytest.fixture(scope="module")
def cert(tmp_path_factory) -> tuple[Path, Path]:
    """A self-signed (cert.pem, key.pem) shared by a test module."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl CLI makes the test certificate")
    return make_cert(tmp_path_factory.mktemp("tls"))


class Double:
    """A started double: its port, URL, process and record (JSON lines with an `event` field)."""

    def __init__(self, port: int, url: str, record: Path, proc: subprocess.Popen):
        self.port, self.url, self.record, self.proc = port, url, record, proc

    def rows(self, event: str = "session", n: int = 1, timeout: float = 5.0) -> list[dict]:
        """The record's `event` lines, waiting until there are n (a double writes a session's line at its end)."""
        end = time.monotonic() + timeout
        while True:
            rows = [r for r in read_jsonl(self.record) if r["event"] == event] if self.record.exists() else []
            if len(rows) >= n or time.monotonic() > end:
                return rows
            time.sleep(0.05)


class Doubles:
    """Doubles started in their own processes, their records and stderr under `tmp`; all stopped on exit."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.procs: list[subprocess.Popen] = []

    def start(self, script: Path, *args: object, url: str, env: dict | None = None) -> Double:
        """Run `python script --record <file> *args`; `url` is formatted with the port it announces."""
        i = len(self.procs)
        record, err = self.tmp / f"server-{i}.jsonl", self.tmp / f"server-{i}.err"
        with open(err, "w") as stderr:
            proc = subprocess.Popen([sys.executable, str(script), "--record", str(record), *map(str, args)],
                                    stdout=subprocess.PIPE, stderr=stderr, text=True, env=env)
        self.procs.append(proc)
        ready, _, _ = select.select([proc.stdout], [], [], START_TIMEOUT_S)
        line = proc.stdout.readline() if ready else ""
        assert line.startswith("PORT "), f"test server did not start: {err.read_text()}"
        port = int(line.split()[1])
        return Double(port, url.format(port=port), record, proc)

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(STOP_TIMEOUT_S)
            if proc.stdout is not None:
                proc.stdout.close()

    def __enter__(self) -> Doubles:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def voice(seconds: float, sr: int) -> np.ndarray:
    """A stand-in for speech: the doubles only measure loudness (exact zeros are silence)."""
    t = np.arange(int(round(seconds * sr))) / sr
    return (0.3 * np.sin(2 * np.pi * 300 * t + 0.5)).astype(np.float32)


def talk(*parts: tuple[str, float], sr: int) -> np.ndarray:
    """("speech", seconds) and ("silence", seconds) parts back to back at rate sr."""
    return np.concatenate([voice(s, sr) if kind == "speech" else np.zeros(int(round(s * sr)), dtype=np.float32)
                           for kind, s in parts])


def output(sample_dir: Path, n_samples: int, sr: int) -> np.ndarray:
    """A sample's output.wav (float32), after checking it is exactly the input's length and rate."""
    info = sf.info(str(sample_dir / "output.wav"))
    assert (info.frames, info.samplerate) == (n_samples, sr)
    audio, _ = sf.read(str(sample_dir / "output.wav"), dtype="float32")
    return audio
