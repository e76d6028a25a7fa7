"""`duplexeval eval --executor slurm` on a real single-node Slurm cluster started by the test.

The cluster is Debian's slurm (slurmctld, slurmd) and munge, configured in a temporary folder
(its own munge key and socket, its own slurm.conf, state and spool folders, free ports) and
stopped by pid afterwards: a system-wide slurm or munge is never touched. Skipped unless the
binaries are installed; DUPLEXEVAL_SLURM_TESTS=1 makes a missing binary a failure instead.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from duplexeval_common.jsonio import read_json

from ..conftest import command

BINARIES = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scancel")
FORCED = os.environ.get("DUPLEXEVAL_SLURM_TESTS") == "1"


def _find(name: str) -> str | None:
    return shutil.which(name) or next((str(p) for p in (Path("/usr/sbin") / name,) if p.is_file()), None)


MISSING = [b for b in BINARIES if _find(b) is None]
if MISSING and FORCED:
    raise RuntimeError(f"DUPLEXEVAL_SLURM_TESTS=1 but {', '.join(MISSING)} not installed "
                       "(apt-get install slurmctld slurmd slurm-client munge)")
pytestmark = pytest.mark.skipif(bool(MISSING), reason=f"slurm not installed ({', '.join(MISSING)})")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SlurmCluster:
    """munged + slurmctld + slurmd of one node, all in `root`; `env` points the clients at it."""

    def __init__(self, root: Path):
        self.root = root
        self.pids: list[int] = []
        self.host = socket.gethostname()
        self.conf = root / "slurm.conf"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}

    def start(self) -> "SlurmCluster":
        r = self.root
        for d in ("munge", "state", "spool", "log"):
            (r / d).mkdir(parents=True, exist_ok=True)
        os.chmod(r / "munge", 0o700)
        key = r / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        os.chmod(key, 0o400)
        sock = r / "munge" / "munge.socket"
        subprocess.run([_find("munged"), "--force", "--key-file", str(key), "--socket", str(sock),
                        "--pid-file", str(r / "munge" / "munged.pid"), "--log-file", str(r / "log" / "munged.log"),
                        "--seed-file", str(r / "munge" / "munged.seed")], check=True)
        self.pids.append(int((r / "munge" / "munged.pid").read_text()))
        cpus = os.cpu_count() or 1
        mem_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2 ** 20 // 2
        self.conf.write_text(f"""\
