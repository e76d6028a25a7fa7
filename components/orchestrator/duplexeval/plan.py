"""The pipeline as a list of stage specs.

A stage spec names its component, its settings, the stages (or source folders) it reads, and
whether it needs a network and which credential variables. Keys are derived from these and from
the content of the inputs, so the plan and the store alone decide what can be reused.
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
OPERATIONAL = {"runner_args": ("concurrency",)}


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


def fdb_pipeline(model: str, dataset: str, asr: str, judge: str, limit: int | None,
                 runner_args: dict | None = None, asr_args: dict | None = None,
                 judge_args: dict | None = None, environ: dict | None = None,
                 official_revision: str | None = None, subsets: list[str] | None = None) -> list[StageSpec]:
    environ = os.environ if environ is None else environ
    if limit is not None and limit < 1:
        raise DuplexEvalError(f"--limit must be at least 1 (samples per subset), got {limit}")
    m = catalog.model(model)
    ds_component, ds_source, _ = catalog.dataset(dataset)
    r_args = catalog.endpoint_args(m, {**m.runner_args, **(runner_args or {})}, environ)
    content = content_digests(r_args)
    j_args = dict(judge_args or {})
    for arg, var in JUDGE_ENDPOINTS.get(judge, {}).items():
        if arg not in j_args and environ.get(var):
            j_args[arg] = environ[var]
    return [
        StageSpec("dataset", ds_component, {"dataset": dataset, "limit": limit,
                                            **({"subsets": sorted(set(subsets))} if subsets else {})},
                  [Source(dataset, ds_source)]),
        StageSpec("runner", m.component, {"runner": m.runner, "runner_args": r_args, "seed": 0,
                                           **({"content": content} if content else {})},
                  ["dataset"], network=m.network, keys=m.keys),
        StageSpec("asr", "asr-aligner", {"backend": asr, "backend_args": dict(asr_args or {})},
                  ["dataset", "runner"]),
        StageSpec("judge", "judge", {"judge": judge, "judge_args": j_args}, ["dataset", "asr"],
                  network=judge not in OFFLINE_JUDGES, keys=JUDGE_KEYS.get(judge, ())),
        StageSpec("aggregate", "aggregator",
                  {"benchmark": "fdb-v1", **({"official_revision": official_revision} if official_revision else {})},
                  ["dataset", "runner", "asr", "judge"]),
    ]


def endpoints(spec: StageSpec) -> list[str]:
    """The URLs a networked stage will reach (runner `url`, judge `base_url`)."""
    args = spec.config.get("runner_args") or spec.config.get("judge_args") or {}
    return [v for k, v in sorted(args.items()) if k in ("url", "base_url") and isinstance(v, str) and v]
