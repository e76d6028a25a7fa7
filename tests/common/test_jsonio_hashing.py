import os

import jsonschema
import pytest

from duplexeval_common import hashing, jsonio, schemas
from duplexeval_common.errors import SampleError
from duplexeval_common.secrets import REDACTED, redact


def test_canonical_json_is_order_independent():
    assert jsonio.dumps({"b": 1, "a": [1, 2]}) == jsonio.dumps({"a": [1, 2], "b": 1})
    assert hashing.sha256_json({"b": 1, "a": 2}) == hashing.sha256_json({"a": 2, "b": 1})


def test_nan_is_refused():
    with pytest.raises(ValueError):
        jsonio.dumps({"x": float("nan")})


def test_atomic_write_leaves_no_temp_on_failure(tmp_path, monkeypatch):
    target = tmp_path / "out.json"
    jsonio.atomic_write_json(target, {"a": 1})

    def boom(*a, **k):
        raise OSError("disk full")
    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        jsonio.atomic_write_json(target, {"a": 2})
    assert jsonio.read_json(target) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_tree_hash_changes_with_content_and_ignores_caches(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text("x = 1\n")
    h1 = hashing.sha256_tree(tmp_path / "pkg")
    (tmp_path / "pkg" / "__pycache__").mkdir()
    (tmp_path / "pkg" / "__pycache__" / "m.pyc").write_bytes(b"junk")
    assert hashing.sha256_tree(tmp_path / "pkg") == h1
    (tmp_path / "pkg" / "Dockerfile").write_text("FROM x\n")  # packaging, not computation
    (tmp_path / "pkg" / "README.md").write_text("docs\n")
    assert hashing.sha256_tree(tmp_path / "pkg") == h1
    (tmp_path / "pkg" / "m.py").write_text("x = 2\n")
    assert hashing.sha256_tree(tmp_path / "pkg") != h1


def test_schema_errors_are_one_line_with_sample():
    # a benchmark's own schema (a SchemaSet's) and a shared one
    from duplexeval_fdb_v1.schemas import SCHEMAS
    SCHEMAS.validate("pause", [{"text": "[PAUSE]", "timestamp": [1.0, 2.0]}])
    with pytest.raises(SampleError) as e:
        schemas.validate(SCHEMAS["pause"], [{"text": "[PAUSE]", "timestamp": [1.0]}], "synthetic_pause_handling/3")
    assert str(e.value).startswith("synthetic_pause_handling/3: pause schema: at 0/timestamp")
    with pytest.raises(SampleError) as e:
        schemas.validate("output", {"text": 3}, "s/1")
    assert str(e.value).startswith("s/1: output schema: at ")


def test_every_schema_is_valid_draft_2020_12():
    from duplexeval_common.benchmarks import all_benchmarks
    sets = [(schemas.schemas_dir(), lambda n: n)]
    for b in all_benchmarks():  # and every benchmark's own
        folder = b.resource("schemas")
        if folder.is_dir():
            sets.append((folder, lambda n, f=folder: schemas.SchemaSet(f)[n]))
    for folder, named in sets:
        for p in sorted(folder.glob("*.schema.json")):
            name = named(p.name[: -len(".schema.json")])
            schema = schemas.load_schema(name)
            # every schema against its metaschema here, so that validation at run time need not
            jsonschema.validators.validator_for(schema).check_schema(schema)
            schemas._validator(name)
            assert schemas.load_schema(name)["$schema"].endswith("2020-12/schema")


def test_redact_secrets_but_not_env_names():
    cfg = {"api_key": "planted-123", "api_key_env": "OPENAI_API_KEY", "nested": [{"token": "t"}], "model": "m"}
    out = redact(cfg)
    assert out["api_key"] == REDACTED and out["nested"][0]["token"] == REDACTED
    assert out["api_key_env"] == "OPENAI_API_KEY" and out["model"] == "m"


def test_atomic_writes_are_readable_by_others(tmp_path):
    old = os.umask(0o022)
    try:
        jsonio.atomic_write_json(tmp_path / "x.json", {})
    finally:
        os.umask(old)
    assert (tmp_path / "x.json").stat().st_mode & 0o777 == 0o644
