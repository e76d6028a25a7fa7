"""Load the JSON Schemas in `schemas/` and validate against them.

Every JSON file that crosses a component boundary has a schema named
`<name>.schema.json`. The shared ones (stage records, manifests, transcripts, settings) are in the
repository's `schemas/` folder, found through $DUPLEXEVAL_SCHEMAS (set in the images) or next to
the source tree (local runtime). A benchmark keeps the schemas of its own files in its package
(`SchemaSet(folder)`); a schema is then named by a `Schema` (its folder and name) instead of a
string, and every function here takes either.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Schema:
    """A schema outside the shared folder: `<folder>/<name>.schema.json`."""
    folder: str
    name: str

    def __str__(self) -> str:
        return self.name


class SchemaSet:
    """The schemas of one folder (a benchmark's own): `SchemaSet(dir)["unified"]` is a Schema."""

    def __init__(self, folder: Path):
        self.folder = str(Path(folder).resolve())

    def __getitem__(self, name: str) -> Schema:
        return Schema(self.folder, name)

    def validate(self, name: str, obj: Any, sample: str = "-") -> Any:
        return validate(self[name], obj, sample)

    def problem(self, name: str, obj: Any) -> str | None:
        return problem(self[name], obj)

    def check_output(self, name: str, obj: Any, where: str) -> None:
        check_output(self[name], obj, where)


def _path(schema: "str | Schema") -> Path:
    if isinstance(schema, Schema):
        return Path(schema.folder) / f"{schema.name}.schema.json"
    return schemas_dir() / f"{schema}.schema.json"


@functools.lru_cache(maxsize=None)
def load_schema(name: "str | Schema") -> dict:
    path = _path(name)
    if not path.is_file():
        raise DuplexEvalError(f"no schema named {str(name)!r} in {path.parent}")
    import json
    return json.loads(path.read_text())


@functools.lru_cache(maxsize=None)
def _validator(name: "str | Schema") -> jsonschema.protocols.Validator:
    # Each schema is checked against its metaschema by tests/common/test_jsonio_hashing.py
    # (they are the repository's files), not at every start: 50 ms of every stage.
    schema = load_schema(name)
    return jsonschema.validators.validator_for(schema)(schema)


def problem(name: "str | Schema", obj: Any) -> str | None:
    """The first schema violation as one line, or None when valid."""
    err = jsonschema.exceptions.best_match(_validator(name).iter_errors(obj))
    if err is None:
        return None
    where = "/".join(str(p) for p in err.absolute_path) or "(root)"
    return f"{name} schema: at {where}: {err.message}"


def validate(name: "str | Schema", obj: Any, sample: str = "-") -> Any:
    """Return obj when it satisfies schema `name`; else raise SampleError."""
    msg = problem(name, obj)
    if msg:
        raise SampleError(sample, msg)
    return obj


def check_output(name: "str | Schema", obj: Any, where: str) -> None:
    """What a component writes must satisfy its schema: a violation is a bug of that component,
    not bad input, so it is an internal error (RuntimeError), never a sample's failure."""
    msg = problem(name, obj)
    if msg:
        raise RuntimeError(f"internal error: {where} does not satisfy {msg}")
