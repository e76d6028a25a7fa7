"""Stage specs, and the planner a benchmark's `plan` hook builds its stages with.

A stage spec names its component, its settings, the stages (or source folders) it reads, and
whether it needs a network and which credential variables. Keys are derived from these and from
the content of the inputs, so the plan and the store alone decide what can be reused.

A benchmark's plan (its `plan(planner, options)` hook) gets a `Planner`: the run's request (model,
dataset, ASR, judge, limit, subsets and each component's arguments) and the stages every plan
shares (the dataset, the model's runner, the ASR, the judge, any other component). Every stage but
the runner's names the benchmark in its settings, so its component runs that benchmark's hooks.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from duplexeval_common.errors import DuplexEvalError

from . import catalog

# Judges that call an API: their endpoint settings come from the environment when not given, and
# their key is passed by name.
JUDGE_ENDPOINTS = {"official-gpt": {"base_url": "OPENAI_BASE_URL"}, "openai": {"base_url": "OPENAI_BASE_URL"}}
JUDGE_KEYS = {"official-gpt": ("OPENAI_API_KEY",), "openai": ("OPENAI_API_KEY",)}
OFFLINE_JUDGES = ("none", "embedding-relevance", "local-llm")


@dataclass(frozen=True)
class Source:
    """A folder of the repository read by a stage (e.g. dataset scripts)."""
    name: str
    path: Path


@dataclass
class StageSpec:
    name: str
    component: str
    config: dict
    inputs: list = field(default_factory=list)  # names of earlier stages, or Source
    network: bool = False
    keys: tuple[str, ...] = ()  # credential variables passed by name to this stage

    def host_paths(self) -> list[str]:
        """Files or folders on this machine that a setting names (a CA certificate, a model
        folder): the docker runtime mounts each read-only at the same path."""
        args = {**(self.config.get("runner_args") or {}), **(self.config.get("judge_args") or {}),
                **(self.config.get("backend_args") or {})}
        return sorted({v for k, v in args.items() if k in PATH_ARGS and isinstance(v, str)
                       and os.path.isabs(v) and os.path.exists(v)})


# Settings that change how a stage runs, not what it computes: left out of its key (key_config), so
# a rerun with another value reuses the stage and repairs only its failed samples. They still reach
# the component in its config.
OPERATIONAL = {"runner_args": ("concurrency", "drift_retries")}


def key_config(config: dict) -> dict:
    out = dict(config)
    for group, names in OPERATIONAL.items():
        if isinstance(out.get(group), dict):
            out[group] = {k: v for k, v in out[group].items() if k not in names}
    return out


# Settings naming files whose content the output depends on, beyond the stage's inputs: their
# sha256 goes into the runner's config (`content`), so changed files change the stage key.
CONTENT_ARGS = ("tree",)


def content_digests(args: dict) -> dict:
    from duplexeval_common.hashing import sha256_tree
    return {k: sha256_tree(Path(v)) for k, v in sorted(args.items())
            if k in CONTENT_ARGS and isinstance(v, str) and Path(v).is_dir()}


# Settings whose value is a path on this machine (see StageSpec.host_paths).
PATH_ARGS = ("ca_file", "model_dir", "model", "voice_prompt_dir", "tree")


def check_limit(limit: int | None) -> None:
    if limit is not None and limit < 1:
        raise DuplexEvalError(f"--limit must be at least 1 (samples, or MTR dialogues, per subset), got {limit}")


def dataset_stage(dataset: str, limit: int | None, subsets: list[str] | None) -> StageSpec:
    """The stage that makes the samples of a dataset (built-in scripts or an imported folder)."""
    check_limit(limit)
    ds_component, ds_source, _ = catalog.dataset(dataset)
    return StageSpec("dataset", ds_component, {"dataset": dataset, "limit": limit,
                                               **({"subsets": sorted(set(subsets))} if subsets else {})},
                     [Source(dataset, ds_source)])


def runner_stage(model: str, runner_args: dict | None, inputs: list, environ: dict,
                 sessions: list[dict] | None = None, examiner: dict | None = None) -> StageSpec:
    """The model's runner stage: its catalog settings, the endpoint from the environment, the
    content digest of the folders its settings name; `sessions` when the benchmark runs each
    sample on several inputs (the runner core's paired runs); `examiner` ({"engine", "args"}) when
    each sample is a live session (the runner core's live.py). An examiner whose LLM is an endpoint
    (args llm "openai") makes the stage networked and passes its key's variable by name."""
    m = catalog.model(model)
    r_args = catalog.endpoint_args(m, {**m.runner_args, **(runner_args or {})}, environ)
    content = content_digests(r_args)
    network, keys = m.network, tuple(m.keys)
    # a networked runner told to read its key from another variable (runner_args api_key_env, as
    # half-duplex's and the cascade's endpoints take it) gets that variable passed by name too
    if network and isinstance(r_args.get("api_key_env"), str) and r_args["api_key_env"] not in keys:
        keys += (r_args["api_key_env"],)
    if examiner is not None and (examiner.get("args") or {}).get("llm") == "openai":
        network = True
        keys += (str(examiner["args"].get("api_key_env", "OPENAI_API_KEY")),)
    return StageSpec("runner", m.component, {"runner": m.runner, "runner_args": r_args, "seed": 0,
                                              **({"content": content} if content else {}),
                                              **({"sessions": sessions} if sessions else {}),
                                              **({"examiner": examiner} if examiner else {})},
                     inputs, network=network, keys=keys)


def judge_stage(judge: str, judge_args: dict | None, inputs: list, environ: dict, extra: dict | None = None) -> StageSpec:
    """The judge stage; an API judge's endpoint from the environment when not given, its key by name."""
    j_args = dict(judge_args or {})
    for arg, var in JUDGE_ENDPOINTS.get(judge, {}).items():
        if arg not in j_args and environ.get(var):
            j_args[arg] = environ[var]
    return StageSpec("judge", "judge", {"judge": judge, "judge_args": j_args, **(extra or {})}, inputs,
                     network=judge not in OFFLINE_JUDGES, keys=JUDGE_KEYS.get(judge, ()))


def endpoints(spec: StageSpec) -> list[str]:
    """The URLs a networked stage will reach (runner `url` or `llm_url`, judge `base_url`)."""
    args = spec.config.get("runner_args") or spec.config.get("judge_args") or {}
    return [v for k, v in sorted(args.items()) if k in ("url", "llm_url", "base_url") and isinstance(v, str) and v]


@dataclass
class Planner:
    """What a benchmark's plan builds its stages with (module docstring)."""
    benchmark: str
    model: str
    dataset: str
    asr: str
    judge: str
    limit: int | None = None
    subsets: list[str] | None = None
    runner_args: dict = field(default_factory=dict)
    asr_args: dict = field(default_factory=dict)
    judge_args: dict = field(default_factory=dict)
    segmenter_args: dict = field(default_factory=dict)
    environ: dict | None = None

    def __post_init__(self) -> None:
        check_limit(self.limit)
        if self.environ is None:
            self.environ = dict(os.environ)

    def refuse(self, what: str, message: str) -> None:
        """A one-line error when the request gives `what` (e.g. "segmenter_args") this plan has no use for."""
        if getattr(self, what):
            raise DuplexEvalError(message)

    def stage(self, name: str, component: str, config: dict, inputs: list, network: bool = False,
              keys: tuple[str, ...] = ()) -> StageSpec:
        """A stage of `component` that runs this benchmark's hooks."""
        return StageSpec(name, component, {"benchmark": self.benchmark, **config}, inputs, network, keys)

    def dataset_stage(self, options: dict | None = None) -> StageSpec:
        """The dataset stage; `options`: the benchmark's dataset options, given to its `variants`
        hook (absent when None, so the stage key is unchanged)."""
        spec = dataset_stage(self.dataset, self.limit, self.subsets)
        spec.config = {"benchmark": self.benchmark, **spec.config, **({"options": options} if options else {})}
        return spec

    def runner_stage(self, inputs: list, sessions: list[dict] | None = None,
                     examiner: dict | None = None) -> StageSpec:
        """The model's runner (the runner core runs no benchmark hook: its settings name none).
        `sessions`: run each sample once per input, `[{"name", "prefix", "optional"?}]` (stage.py
        of the runner core). `examiner`: each sample is a live session with this examiner,
        `{"engine": name, "args": {...}}` (live.py of the runner core; the sample's live.json is its
        script)."""
        return runner_stage(self.model, self.runner_args, inputs, self.environ, sessions, examiner)

    def asr_stage(self, name: str, inputs: list, **config) -> StageSpec:
        return self.stage(name, "asr-aligner", {"backend": self.asr, "backend_args": dict(self.asr_args or {}),
                                                **config}, inputs)

    def judge_stage(self, inputs: list, **extra) -> StageSpec:
        return judge_stage(self.judge, self.judge_args, inputs, self.environ, {"benchmark": self.benchmark, **extra})


def plan_of(bench, planner: Planner, options: dict | None = None) -> list[StageSpec]:
    """The benchmark's stages for this request (its plan hook), its own settings checked first,
    and the judge one the benchmark declares."""
    judges = tuple(bench.judges) or (bench.default_judge,)
    if planner.judge not in judges:
        raise DuplexEvalError(f"benchmark {bench.name} has no judge {planner.judge!r} (its judges: "
                              f"{', '.join(judges)})")
    specs = bench.hook("plan")(planner, bench.check_options(options))
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise DuplexEvalError(f"benchmark {bench.name}: its plan names a stage twice ({', '.join(names)})")
    return specs
