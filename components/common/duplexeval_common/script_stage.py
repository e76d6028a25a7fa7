"""What the dataset stages share that build samples from a folder of text scripts (a benchmark's
`dataset` hook, run by tts-synth) or copy an imported dataset: the one input folder, the samples a
stage's `subsets`, `limit` and `samples` settings keep, and the rows of the manifest it writes.

A script here is an object with `subset`, `task`, `entries` (its sample entries) and `sha256`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Mapping

from .errors import DuplexEvalError
from .hashing import sha256_json
from .samples import SAMPLES, Inputs, Sample, select_subsets

VOICE_ROW_KEYS = ("engine", "voice", "rate", "model_sha256")


def script_folder(inputs: Inputs, example: str | None = None) -> Path:
    """The stage's one input: a dataset's script folder (example: one, named in the error)."""
    if len(inputs.dirs) != 1:
        raise DuplexEvalError("tts-synth needs exactly one --input: the dataset's script folder"
                              + (f" (e.g. {example})" if example else ""))
    return Path(inputs.dirs[0])


def keep_subsets(scripts: dict, subsets) -> dict:
    """The scripts of the subsets a `subsets` setting keeps (None: all)."""
    keep = select_subsets(list(scripts), subsets, "tts-synth")
    return {k: v for k, v in scripts.items() if k in keep}


def script_samples(scripts: Mapping, limit: int | None, only: list[str] | None) -> list[Sample]:
    """One sample per script entry (id: its index), subset by subset: the first `limit` of each
    script, and of those only the keys `only` names (None: all)."""
    samples = [Sample(subset, str(i), script.task) for subset, script in sorted(scripts.items())
               for i in range(len(script.entries) if limit is None else min(limit, len(script.entries)))]
    if only is None:
        return samples
    keys = set(only)   # only these (after limit), in the dataset's order
    check_known(keys, {s.key for s in samples})
    return [s for s in samples if s.key in keys]


def check_known(keys: set[str], known: set[str]) -> None:
    """Every key a `samples` setting names is a sample of the scripts (within limit)."""
    unknown = keys - known
    if unknown:
        raise DuplexEvalError(f"setting samples names {len(unknown)} sample(s) the scripts do not have "
                              f"(within limit), e.g. {sorted(unknown)[0]}")


def failed_row(sample: Sample, task: str | None, status: Mapping, default_reason: str) -> dict:
    """The manifest row of a sample that was not built: listed, so later stages and the scores
    count it as failed, not as absent."""
    return {"subset": sample.subset, "id": sample.id, "task": task, "status": "failed",
            "reason": status.get("reason", default_reason)}


def each_built(samples: Iterable[Sample], sctx, rows: list) -> Iterable[tuple[Sample, Path]]:
    """(sample, its folder in the stage's output) of each sample built, in order; a sample that was
    not is given its manifest row (failed_row) in `rows` instead, in the same order."""
    for s in samples:
        status = sctx.statuses.get(s.key, {})
        if status.get("status") != "ok":
            rows.append(failed_row(s, s.task, status, "not built"))
            continue
        yield s, sctx.output / SAMPLES / s.subset / s.id


def voice_row(record: Mapping) -> dict:
    """A voice as a manifest row names it: engine, voice, rate, model and settings sha256."""
    return {k: record[k] for k in VOICE_ROW_KEYS} | {"settings_sha256": sha256_json(record["settings"])}


def scripts_version(scripts: Mapping) -> str:
    """A dataset's version: of the sha256 of the scripts its samples come from."""
    return sha256_json({sub: sc.sha256 for sub, sc in sorted(scripts.items())})[:16]


def used_scripts(scripts: Mapping, rows: Iterable[Mapping]) -> dict:
    """The scripts some manifest row comes from."""
    subsets = {r["subset"] for r in rows}
    return {sub: sc for sub, sc in scripts.items() if sub in subsets}


def spec_id(spec: Mapping) -> str:
    """A voice spec's key among the voices loaded: engine:voice@rate."""
    return f"{spec['engine']}:{spec.get('voice') or 'default'}@{float(spec.get('rate', 1.0)):g}"
