"""The duplex-runner stage: one runner session per sample.

Config: `{"runner": name, "runner_args": {...}, "seed": 0}`. Per sample it reads `input.wav`
(any rate), renders the runner's reply on its clock (clocks.py) and writes `output.wav`
(exactly the input's length and rate), `events.jsonl` and `runner.json`. The runner is built
once per stage (argument and dependency checks) and loads its models on the first sample
that needs them, so a resumed stage whose samples are all done loads nothing; only the
samples that failed run again.

`runner_args` the core takes for itself (CORE, declared as settings.py Settings; never passed to the runner):
`concurrency`, how many samples run at once (network runners: one session each; default 1),
`drift_limit_ms`, the send drift past which a realtime sample is ineligible (default 20), and
`drift_retries`, how many more times such a session is run in the same run before its sample is
ineligible (default 2).
A round sample of a multi-round benchmark (round.json + history.wav; rounds.py) is run the same
way, its history met as the runner's `history` mode says, its output before the round's start the
ground-truth history; runner.json then has `round`.
A realtime session whose pacing drifted past the limit is run again at once, up to `drift_retries`
times, each try from the start on a new connection; only the last try's output and events are
written (nothing of an earlier try reaches a file but its drift summary). runner.json's stats carry
`tries` and `drift_tries` (per try: frames sent, drift p99 and max, late frames, and the reason of a
try that drifted), and the kept events.jsonl a `retry` event per earlier try. A sample whose last
try drifted too is written with `"status": "ineligible"` and the reason in runner.json: the
aggregator leaves it out and counts it in coverage, and the next run tries it again. Lockstep and
in-process sessions have no drift and never retry.

Paired runs (`sessions`): a benchmark's plan may ask for each sample to be run on several inputs,
`[{"name": "overlap", "prefix": ""}, {"name": "clean", "prefix": "clean_"}]`. Each is its own
session, one after the other, with the same settings and seed: `<prefix>input.wav` in,
`<prefix>output.wav`, `<prefix>events.jsonl` and `<prefix>runner.json` out, the record naming its
session and the sha256 of the input that produced it. A session marked `optional` is skipped where
its input is absent (e.g. a counterfactual twin made for one task only); any other missing input
fails the sample with one line. Without `sessions` a sample is one session on input.wav and its
files are named as above with no prefix.
"""

from __future__ import annotations

import random
import sys
import threading
from typing import Any

import numpy as np

from duplexeval_common.errors import DuplexEvalError, SampleError
from duplexeval_common.hashing import sha256_file
from duplexeval_common.progress import log as log_line
from duplexeval_common.secrets import redact
from duplexeval_common.stage import SampleContext, Stage

from . import __version__, deps, live, rounds
from .events import EventLog
from .clocks import frame_samples, prepare_for_realtime
from .harness import render
from .protocol import DRIFT_LIMIT_MS, DRIFT_RETRIES, history_mode, kind_of
from .registry import EXAMINERS, RUNNERS, examiner_requires, requires
from .settings import Setting, Spec

COMPONENT = "duplex-runner"
DEFAULTS: dict[str, Any] = {"runner": "silence", "runner_args": {}, "seed": 0, "content": {}, "sessions": None,
                            "examiner": None}
# The runner_args the core takes for itself (never passed to the runner), declared like a runner's.
CORE = Spec(
    Setting("concurrency", int, 1, "samples at once, one session each (network runners only)", ge=1, le=256,
            operational=True),
    Setting("drift_limit_ms", float, DRIFT_LIMIT_MS, "realtime clock: the send drift past which a sample is "
            "ineligible, in ms", gt=0, le=10000),
    Setting("drift_retries", int, DRIFT_RETRIES, "realtime clock: how many more times a session whose drift "
            "passed drift_limit_ms is run, at once, before its sample is recorded ineligible (0: never)",
            ge=0, le=10, operational=True),
)
# What runner.json's drift_tries keeps of each try (clocks.drift_stats's numbers).
TRY_STATS = ("frames_sent", "drift_p99_ms", "drift_max_ms", "drift_late_frames")
_SETUP = threading.Lock()


