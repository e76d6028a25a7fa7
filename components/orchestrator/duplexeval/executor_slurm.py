"""The Slurm executor: each stage that must run becomes a job array of shards and a finalize job.

The engine plans, reuses cached stages and takes each stage's lock exactly as with the local
executor; this executor only replaces *how* a stage's `run` command is started. It wraps a
runtime (local or docker) and is handed to the engine in its place:

- `check` calls run on this machine through the wrapped runtime, as today.
- `run` writes two batch scripts into `store/slurm/<key>/` and submits
    1. a job array of N shards, each `<component> run ... --allow-failures --shard $SLURM_ARRAY_TASK_ID/N`
       (a sample that fails is recorded in the shard's record; the shard still exits 0), and
    2. the finalize step, `--dependency=afterok:<array>`: the unsharded `run` in the same output
       folder, which skips every sealed sample, runs the stage's finalize step and writes
       stage.json with this invocation's token (DUPLEXEVAL_INVOCATION).
  The aggregator, and a stage whose inputs hold no samples, is one job (no shards).
  Both jobs get the orchestrator's environment (sbatch's default --export=ALL): the stage's
  settings and secrets are never written into a script.
- It polls squeue (and sacct for jobs squeue no longer lists), prints one line per change of a
  shard's state, and resubmits a shard that was cancelled, preempted, timed out, lost its node,
  or failed with an exit code other than 1, at most `retries` times; then submits the finalize
  step again after the resubmitted shards. It returns the finalize job's Outcome, so the engine
  classifies and records the stage as it does for the local executor.
- Jobs are named `duplexeval-<stage key>`. Jobs of that name still queued or running when a
  stage starts belong to an orchestrator that was killed: they are cancelled (and waited for)
  and the stage is submitted again; sealed samples are never redone (the stage contract).
"""

from __future__ import annotations

import math
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.jsonio import read_json
from duplexeval_common.progress import log
from duplexeval_common.samples import STAGE_RECORD
from duplexeval_common.watchdog import watchdog

from .paths import is_runner
from .runtime import Call, Limits, LogRelay, Outcome