ClusterName=duplexevaltest
SlurmctldHost={self.host}
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={sock}
StateSaveLocation={r / "state"}
SlurmdSpoolDir={r / "spool"}
SlurmctldPidFile={r / "slurmctld.pid"}
SlurmdPidFile={r / "slurmd.pid"}
SlurmctldLogFile={r / "log" / "slurmctld.log"}
SlurmdLogFile={r / "log" / "slurmd.log"}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
MinJobAge=600
KillWait=5
InactiveLimit=0
SchedulerParameters=sched_interval=1
NodeName={self.host} CPUs={cpus} RealMemory={mem_mb} State=UNKNOWN
PartitionName=debug Nodes={self.host} Default=YES MaxTime=INFINITE State=UP
""")
        for daemon, pidfile in (("slurmctld", "slurmctld.pid"), ("slurmd", "slurmd.pid")):
            subprocess.run([_find(daemon), "-f", str(self.conf)], check=True, env=self.env)
            for _ in range(100):
                if (r / pidfile).is_file() and (r / pidfile).read_text().strip():
                    break
                time.sleep(0.1)
            self.pids.append(int((r / pidfile).read_text()))
        for _ in range(300):  # the node registers and goes idle
            out = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, env=self.env)
            if out.returncode == 0 and out.stdout.strip() in ("idle", "mixed"):
                return self
            time.sleep(0.2)
        raise RuntimeError(f"the test cluster did not come up: {out.stdout} {out.stderr}\n" + self.logs())

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text()[-3000:]}" for p in sorted((self.root / "log").glob("*.log")))

    def stop(self) -> None:
        subprocess.run(["scancel", "--user", str(os.getuid())], env=self.env, capture_output=True)
        for pid in reversed(self.pids):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            for _ in range(100):
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.1)
            else:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = SlurmCluster(tmp_path_factory.mktemp("slurm"))
    try:
        yield c.start()
    finally:
        c.stop()


def dx(home: Path, *args: str, env: dict | None = None, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([command("duplexeval"), "--home", str(home), *args], capture_output=True, text=True,
                          env=env, **kw)


EVAL = ("eval", "--model", "fixed-latency", "--judge", "none", "--dataset", "fdb-mini")


def metrics(home: Path) -> bytes:
    run = read_json(home / "runs" / "latest" / "run.json")
    return (home / "store" / run["stages"][-1]["key"] / "metrics.json").read_bytes()


def test_slurm_executor_gives_the_local_executors_bytes(cluster, tmp_path):
    local = dx(tmp_path / "local", *EVAL, "--limit", "2", env=cluster.env)
    assert local.returncode == 0, local.stderr[-3000:]
    r = dx(tmp_path / "slurm", *EVAL, "--limit", "2", "--executor", "slurm", "--slurm-shards", "2",
           env=cluster.env)
    assert r.returncode == 0, r.stderr[-5000:] + cluster.logs()
    assert metrics(tmp_path / "slurm") == metrics(tmp_path / "local")
    run = read_json(tmp_path / "slurm" / "runs" / "latest" / "run.json")
    assert run["executor"]["name"] == "slurm" and run["executor"]["shards"] == 2
    assert [s["cached"] for s in run["stages"]] == [False] * 5
    for s in run["stages"]:  # the sharded stages left one record per shard and the finalize step's
        d = tmp_path / "slurm" / "store" / s["key"]
        shards = sorted(p.name for p in d.glob("stage.shard-*.json"))
        assert shards == ([] if s["name"] == "aggregate" else
                          ["stage.shard-0-of-2.json", "stage.shard-1-of-2.json"]), (s["name"], shards)
    assert "shard 1/2" in r.stderr and "finalize" in r.stderr
    # a second run reuses every stage from the store
    again = dx(tmp_path / "slurm", *EVAL, "--limit", "2", "--executor", "slurm", env=cluster.env)
    assert again.returncode == 0, again.stderr[-3000:]
    assert [s["cached"] for s in read_json(tmp_path / "slurm" / "runs" / "latest" / "run.json")["stages"]] == [True] * 5


def _squeue(cluster, *args) -> list[list[str]]:
    out = subprocess.run(["squeue", "-h", "-r", *args], capture_output=True, text=True, env=cluster.env)
    return [line.split() for line in out.stdout.splitlines() if line.strip()]


def test_a_cancelled_shard_is_resubmitted_and_the_result_is_identical(cluster, tmp_path):
    # A shard of the runner stage (fixed-latency on 4 samples per subset: seconds of work per shard) is
    # cancelled while it runs. Only the runner's: the dataset stage's shards, their sentences in the
    # session's TTS cache, can end within a second of being seen running, and a cancel that lands on a
    # finished shard resubmits nothing (seen on a fast machine). Its jobs are named by its stage key,
    # which is the local run's: the executor is not part of a stage's key.
    args = (*EVAL, "--limit", "4")
    local = dx(tmp_path / "local", *args, env=cluster.env)
    assert local.returncode == 0, local.stderr[-3000:]
    (runner_key,) = [s["key"] for s in read_json(tmp_path / "local" / "runs" / "latest" / "run.json")["stages"]
                     if s["name"] == "runner"]
    proc = subprocess.Popen([command("duplexeval"), "--home", str(tmp_path / "slurm"), *args, "--executor", "slurm",
                             "--slurm-shards", "2"], env=cluster.env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    killed = None
    deadline = time.monotonic() + 240
    while killed is None and time.monotonic() < deadline and proc.poll() is None:
        for jobid, name, state in _squeue(cluster, "-o", "%i %j %T"):
            if "_" in jobid and state == "RUNNING" and name == f"duplexeval-{runner_key}":
                time.sleep(0.3)  # let it seal a sample: those are never redone
                subprocess.run(["scancel", jobid], env=cluster.env, check=True)
                killed = jobid
                break
        time.sleep(0.1)
    out, err = proc.communicate(timeout=300)
    assert killed is not None, "no running shard was seen\n" + err[-3000:]
    assert proc.returncode == 0, err[-5000:] + cluster.logs()
    assert "resubmitting" in err, err[-3000:]
    assert metrics(tmp_path / "slurm") == metrics(tmp_path / "local")


def test_the_mtr_plan_under_slurm_gives_the_local_executors_bytes(cluster, tmp_path):
    """MTR-DuplexBench's plan (dataset, dialogue-asr, segment, rounds, runner, asr, judge, aggregate)
    under the Slurm executor: the same stage keys, and scored files equal to the local executor's,
    byte for byte."""
    # one dialogue of a code-scored features set and one of the judged dialogue-quality set: every
    # stage of the plan, at a fifth of the whole mini set's cost
    args = ("eval", "--benchmark", "mtr", "--model", "silence", "--limit", "1",
            "--subset", "smooth_features", "--subset", "synthetic_dialogue_quality")
    local = dx(tmp_path / "local", *args, env=cluster.env)
    assert local.returncode == 0, local.stderr[-3000:]
    r = dx(tmp_path / "slurm", *args, "--executor", "slurm", "--slurm-shards", "2", env=cluster.env)
    assert r.returncode == 0, r.stderr[-5000:] + cluster.logs()
    runs = {h: read_json(tmp_path / h / "runs" / "latest" / "run.json") for h in ("local", "slurm")}
    names = [s["name"] for s in runs["slurm"]["stages"]]
    assert names == ["dataset", "dialogue-asr", "segment", "rounds", "runner", "asr", "judge", "aggregate"]
    assert [s["key"] for s in runs["slurm"]["stages"]] == [s["key"] for s in runs["local"]["stages"]]
    out = {h: tmp_path / h / "store" / runs[h]["stages"][-1]["key"] for h in runs}
    for name in ("metrics.json", "rounds.jsonl", "report.md"):
        assert (out["slurm"] / name).read_bytes() == (out["local"] / name).read_bytes(), name
    # Each stage ran as 2 shards (a record each) and the finalize job, but the aggregator (always one
    # job) and the segmenter: its input, the dialogue-asr stage, holds the one dialogue-quality
    # dialogue of --limit 1, and a stage never gets more shards than its inputs have samples.
    single = {"segment", "aggregate"}
    for s in runs["slurm"]["stages"]:
        shards = sorted(p.name for p in (tmp_path / "slurm" / "store" / s["key"]).glob("stage.shard-*.json"))
        assert shards == ([] if s["name"] in single else
                          ["stage.shard-0-of-2.json", "stage.shard-1-of-2.json"]), (s["name"], shards)
    assert "shard 1/2" in r.stderr and "finalize" in r.stderr