def resolve_config(config: dict) -> dict:
    unknown = sorted(set(config) - set(DEFAULTS))
    if unknown:
        raise DuplexEvalError(f"config: unknown keys {', '.join(unknown)} (known: {', '.join(DEFAULTS)})")
    cfg = {**DEFAULTS, **config}
    if not isinstance(cfg["runner"], str):
        raise DuplexEvalError("config: runner must be a string")
    if not isinstance(cfg["runner_args"], dict):
        raise DuplexEvalError("config: runner_args must be an object")
    if cfg["seed"] is not None and (not isinstance(cfg["seed"], int) or isinstance(cfg["seed"], bool)):
        raise DuplexEvalError("config: seed must be an integer or null")
    cfg["sessions"] = check_sessions(cfg["sessions"])
    cfg["examiner"] = check_examiner(cfg["examiner"])
    if cfg["examiner"] is not None and cfg["sessions"] is not None:
        raise DuplexEvalError("config: a live session (examiner) has no paired sessions")
    core = {**CORE.defaults(), **{k: v for k, v in cfg["runner_args"].items() if k in CORE}}
    CORE.check(f"runner {cfg['runner']!r}", core)
    cfg["core"] = core
    cfg["runner_args"] = {k: v for k, v in cfg["runner_args"].items() if k not in CORE}
    return cfg


def check_sessions(sessions: Any) -> list[dict] | None:
    """The `sessions` setting, checked: None (one session on input.wav) or a list of objects with a
    unique name and a unique prefix of letters, digits and underscores (empty for the plain names)."""
    if sessions is None:
        return None
    if not isinstance(sessions, list) or not sessions:
        raise DuplexEvalError("config: sessions must be a non-empty list of {name, prefix} objects")
    names, prefixes = set(), set()
    for i, s in enumerate(sessions):
        if not isinstance(s, dict) or set(s) - {"name", "prefix", "optional"} or not {"name", "prefix"} <= set(s):
            raise DuplexEvalError(f"config: sessions[{i}] must be an object with name and prefix (and optional)")
        name, prefix = s["name"], s["prefix"]
        if not (isinstance(name, str) and name.isascii() and name.replace("-", "").replace("_", "").isalnum()):
            raise DuplexEvalError(f"config: sessions[{i}] name must be letters, digits, - or _ (got {name!r})")
        if not (isinstance(prefix, str) and prefix.isascii() and (prefix == "" or prefix.replace("_", "").isalnum())):
            raise DuplexEvalError(f"config: sessions[{i}] prefix must be letters, digits or _ (got {prefix!r})")
        if name in names or prefix in prefixes:
            raise DuplexEvalError(f"config: sessions[{i}] repeats a name or prefix ({name!r}, {prefix!r})")
        if not isinstance(s.get("optional", False), bool):
            raise DuplexEvalError(f"config: sessions[{i}] optional must be true or false")
        names.add(name)
        prefixes.add(prefix)
    return [dict(s) for s in sessions]


def check_examiner(ex: Any) -> dict | None:
    """The `examiner` setting: None (the user side is input.wav), or {"engine": name, "args": {...},
    "duration_s": seconds or null} (live sessions, live.py: each sample's live.json is the examiner's
    script; duration_s, when given, is every session's length instead of live.json's)."""
    if ex is None:
        return None
    if not isinstance(ex, dict) or set(ex) - {"engine", "args", "duration_s"} or not isinstance(ex.get("engine"), str):
        raise DuplexEvalError("config: examiner must be an object {engine, args, duration_s}")
    if not isinstance(ex.get("args", {}), dict):
        raise DuplexEvalError("config: examiner args must be an object")
    d = ex.get("duration_s")
    if d is not None and (isinstance(d, bool) or not isinstance(d, (int, float)) or not 0 < d <= live.MAX_DURATION_S):
        raise DuplexEvalError(f"config: examiner duration_s must be a number in (0, {live.MAX_DURATION_S:g}], got {d!r}")
    return {"engine": ex["engine"], "args": dict(ex.get("args", {})), "duration_s": d}


def build_examiner(cfg: dict):
    ex = cfg["examiner"]
    if ex is None:
        return None
    if ex["engine"] not in EXAMINERS.names():
        known = ", ".join(EXAMINERS.names()) or "none"
        raise DuplexEvalError(f"examiner {ex['engine']!r} is not installed in this runner's environment (installed: "
                              f"{known}); the examiners come with their runner packages (cascade: components/runners/"
                              "cascade), so in the docker runtime only the images of those packages carry one: run "
                              "this model's live sessions in the local runtime")
    cls = EXAMINERS.load(ex["engine"])
    deps.require(f"examiner {ex['engine']!r}", examiner_requires(ex["engine"]))
    try:
        return cls(seed=cfg["seed"], **ex["args"])
    except TypeError as exc:
        raise DuplexEvalError(f"examiner {ex['engine']!r}: bad args ({exc})") from None


