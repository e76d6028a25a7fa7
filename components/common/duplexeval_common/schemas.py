"""Load the JSON Schemas in `schemas/` and validate against them.

Every JSON file that crosses a component boundary has a schema named
`<name>.schema.json`. The folder is found through $DUPLEXEVAL_SCHEMAS (set in
the images) or next to the source tree (local runtime).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

import jsonschema

from .errors import DuplexEvalError, SampleError


def schemas_dir() -> Path:
    env = os.environ.get("DUPLEXEVAL_SCHEMAS")
    candidates = [Path(env)] if env else []
    candidates.append(Path(__file__).resolve().parents[3] / "schemas")
    for c in candidates:
        if c.is_dir():
            return c
    raise DuplexEvalError("schemas folder not found: set DUPLEXEVAL_SCHEMAS")


@functools.lru_cache(maxsize=None)
def load_schema(name: str) -> dict:
    path = schemas_dir() / f"{name}.schema.json"
    if not path.is_file():
        raise DuplexEvalError(f"no schema named {name!r} in {path.parent}")
    import json
    return json.loads(path.read_text())


@functools.lru_cache(maxsize=None)
def _validator(name: str) -> jsonschema.protocols.Validator:
    schema = load_schema(name)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def problem(name: str, obj: Any) -> str | None:
    """The first schema violation as one line, or None when valid."""
    err = jsonschema.exceptions.best_match(_validator(name).iter_errors(obj))
    if err is None:
        return None
    where = "/".join(str(p) for p in err.absolute_path) or "(root)"
    return f"{name} schema: at {where}: {err.message}"


def validate(name: str, obj: Any, sample: str = "-") -> Any:
    """Return obj when it satisfies schema `name`; else raise SampleError."""
    msg = problem(name, obj)
    if msg:
        raise SampleError(sample, msg)
    return obj
