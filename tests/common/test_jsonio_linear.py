"""The duplicate-key checks of strict JSON reading are linear in the number of keys.

Before: `keys.count(k)` for every key, 40,000 keys (657 KB) took 14-23 s, 60,000 keys 31 s."""

from __future__ import annotations

import io
import json
import time

import pytest

from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.jsonio import duplicate_keys, load_strict, read_json_object, strict_pairs


def _big(tmp_path, n: int, dup: bool = False):
    text = json.dumps({f"k{i}": i for i in range(n)})
    if dup:
        text = text[:-1] + ', "k7": 0, "k3": 1}'
    p = tmp_path / "big.json"
    p.write_text(text)
    return p


def test_read_json_object_of_200k_keys_is_fast(tmp_path):
    p = _big(tmp_path, 200_000)
    t0 = time.perf_counter()
    obj = read_json_object(p, "big")
    assert time.perf_counter() - t0 < 2.0
    assert len(obj) == 200_000


def test_duplicates_are_still_named(tmp_path):
    p = _big(tmp_path, 50_000, dup=True)
    t0 = time.perf_counter()
    with pytest.raises(DuplexEvalError, match=r"duplicate key\(s\) 'k3', 'k7'"):
        read_json_object(p, "big")
    assert time.perf_counter() - t0 < 2.0


def test_load_strict():
    n = 200_000
    text = json.dumps({"rows": {f"k{i}": [i] for i in range(n)}})
    t0 = time.perf_counter()
    assert len(load_strict(io.StringIO(text))["rows"]) == n
    assert time.perf_counter() - t0 < 2.0
    with pytest.raises(ValueError, match="key 'a' given twice"):
        load_strict(io.StringIO('{"a": 1, "b": 2, "a": 3}'))
    for bad in ("NaN", "Infinity", "-Infinity"):
        with pytest.raises(ValueError, match="is not JSON"):
            load_strict(io.StringIO(f'{{"x": {bad}}}'))
    assert duplicate_keys([("b", 1), ("a", 1), ("b", 2), ("a", 3), ("c", 0)]) == ["a", "b"]
    assert strict_pairs([("a", 1)]) == {"a": 1}