def build_runner(cfg: dict):
    cls = RUNNERS.load(cfg["runner"])
    deps.require(f"runner {cfg['runner']!r}", requires(cfg["runner"]))  # all missing, one line
    try:
        runner = cls(seed=cfg["seed"], **cfg["runner_args"])
    except TypeError as exc:
        raise DuplexEvalError(f"runner {cfg['runner']!r}: bad runner_args ({exc})") from None
    if kind_of(runner) == "stream":
        runner.drift_limit_ms = float(cfg["core"]["drift_limit_ms"])
    if kind_of(runner) != "offline" and runner.in_sr:
        frame_samples(runner, runner.in_sr)  # a frame of no whole sample is a setting error, now
    history_mode(runner)  # a history mode its kind cannot have: one line, before any sample runs
    if cfg["core"]["concurrency"] > 1 and kind_of(runner) != "stream":
        raise DuplexEvalError(f"runner {cfg['runner']!r} runs in process: concurrency applies to network "
                              "runners only (leave it at 1)")
    return runner


def seed_everything(seed: int | None) -> None:
    if seed is None:
        return
    random.seed(seed)
    np.random.seed(seed % 2**32)
    if "torch" in sys.modules:
        sys.modules["torch"].manual_seed(seed)


def run_sample(ctx: SampleContext, runner, cfg: dict, examiner=None) -> None:
    """Every session of the sample (`sessions`; one on input.wav without it), one after the other;
    with an examiner, the one live session of its live.json."""
    if examiner is not None:
        run_live_session(ctx, runner, examiner, cfg)
        return
    sessions = cfg["sessions"]
    if sessions is None:
        run_session(ctx, runner, cfg, "", None)
        return
    for s in sessions:
        if not ctx.has_input(f"{s['prefix']}input.wav"):
            if s.get("optional"):
                continue
            raise SampleError(ctx.id, f"{s['prefix']}input.wav is missing (the input of session {s['name']!r})")
    for s in sessions:
        if ctx.has_input(f"{s['prefix']}input.wav"):
            run_session(ctx, runner, cfg, s["prefix"], s["name"])


def prepare(runner, cfg: dict, examiner=None, seed: int | None | str = "stage") -> bool:
    """Models loaded (once), the seed (the stage's, or `seed`) set where sessions do not run side by
    side; whether the runner is on the realtime clock."""
    realtime = kind_of(runner) == "stream" and runner.clock == "realtime"
    with _SETUP:
        runner.setup()
        if examiner is not None:
            examiner.setup()
        if realtime:
            prepare_for_realtime()
    if kind_of(runner) != "stream":  # sessions running side by side share no global seed
        seed_everything(cfg["seed"] if seed == "stage" else seed)
    return realtime


def with_retries(attempt, realtime: bool, deterministic: bool, cfg: dict, what: str):
    """`attempt(log)` once, or (realtime) again while its pacing drifted, up to drift_retries more
    times; (its result, the kept try's log), the log's stats carrying tries and drift_tries."""
    tries: list[dict] = []  # realtime: each try's drift (TRY_STATS), in order
    while True:
        log = EventLog(record_wall=not deterministic)
        for earlier in tries:  # the kept log says what the tries before it were
            log.emit("retry", 0.0, **earlier)
        result = attempt(log)
        if not realtime:
            break
        drifted = log.stats.get("ineligible")
        tries.append({"try": len(tries) + 1, **{k: log.stats[k] for k in TRY_STATS},
                      **({"reason": drifted} if drifted else {})})
        if not drifted or len(tries) > cfg["core"]["drift_retries"]:
            break
        log_line(f"{what}: try {len(tries)} of {cfg['core']['drift_retries'] + 1} drifted ({drifted}); "
                 "running it again")
    if realtime:
        log.stats.update(tries=len(tries), drift_tries=tries)
        if len(tries) > 1 and "ineligible" in log.stats:
            log.stats["ineligible"] += f" (each of its {len(tries)} tries drifted past the limit)"
    return result, log


def session_record(ctx: SampleContext, runner, cfg: dict, log: EventLog, sr: int, duration: float,
                   deterministic: bool, what: str) -> dict:
    """runner.json of a finished session (the stats event logged); an ineligible session marks the
    sample for the next run."""
    timing = {} if deterministic else {"wall_s": log.elapsed(), "rtf": log.elapsed() / duration}
    log.emit("stats", duration, **timing, **log.stats)
    in_sr = runner.in_sr or sr
    stats = dict(log.stats)
    ineligible = stats.pop("ineligible", None)
    record = {
        "runner": runner.name,
        "clock": runner.clock,
        "kind": kind_of(runner),
        "status": "ineligible" if ineligible else "ok",
        "input_sr": sr,
        "output_sr": sr,
        "duration_s": round(duration, 6),
        "settings": {**runner.settings(), "runner_in_sr": in_sr, "runner_out_sr": runner.out_sr or in_sr},
        "models": {k: v for k, v in runner.models().items() if v is not None},
        "stats": stats,
        "seed": cfg["seed"],
        "deterministic": deterministic,
    }
    if ineligible:
        record["ineligible"] = {"code": "drift", "reason": ineligible}
        ctx.retry = f"ineligible: {ineligible}"  # kept and scored as ineligible; the next run tries again
        log_line(f"ineligible: {what}: {ineligible}")
    if getattr(runner, "profile", None):
        record["profile"] = runner.profile
    return record


