"""The duplicate-key checks of strict JSON reading are linear in the number of keys.

Before: `keys.count(k)` for every key, 40,000 keys (657 KB) took 14-23 s, 60,000 keys 31 s."""

from __future__ import annotations

import io
import json

import pytest

from tests.scaling import assert_linear

from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.jsonio import duplicate_keys, load_strict, read_json_object, strict_pairs

# run alone, after the parallel tests (make test): it times the parser at n and 4n
pytestmark = pytest.mark.serial


def _big(tmp_path, n: int, dup: bool = False):
    text = json.dumps({f"k{i}": i for i in range(n)})
    if dup:
        text = text[:-1] + ', "k7": 0, "k3": 1}'
    tmp_path.mkdir(parents=True, exist_ok=True)
    p = tmp_path / "big.json"
    p.write_text(text)
    return p


def test_read_json_object_of_200k_keys_is_linear(tmp_path):
    assert len(read_json_object(_big(tmp_path, 200_000), "big")) == 200_000
    assert_linear(lambda p: read_json_object(p, "big"), lambda n: _big(tmp_path / str(n), n), 50_000)


def test_duplicates_are_still_named(tmp_path):
    p = _big(tmp_path, 50_000, dup=True)
    with pytest.raises(DuplexEvalError, match=r"duplicate key\(s\) 'k3', 'k7'"):
        read_json_object(p, "big")

    def refused(path):
        with pytest.raises(DuplexEvalError):
            read_json_object(path, "big")
    assert_linear(refused, lambda n: _big(tmp_path / f"d{n}", n, dup=True), 50_000)


def test_load_strict():
    n = 200_000
    text = json.dumps({"rows": {f"k{i}": [i] for i in range(n)}})
    assert len(load_strict(io.StringIO(text))["rows"]) == n
    assert_linear(lambda t: load_strict(io.StringIO(t)),
                  lambda k: json.dumps({"rows": {f"k{i}": [i] for i in range(k)}}), 50_000)
    with pytest.raises(ValueError, match="key 'a' given twice"):
        load_strict(io.StringIO('{"a": 1, "b": 2, "a": 3}'))
    for bad in ("NaN", "Infinity", "-Infinity"):
        with pytest.raises(ValueError, match="is not JSON"):
            load_strict(io.StringIO(f'{{"x": {bad}}}'))
    assert duplicate_keys([("b", 1), ("a", 1), ("b", 2), ("a", 3), ("c", 0)]) == ["a", "b"]
    assert strict_pairs([("a", 1)]) == {"a": 1}