RETRY_STATES = ("CANCELLED", "PREEMPTED", "NODE_FAIL", "TIMEOUT", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY", "LOST")
DONE_STATES = ("COMPLETED", "FAILED", *RETRY_STATES)
SINGLE_JOB = ("aggregator",)          # components whose stage is one job, never sharded
NODE_LOCAL = ("/tmp", "/var/tmp", "/dev/shm", "/run")


@dataclass
class SlurmSettings:
    """Per stage settings; each dict maps a component (or "" for every stage) to a value."""

    shards: dict[str, int] = field(default_factory=lambda: {"": 2})
    partition: dict[str, str] = field(default_factory=dict)
    time: dict[str, str] = field(default_factory=dict)       # sbatch --time; default: the stage timeout
    gpus_runner: int = 0
    sbatch_args: dict[str, list[str]] = field(default_factory=dict)
    retries: int = 2
    poll_s: float = float(os.environ.get("DUPLEXEVAL_SLURM_POLL_S", "1.0"))

    def get(self, what: dict, component: str, default=None):
        return what.get(component, what.get("", default))

    def record(self) -> dict:
        return {"name": "slurm", "shards": self.shards.get("", 2),
                "shards_per_stage": {k: v for k, v in self.shards.items() if k},
                "partition": self.partition, "time": self.time, "gpus_runner": self.gpus_runner,
                "sbatch_args": self.sbatch_args, "retries": self.retries}


def _cmd(args: list[str], env: dict | None = None, check: bool = True) -> str:
    try:
        r = subprocess.run(args, capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise DuplexEvalError(f"{args[0]} not found: the slurm executor needs the Slurm client commands "
                              "(sbatch, squeue, sacct, scancel) on this machine") from None
    if check and r.returncode != 0:
        raise DuplexEvalError(f"{' '.join(args[:2])}: {(r.stderr or r.stdout).strip().splitlines()[-1:] or r.returncode}")
    return r.stdout


def check_shared(store_root: Path, extra: list[Path] = ()) -> int:
    """The number of nodes; refuses a node-local store (or venv) on a cluster of several nodes."""
    nodes = {n for n in _cmd(["sinfo", "-h", "-N", "-o", "%N"]).split() if n}
    if len(nodes) > 1:
        for what, path in (("store", store_root), *(("virtualenv", p) for p in extra)):
            real = os.path.realpath(path)
            if any(real == d or real.startswith(d + "/") for d in NODE_LOCAL):
                raise DuplexEvalError(
                    f"the {what} {real} is on a node-local folder, which the {len(nodes)} nodes of the "
                    "cluster do not share: put it on a shared filesystem (--home / $DUPLEXEVAL_HOME, "
                    "see docs/scale.md)")
    return len(nodes)


def job_states(ids: list[str]) -> dict[str, tuple[str, int | None]]:
    """{array_job_task or job id: (state, exit code)} from squeue, then sacct for the rest."""
    out: dict[str, tuple[str, int | None]] = {}
    if not ids:
        return out
    text = _cmd(["squeue", "-h", "-r", "--states=all", "-j", ",".join(ids), "-O",
                 "JobArrayID:60,State:30,Exit_Code:12"], check=False)
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2:
            raw = parts[2] if len(parts) > 2 and parts[2].lstrip("-").isdigit() else None
            code = None if raw is None else (int(raw) >> 8 if int(raw) >= 0 else None)
            out[parts[0]] = (parts[1].split()[0], code)
    missing = [i for i in ids if not any(k == i or k.startswith(i + "_") for k in out)]
    if missing:
        text = _cmd(["sacct", "-n", "-P", "-X", "-j", ",".join(missing), "-o", "JobID,State,ExitCode"],
                    check=False)
        for line in text.splitlines():
            parts = line.split("|")
            if len(parts) == 3:
                code = parts[2].split(":")[0]
                out[parts[0]] = (parts[1].split()[0], int(code) if code.isdigit() else None)
    return out


class SlurmExecutor:
    """A runtime that runs `run` calls as Slurm jobs of the wrapped runtime's command line."""

    def __init__(self, runtime, settings: SlurmSettings, shared_check: bool = True):
        self.runtime = runtime
        self.settings = settings
        self.name = runtime.name
        self._checked = not shared_check

    def identity(self, component: str) -> str:
        return self.runtime.identity(component)

    def check_benchmark(self, component: str, name: str, digest: str) -> None:
        check = getattr(self.runtime, "check_benchmark", None)
        if check is not None:
            check(component, name, digest)

    def provenance(self, component: str) -> dict:
        return self.runtime.provenance(component)

    # ---- the command line of one stage -----------------------------------------------------------

    def command(self, call: Call) -> tuple[list[str], dict[str, str]]:
        """(argv, environment to export) of `call` through the wrapped runtime."""
        env = {**call.env(self.identity(call.component)), "DUPLEXEVAL_PROGRESS": "lines", **call.secret_env}
        if self.runtime.name == "local":
            return self.runtime.args(call), env
        args, mounts, plain = self.runtime.container(call)
        return docker_command(self.runtime.image(call.component), args, mounts, call.network,
                              [*plain, *call.pass_env, *call.secret_env]), {**env, **plain}

    def _script(self, path: Path, argv: list[str], shard: int | None) -> Path:
        line = " ".join(shlex.quote(a) for a in argv)
        if shard is not None:
            line += f' --allow-failures --shard "$SLURM_ARRAY_TASK_ID/{shard}"'
        path.write_text(f"#!/bin/bash\n# written by duplexeval's slurm executor\nexec {line}\n")
        path.chmod(0o755)
        return path

    def _shards(self, call: Call) -> int:
        if call.component in SINGLE_JOB:
            return 1
        n = max(1, int(self.settings.get(self.settings.shards, call.component, 2)))
        known = []
        for d in call.inputs:
            rec = Path(d) / STAGE_RECORD
            if rec.is_file():
                known.append(len(read_json(rec).get("samples", {})))
        if known and max(known) == 0:
            return 1
        return min(n, max(known)) if known else n

    def _sbatch(self, call: Call, limits: Limits, gpu: bool) -> list[str]:
        s, c = self.settings, call.component
        args = ["sbatch", "--parsable", f"--job-name=duplexeval-{call.key}", "--export=ALL"]
        part = s.get(s.partition, c)
        if part:
            args.append(f"--partition={part}")
        args.append(f"--time={s.get(s.time, c) or max(1, math.ceil(limits.timeout_s / 60))}")
        if gpu and s.gpus_runner and is_runner(c):  # the model runners
            args.append(f"--gres=gpu:{s.gpus_runner}")
        args += s.sbatch_args.get("", []) + (s.sbatch_args.get(c, []) if c else [])
        return args

    # ---- run ---------------------------------------------------------------------------------

    def run(self, call: Call, limits: Limits) -> Outcome:
        if call.action != "run":
            return self.runtime.run(call, limits)
        store_root = call.config.parent.parent           # store/configs/<key>.json
        if not self._checked:
            venv = [Path(sys.prefix)] if self.runtime.name == "local" else []
            check_shared(store_root, venv)
            self._checked = True
        work = store_root / "slurm" / call.key
        work.mkdir(parents=True, exist_ok=True)
        self._cancel_leftovers(call.key)
        argv, env = self.command(call)
        env = {**os.environ, **env}
        n = self._shards(call)
        finalize_script = self._script(work / "finalize.sh", argv, None)
        tag = f"    {call.component}"
        # Ctrl-C, SIGTERM or SIGHUP (runtime.Terminated): the stage's jobs are cancelled; killed
        # outright, the orchestrator's watchdog cancels them (and holds the stage's locks till then)
        wd = watchdog()
        token = wd.watch("call", ["duplexeval.executor_slurm", "cancel", [f"duplexeval-{call.key}"]],
                         fds=call.lock_fds)
        try:
            if n > 1:
                shard_script = self._script(work / "shard.sh", argv, n)
                bad = self._run_shards(call, limits, env, work, shard_script, n, tag)
                if bad is not None:
                    return bad
            return self._run_finalize(call, limits, env, work, finalize_script, tag)
        except KeyboardInterrupt:
            cancel(f"duplexeval-{call.key}")
            raise
        finally:
            wd.drop(token)

    def _submit(self, args: list[str], env: dict) -> str:
        out = _cmd(args, env).strip()
        return out.split(";")[0]

    def _run_shards(self, call, limits, env, work, script, n, tag) -> Outcome | None:
        attempts = {i: 0 for i in range(n)}
        todo = list(range(n))
        while todo:
            array = self._submit([*self._sbatch(call, limits, True), f"--array={','.join(map(str, todo))}",
                                  f"--output={work}/shard-%a-%A.out", str(script)], env)
            log(f"{tag}: submitted {n} shards as job array {array}" if len(todo) == n else
                f"{tag}: resubmitted shards {', '.join(f'{i}/{n}' for i in todo)} as job array {array}")
            states = self._wait({f"{array}_{i}": f"shard {i}/{n}" for i in todo}, tag)
            again = []
            for i in todo:
                state, code = states[f"{array}_{i}"]
                if state == "COMPLETED" or (state == "FAILED" and code == 1):
                    continue
                attempts[i] += 1
                why = f"{state}" + (f" (exit code {code})" if code is not None and state == "FAILED" else "")
                if attempts[i] > self.settings.retries:
                    last = _last_error(work.glob(f"shard-{i}-{array}.out"))
                    self._relay(call, sorted(work.glob("shard-*.out")))
                    return Outcome(code if state == "FAILED" else None,
                                   f"shard {i}/{n} ended {why} {attempts[i]} times (job {array}_{i})", last)
                log(f"{tag}: shard {i}/{n} ended {why}; resubmitting ({attempts[i]} of {self.settings.retries})")
                again.append(i)
            todo = again
        self._relay(call, sorted(work.glob("shard-*.out")))
        return None

    def _run_finalize(self, call, limits, env, work, script, tag) -> Outcome:
        for attempt in range(self.settings.retries + 1):
            job = self._submit([*self._sbatch(call, limits, False), f"--output={work}/finalize-%j.out",
                                str(script)], env)
            log(f"{tag}: finalize step submitted as job {job}")
            state, code = self._wait({job: "finalize"}, tag)[job]
            out = work / f"finalize-{job}.out"
            if state in ("COMPLETED", "FAILED"):
                relay = self._relay(call, [out])
                return Outcome(code if code is not None else (0 if state == "COMPLETED" else 3), "",
                               relay)
            log(f"{tag}: finalize job {job} ended {state}; resubmitting")
        self._relay(call, [out])
        return Outcome(None, f"the finalize job ended {state} {self.settings.retries + 1} times", "")

    def _wait(self, jobs: dict[str, str], tag: str) -> dict[str, tuple[str, int | None]]:
        """Poll until every job is in a final state; a progress line per change of state."""
        seen: dict[str, str] = {}
        unknown: dict[str, int] = {}   # polls in a row that neither squeue nor sacct knew a job
        parents = sorted({j.split("_")[0] for j in jobs})
        delay = min(0.2, self.settings.poll_s)
        while True:
            states = job_states(parents)
            for j in jobs:
                unknown[j] = 0 if j in states else unknown.get(j, 0) + 1
                if unknown[j] >= 30 and seen.get(j) not in DONE_STATES:
                    states[j] = ("LOST", None)  # gone from squeue, and no accounting: resubmitted
            for j, label in jobs.items():
                state = states.get(j, ("PENDING" if j not in seen else seen[j], None))[0]
                if seen.get(j) != state:
                    seen[j] = state
                    log(f"{tag}: {label} {state.lower()} (job {j})")
            if all(seen[j] in DONE_STATES for j in jobs):
                return {j: states.get(j, (seen[j], None)) for j in jobs}
            time.sleep(delay)
            delay = min(self.settings.poll_s, delay * 2)

    def _cancel_leftovers(self, key: str) -> None:
        """Jobs of this stage left by a killed orchestrator: cancel them and wait till they are gone."""
        name = f"duplexeval-{key}"
        left = _cmd(["squeue", "-h", f"--name={name}", "-o", "%i"], check=False).split()
        if not left:
            return
        log(f"    cancelling {len(left)} job(s) of stage {key[:12]} left by an earlier run: {' '.join(left)}")
        _cmd(["scancel", f"--name={name}"], check=False)
        for _ in range(600):
            if not _cmd(["squeue", "-h", f"--name={name}", "-o", "%i"], check=False).split():
                return
            time.sleep(0.5)
        raise DuplexEvalError(f"jobs {' '.join(left)} of stage {key[:12]} did not end after scancel")

    def _relay(self, call: Call, outputs: list[Path]) -> str:
        """Copy the jobs' output (scrubbed, each line bounded: runtime.LogRelay) into the run's log of
        the stage; the last error line."""
        relay = LogRelay(call.log_file, quiet=True)
        for p in outputs:
            if p.is_file():
                relay.feed(f"--- {p.name}\n".encode())
                _feed_file(relay, p)
                relay.feed(b"\n")
        relay.close()
        return relay.last_error


def _feed_file(relay: LogRelay, path: Path) -> None:
    """A job's output file through a relay, a megabyte at a time (never the whole file in memory)."""
    try:
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                relay.feed(chunk)
    except OSError:
        pass


def _last_error(paths) -> str:
    """The last `error:` line of the first of these job outputs that has one (scrubbed, bounded)."""
    for p in paths:
        relay = LogRelay(None, quiet=True)
        _feed_file(relay, p)
        relay.close()
        if relay.last_error:
            return relay.last_error
    return ""


def cancel(job_name: str) -> None:
    """scancel every job of this name (a stage's shards and finalize step)."""
    _cmd(["scancel", f"--name={job_name}"], check=False)


def docker_command(image: str, args: list[str], mounts: list[tuple], network: bool,
                   env_names: list[str]) -> list[str]:
    """`docker run` of a stage with the docker runtime's container settings (runtime_docker.py):
    the same mounts, read-only root, /tmp tmpfs, no capabilities, the invoking user, no network
    unless the stage needs one; variables passed by name from the job's environment."""
    argv = ["docker", "run", "--rm", "--init", f"--user={os.getuid()}:{os.getgid()}", "--read-only",
            "--tmpfs=/tmp:rw,exec,nosuid,size=4g", "--cap-drop=ALL", "--security-opt=no-new-privileges",
            "--workdir=/tmp", "--env=HOME=/tmp",
            f"--network={(os.environ.get('DUPLEXEVAL_DOCKER_NETWORK') or 'bridge') if network else 'none'}"]
    for host, target, ro in mounts:
        host = Path(host).resolve()
        if not ro:
            host.mkdir(parents=True, exist_ok=True)
        argv.append(f"--mount=type=bind,source={host},target={target}" + (",readonly" if ro else ""))
    argv += [f"--env={n}" for n in dict.fromkeys(env_names)]
    return [*argv, image, *args]


def settings_from_options(plan, shards=(), partition=(), time_limit=(), gpus_runner=0, sbatch_args=(),
                          retries=2) -> SlurmSettings:
    """SlurmSettings from the CLI's options: each value is VALUE (every stage) or STAGE=VALUE,
    STAGE a stage name of the plan (dataset, runner, asr, judge, aggregate) or its component."""
    names = {s.name: s.component for s in plan} | {s.component: s.component for s in plan}

    def split(value: str, what: str, option: bool = False) -> tuple[str, str]:
        stage, sep, rest = value.partition("=")
        if sep and not (option and value.startswith("-")):
            if stage not in names:
                raise DuplexEvalError(f"{what} {value!r}: no stage {stage!r} (stages: {', '.join(s.name for s in plan)})")
            return names[stage], rest
        return "", value

    def per_stage(values, what, cast=str) -> dict:
        out = {}
        for v in values:
            comp, val = split(v, what)
            try:
                out[comp] = cast(val)
            except ValueError:
                raise DuplexEvalError(f"{what} {v!r}: expected a number") from None
        return out

    s = SlurmSettings(shards={"": 2, **per_stage(shards, "--slurm-shards", int)},
                      partition=per_stage(partition, "--slurm-partition"),
                      time=per_stage(time_limit, "--slurm-time"), gpus_runner=int(gpus_runner or 0),
                      retries=int(retries))
    if any(v < 1 for v in s.shards.values()):
        raise DuplexEvalError("--slurm-shards must be at least 1")
    if s.retries < 0 or s.gpus_runner < 0:
        raise DuplexEvalError("--slurm-retries and --slurm-gpus-runner must be 0 or more")
    for v in sbatch_args:
        comp, val = split(v, "--slurm-sbatch-arg", option=True)
        s.sbatch_args.setdefault(comp, []).append(val)
    return s