def write_session(ctx: SampleContext, prefix: str, log: EventLog, record: dict) -> None:
    # Whatever a runner put in its settings or events, no credential is written: a URL's password or
    # secret query parameter, a secret-named setting, a key of the environment (secrets.redact).
    ctx.write_jsonl(f"{prefix}events.jsonl", redact(log.rows), "runner-event")
    ctx.write_json(f"{prefix}runner.json", redact(record), "runner-record")


def run_session(ctx: SampleContext, runner, cfg: dict, prefix: str, name: str | None) -> None:
    source = f"{prefix}input.wav"
    user, sr = ctx.read_wav(source, channels=None)  # any rate; several channels are mixed down
    round_ = rounds.load(ctx, len(user), sr)  # None unless the sample has round.json (checked first)
    realtime = prepare(runner, cfg)
    deterministic = bool(getattr(runner, "deterministic", False))
    what = ctx.id if name is None else f"{ctx.id} (session {name!r})"
    (out, session), log = with_retries(
        lambda log: render(runner, user, sr, log, key=ctx.sample.key, round_=round_, task=ctx.sample.task),
        realtime, deterministic, cfg, what)
    record = session_record(ctx, runner, cfg, log, sr, len(user) / sr, deterministic, what)
    if name is not None:
        record["session"] = {"name": name, "input": source, "input_sha256": sha256_file(ctx.input_path(source))}
    if session.round_record is not None:
        record["round"] = session.round_record
    ctx.write_wav(f"{prefix}output.wav", out, sr)
    write_session(ctx, prefix, log, record)


def run_live_session(ctx: SampleContext, runner, examiner, cfg: dict) -> None:
    """A live sample (live.py): the examiner talks with the model for live.json's duration; writes
    input.wav (the examiner's side as the model heard it), output.wav, mix.wav (stereo: examiner
    left, model right), examiner.json, events.jsonl and runner.json (with `live`)."""
    script = live.check_script(ctx.read_json("live.json"), ctx.id)
    if cfg["examiner"]["duration_s"] is not None:  # the harness's session length replaces the task's
        script = {**script, "duration_s": float(cfg["examiner"]["duration_s"])}
    # the session's seed: the stage's plus live.json's (an epoch's), for the model and the examiner
    seed = None if cfg["seed"] is None else cfg["seed"] + int(script.get("seed", 0))
    realtime = prepare(runner, cfg, examiner, seed)
    deterministic = bool(getattr(runner, "deterministic", False)) and bool(getattr(examiner, "deterministic", False))
    (user, out, _session, exam), log = with_retries(
        lambda log: live.render_live(runner, examiner, script, log, key=ctx.sample.key, seed=seed,
                                     task=ctx.sample.task),
        realtime, deterministic, cfg, ctx.id)
    sr = int(script["sample_rate"])
    record = session_record(ctx, runner, cfg, log, sr, len(user) / sr, deterministic, ctx.id)
    record["seed"] = seed
    record["live"] = {"examiner": examiner.name, "settings": examiner.settings(),
                      "models": {k: v for k, v in examiner.models().items() if v is not None},
                      "script_sha256": sha256_file(ctx.input_path("live.json"))}
    ctx.write_wav("input.wav", user, sr)
    ctx.write_wav("output.wav", out, sr)
    ctx.write_wav("mix.wav", live.stereo(user, out), sr)
    ctx.write_json("examiner.json", redact(exam), "examiner")
    write_session(ctx, "", log, record)


def make_stage(config: dict) -> Stage:
    cfg = resolve_config(config)
    state: dict[str, Any] = {}

    def setup(_config: dict) -> None:
        state["runner"] = build_runner(cfg)
        state["examiner"] = build_examiner(cfg)

    def process(ctx: SampleContext) -> None:
        run_sample(ctx, state["runner"], cfg, state.get("examiner"))

    def check(_config: dict) -> None:
        build_runner(cfg)
        build_examiner(cfg)

    def finalize(sctx) -> None:
        """Live sessions: the examiner's LLM requests of this invocation (stage.json's notes, not an
        output: a session computed and one replayed from the request cache are the same bytes)."""
        usage = getattr(state.get("examiner"), "usage", None)
        if usage is not None:
            sctx.invocation["examiner_llm"] = usage()

    return Stage(COMPONENT, __version__, process, setup=setup, check=check,
                 finalize=finalize if cfg["examiner"] is not None else None, workers=cfg["core"]["concurrency"])
