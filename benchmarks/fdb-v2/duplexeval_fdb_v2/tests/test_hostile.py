"""`duplexeval import fdb-v2 FILE` given a hostile task file: lone surrogate escapes ("\\ud800" is
JSON but no text) in any field are refused with one line and nothing is written."""

from __future__ import annotations

import json

import pytest

from duplexeval_common.errors import DuplexEvalError

from .test_import import run, upstream_doc, write


@pytest.mark.parametrize("where", ["id", "scenario_title", "examiner_task_prompt", "settings"])
def test_a_lone_surrogate_is_refused_in_one_line_and_nothing_is_written(tmp_path, where):
    doc = upstream_doc()
    if where == "settings":
        doc["settings"]["language"] = "en\ud800"
    else:
        doc["splits"]["Daily"]["tasks"][0][where] = "x\udc80y"
    src = tmp_path / "p.json"
    src.write_text(json.dumps(doc), encoding="ascii")  # escaped: "\ud800" in the file's text
    with pytest.raises(DuplexEvalError) as exc:
        run(src, tmp_path / "home")
    msg = str(exc.value)
    assert "lone surrogate" in msg and "\n" not in msg and len(msg) < 300
    assert not (tmp_path / "home").exists() or not any(p.is_file() for p in (tmp_path / "home").rglob("*"))


def test_hostile_ids_become_safe_distinct_names(tmp_path):
    doc = upstream_doc()
    ids = ["../x", "a/b", "\u00e9" * 300, "\u202e\x00nul"]
    for t, i in zip(doc["splits"]["Daily"]["tasks"] + doc["splits"]["Safety"]["tasks"], ids):
        t["id"] = i
    got, lines = run(write(tmp_path / "p.json", doc), tmp_path / "home")
    names = [r["id"] for r in got.manifest["samples"]]
    assert got.kept == 8 and len(set(names)) == 8
    assert all("/" not in n and ".." not in n and len(n) <= 120 and n.isascii() for n in names)
    assert all("\n" not in line and len(line) < 400 for line in lines)
    assert sorted(p.name for p in (tmp_path / "home" / "datasets" / "v2-test").iterdir()) == \
        ["manifest.json", "tasks.json"]
