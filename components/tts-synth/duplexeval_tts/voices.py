"""Voice mixes: which engine, voice and speaking rate speaks each sample.

A voice spec is {"engine", "voice", "rate"} plus an optional "weight" (how
often it is drawn; default 1). A script (fdb-script/2 `voices`) or the stage
config (`voices`) lists specs; each speaker of each sample gets one, drawn
from sha256(seed, subset/id, speaker), so the choice depends on nothing but
the seed and the sample, never on the order or the number of worker
processes. A second speaker gets a different voice than the first whenever
the mix has another one.
"""

from __future__ import annotations

import hashlib
import inspect
import math
from typing import Any

from duplexeval_common.errors import DuplexEvalError

SPEC_KEYS = {"engine", "voice", "rate", "weight"}
RATE_RANGE = (0.5, 2.0)


def parse_specs(where: str, value: Any) -> list[dict]:
    """Checked copies of a list of voice specs; a one-line DuplexEvalError naming `where`."""
    if not isinstance(value, list) or not value:
        raise DuplexEvalError(f"{where}: expected a non-empty list of {{engine, voice, rate[, weight]}}")
    out = []
    for i, spec in enumerate(value):
        at = f"{where}[{i}]"
        if not isinstance(spec, dict) or "engine" not in spec or set(spec) - SPEC_KEYS:
            raise DuplexEvalError(f"{at}: expected an object with engine and optionally voice, rate, weight")
        engine, voice = spec["engine"], spec.get("voice")
        if not isinstance(engine, str) or not engine:
            raise DuplexEvalError(f"{at}: engine must be a non-empty string")
        if voice is not None and (not isinstance(voice, str) or not voice):
            raise DuplexEvalError(f"{at}: voice must be a non-empty string or null (the engine's default)")
        rate, weight = spec.get("rate", 1.0), spec.get("weight", 1)
        if not _number(rate) or not RATE_RANGE[0] <= rate <= RATE_RANGE[1]:
            raise DuplexEvalError(f"{at}: rate must be a number in [{RATE_RANGE[0]:g}, {RATE_RANGE[1]:g}]")
        if not _number(weight) or weight <= 0:
            raise DuplexEvalError(f"{at}: weight must be a number > 0")
        out.append({"engine": engine, "voice": voice, "rate": float(rate), "weight": float(weight)})
    return out


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _draw(seed: int, key: str, speaker: str) -> float:
    """A number in [0, 1) from the seed, the sample key and the speaker name only."""
    h = hashlib.sha256(f"{seed}\n{key}\n{speaker}".encode()).digest()
    return int.from_bytes(h[:8], "big") / 2.0 ** 64


def _identity(spec: dict) -> tuple:
    return spec["engine"], spec["voice"]


def choose(specs: list[dict], seed: int, key: str, speakers: list[str]) -> dict[str, dict]:
    """{speaker: spec} for one sample: a weighted draw per speaker, in the order given; a later
    speaker avoids the (engine, voice) of earlier ones while the mix has others."""
    chosen: dict[str, dict] = {}
    for speaker in speakers:
        used = {_identity(s) for s in chosen.values()}
        pool = [s for s in specs if _identity(s) not in used] or specs
        total = sum(s["weight"] for s in pool)
        x, acc = _draw(seed, key, speaker) * total, 0.0
        pick = pool[-1]
        for s in pool:
            acc += s["weight"]
            if x < acc:
                pick = s
                break
        chosen[speaker] = {k: pick[k] for k in ("engine", "voice", "rate")}
    return chosen


def load(spec: dict):
    """The engine for a spec (cached per process by engines.load_engine)."""
    from .engines import load_engine
    name, voice, rate = spec["engine"], spec.get("voice"), float(spec.get("rate", 1.0))
    if "rate" in inspect.signature(load_engine).parameters:
        return load_engine(name, voice, rate=rate)
    if rate != 1.0:
        raise DuplexEvalError(f"tts engine {name!r} cannot change the speaking rate in this version "
                              f"(rate {rate:g} asked)")
    return load_engine(name, voice)


def record(engine: Any, spec: dict) -> dict:
    """What sample.json and the manifest record about a speaker's voice."""
    return {"engine": engine.name, "voice": engine.voice, "rate": float(spec.get("rate", 1.0)),
            "model_sha256": engine.model_sha256, "engine_sample_rate": engine.sample_rate,
            "settings": engine.settings}
