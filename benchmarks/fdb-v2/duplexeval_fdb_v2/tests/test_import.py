"""`duplexeval import fdb-v2 FILE`: upstream's task file (Full-Duplex-Bench v2's
v2/prompts_staged_200.json) to a dataset the fdb-v2 dataset hook reads. The files here are our
own, in upstream's shape (none of upstream's text); an optional test reads upstream's real file
when it is on this machine."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from duplexeval import importing
from duplexeval_common import schemas
from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.hashing import sha256_file
from duplexeval_common.jsonio import read_json

from duplexeval_fdb_v2 import importers
from duplexeval_fdb_v2.live import check_live
from duplexeval_fdb_v2.tasks import IMPORTED_FORMAT, TASKS, load_tasks

from tests.conftest import dx
from tests.tts_synth.conftest import synthesize

from .conftest import REPO

KINDS = {"Daily": "daily", "Correction": "correction", "EntityTracking": "entity_tracking", "Safety": "safety"}
# upstream's own file, where this machine has it: $FDB_V2_TASK_FILE, else the mirror of its repository
UPSTREAM_FILE = os.environ.get("FDB_V2_TASK_FILE")
UPSTREAM_MIRROR = Path("/work/.mirror/DanielLin94144+Full-Duplex-Bench/repo")


def task(split: str, n: int, cls: str = "c") -> dict:
    """One task in upstream's shape, with text of our own."""
    tid = f"{split}.{cls}.{n:03d}" if split in ("Daily", "Safety") else f"{split}.{n:03d}"
    return {"id": tid, "split": split, "class_id": cls, "class_name": f"Class {cls}",
            "scenario_title": f"{split} scenario {n}",
            "examiner_system_prompt": "You are a test caller.\nKeep it short.",
            "examiner_task_prompt": f"Your task: ask about {split.lower()} thing {n}.\n\nBe polite.",
            "staged_reveal": {"T1": f"Ask about thing {n}.", "T2": "Give one detail.", "T3": "Change one detail.",
                              "T4": "Confirm and finish."},
            "skills_tested": ["testing"], "allow_barge_in": n % 2 == 1, "metrics_focus": ["TaskSuccess"]}


def upstream_doc(per_split: int = 2) -> dict:
    return {"version": 1, "created_at": "2000-01-01T00:00:00", "note": "a test file in upstream's shape",
            "settings": {"turn_limit": 5, "max_duration_sec": 60, "examiner_can_interrupt": True,
                         "examiner_is_interruptible": False, "language": "en-US"},
            "splits": {s: {"classes": [{"id": "c", "name": "Class c"}],
                           "tasks": [task(s, i) for i in range(1, per_split + 1)]} for s in KINDS}}


def write(path: Path, doc) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc, ensure_ascii=False, indent=1),
                    encoding="utf-8")
    return path


def run(src, home, name="v2-test", **kw):
    """The importer with the orchestrator's import service, as `duplexeval import fdb-v2` runs it."""
    lines: list[str] = []
    got = importers.import_file(importing, src, name, home=home, report=lines.append, **kw)
    return got, lines


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_small_file_imports_with_a_hashed_manifest(tmp_path):
    src = write(tmp_path / "dl" / "prompts_staged_200.json", upstream_doc())
    before = src.read_bytes()
    got, lines = run(src, tmp_path / "home")
    assert lines == [] and got.excluded == [] and got.kept == 8
    out = tmp_path / "home" / "datasets" / "v2-test"
    assert got.path == out and sorted(p.name for p in out.iterdir()) == ["manifest.json", "tasks.json"]
    m = read_json(out / "manifest.json")
    assert m["format"] == "duplexeval-import/1" and m["benchmark"] == m["source"] == "fdb-v2"
    assert m["build"] == "dataset" and m["name"] == "v2-test" and m["source_path"] == str(src.resolve())
    assert m["root_files"] == {"tasks.json": sha256_file(out / "tasks.json")}
    ids = {k: [task(s, i)["id"] for i in (1, 2)] for s, k in KINDS.items()}
    assert [(r["subset"], r["task"], r["id"], r["source_id"], r["files"]) for r in m["samples"]] == \
        [(k, k, i, i, {}) for k in sorted(TASKS) for i in ids[k]]
    up = m["upstream"]
    assert up["sha256"] == hashlib.sha256(before).hexdigest() and up["bytes"] == len(before)
    assert (up["version"], up["created_at"], up["turn_limit"]) == (1, "2000-01-01T00:00:00", 5)
    assert up["settings"] == upstream_doc()["settings"] and up["license"] == "CC BY-NC 4.0"
    assert "120 s" in up["duration_note"] and "duration_s" in up["duration_note"]
    doc = read_json(out / "tasks.json")
    assert doc["format"] == IMPORTED_FORMAT and doc["source"] == up
    assert [t["kind"] for t in doc["tasks"]] == [k for k in TASKS for _ in (1, 2)]  # by kind, file order
    assert src.read_bytes() == before and list(src.parent.iterdir()) == [src]  # the source is never touched
    assert "8 samples in 4 subsets, with tasks.json" in importing.describe_import(out)


def test_the_mapping_to_our_task_format(tmp_path):
    src = write(tmp_path / "p.json", upstream_doc())
    got, _ = run(src, tmp_path / "home")
    tasks = load_tasks(got.path)
    t, raw = tasks["Correction.002"], task("Correction", 2)
    assert t.kind == "correction" and t.opening is None and t.turn_limit == 5
    assert t.system_prompt == raw["examiner_system_prompt"] + "\n\n" + raw["examiner_task_prompt"]
    assert [(g.id, g.goal, g.say) for g in t.goals] == [(f"T{i}", raw["staged_reveal"][f"T{i}"], None)
                                                        for i in range(1, 5)]
    assert t.end_phrase == "The conversation is over."
    assert t.source == {k: raw[k] for k in ("id", "split", "class_id", "class_name", "scenario_title",
                                            "allow_barge_in", "skills_tested", "metrics_focus")}


def test_the_imported_dataset_runs_through_the_dataset_hook(tmp_path):
    """tts-synth on the import runs fdb-v2's dataset hook (not its import mode): a valid live.json
    per task with the goals and neither opening nor say, which the cascade examiner accepts."""
    from duplexeval_runner_cascade.examiner import check_script
    src = write(tmp_path / "p.json", upstream_doc())
    got, _ = run(src, tmp_path / "home")
    out = synthesize("fdb-v2", got.path, tmp_path / "ds", dataset="v2-test")
    manifest = read_json(out / "manifest.json")
    schemas.validate("manifest", manifest, "manifest.json")
    assert [(r["subset"], r["id"]) for r in manifest["samples"]] == \
        [(r["subset"], r["id"]) for r in got.manifest["samples"]]
    for row in manifest["samples"]:
        folder = out / "samples" / row["subset"] / row["id"]
        assert set(row["files"]) == {"live.json", "sample.json"}
        live = read_json(folder / "live.json")
        assert check_live(live, row["id"]) == []
        ex = live["examiner"]
        assert "opening" not in ex and all(sorted(g) == ["goal", "id"] for g in ex["goals"])
        raw = task(row["id"].split(".")[0], int(row["id"][-3:]))
        assert ex["goals"] == [{"id": k, "goal": v} for k, v in raw["staged_reveal"].items()]
        assert ex["end_phrase"] == "The conversation is over." and ex["turn_limit"] == 5
        assert check_script(ex, row["id"])["goals"] == ex["goals"]
        sample = read_json(folder / "sample.json")
        schemas.validate("sample", sample, row["id"])
        assert sample["segments"] == [] and sample["dataset"] == "v2-test" and sample["source"]["id"] == row["id"]


def test_a_changed_import_is_refused_by_the_dataset_hook(tmp_path):
    got, _ = run(write(tmp_path / "p.json", upstream_doc()), tmp_path / "home")
    doc = read_json(got.path / "tasks.json")
    doc["tasks"] = doc["tasks"][:1]
    (got.path / "tasks.json").write_text(json.dumps(doc))
    with pytest.raises(DuplexEvalError, match="differs from the import manifest .*import the dataset again"):
        synthesize("fdb-v2", got.path, tmp_path / "ds", dataset="v2-test")


def test_the_builtin_format_still_requires_scripted_lines(tmp_path):
    """Only an import's format may leave out opening and say; the built-in format keeps its checks."""
    got, _ = run(write(tmp_path / "p.json", upstream_doc()), tmp_path / "home")
    doc = read_json(got.path / "tasks.json")
    doc["format"] = "duplexeval-fdb-v2-tasks/1"
    del doc["source"]
    for t in doc["tasks"]:
        del t["source"]
    write(tmp_path / "builtin" / "tasks.json", doc)
    with pytest.raises(DuplexEvalError, match="missing field opening"):
        load_tasks(tmp_path / "builtin")


def _set(where, i, **fields):
    def edit(d):
        d["splits"][where]["tasks"][i].update(fields)
    return edit


def _del(where, i, field):
    def edit(d):
        del d["splits"][where]["tasks"][i][field]
    return edit


def _reveal(where, i, reveal):
    return _set(where, i, staged_reveal=reveal)


def _both(*edits):
    def edit(d):
        for e in edits:
            e(d)
    return edit


# (edit of the good file, the lines reported, how many tasks are imported)
BAD = {
    "unknown split": (lambda d: d["splits"].update(Chitchat={"classes": [], "tasks": [task("Chitchat", 1)]}),
                      ["Chitchat/*: unknown split 'Chitchat' (known: Daily, Correction, EntityTracking, Safety); "
                       "its tasks are not imported"], 8),
    "split without tasks": (lambda d: d["splits"].update(Safety={"classes": []}),
                            ["Safety/*: the split must be an object whose `tasks` is a list of tasks"], 6),
    "missing split": (lambda d: d["splits"].pop("Safety"),
                      ["note: no Safety split in the file; importing the others"], 6),
    "not an object": (lambda d: d["splits"]["Daily"]["tasks"].__setitem__(1, "Daily.c.002"),
                      ["Daily/#1: tasks[1] is not an object (a string)"], 7),
    "no id": (_del("Daily", 0, "id"), ["Daily/#0: tasks[0] has no id"], 7),
    "empty id": (_set("Daily", 0, id=" "), ["Daily/#0: tasks[0]: id must be a non-empty string, got ' '"], 7),
    "missing field": (_both(_del("Correction", 0, "metrics_focus"), _del("Correction", 0, "class_name")),
                      ["Correction/Correction.001: missing field class_name, metrics_focus"], 7),
    "string field type": (_set("EntityTracking", 1, scenario_title=5),
                          ["EntityTracking/EntityTracking.002: scenario_title must be a string, got a number"], 7),
    "staged_reveal type": (_set("Daily", 0, staged_reveal=["a", "b"]),
                           ["Daily/Daily.c.001: staged_reveal must be an object {\"T1\": goal, ...}, got a list"], 7),
    "list field type": (_set("Safety", 0, skills_tested="safety"),
                        ["Safety/Safety.c.001: skills_tested must be a list of strings"], 7),
    "allow_barge_in not bool": (_set("Safety", 1, allow_barge_in="yes"),
                                ["Safety/Safety.c.002: allow_barge_in must be true or false, got 'yes'"], 7),
    "split field": (_set("Correction", 1, split="Daily"),
                    ["Correction/Correction.002: split is 'Daily' but the task is listed under Correction"], 7),
    "empty system prompt": (_set("Daily", 1, examiner_system_prompt=""),
                            ["Daily/Daily.c.002: examiner_system_prompt is empty"], 7),
    "empty task prompt": (_set("Daily", 1, examiner_task_prompt=" \n "),
                          ["Daily/Daily.c.002: examiner_task_prompt is empty"], 7),
    "reveal gap": (_reveal("Correction", 0, {"T1": "a", "T3": "c"}),
                   ["Correction/Correction.001: staged_reveal keys must be T1..T2 with none missing, got T1, T3"], 7),
    "reveal key": (_reveal("Correction", 0, {"T1": "a", "goal2": "b"}),
                   ["Correction/Correction.001: staged_reveal keys must be T1..T2 with none missing, got T1, goal2"],
                   7),
    "reveal T0": (_reveal("Correction", 0, {"T0": "a", "T1": "b"}),
                  ["Correction/Correction.001: staged_reveal keys must be T1..T2 with none missing, got T0, T1"], 7),
    "reveal empty": (_reveal("Correction", 0, {}),
                     ["Correction/Correction.001: staged_reveal is empty (1 to 4 goals T1..Tn)"], 7),
    "reveal too many": (_reveal("Correction", 0, {f"T{i}": "g" for i in range(1, 6)}),
                        ["Correction/Correction.001: staged_reveal has 5 goals; turn_limit 5 allows 1 to 4 (each "
                         "goal a turn, the end phrase one more)"], 7),
    "reveal empty goal": (_reveal("Correction", 0, {"T1": "a", "T2": "  "}),
                          ["Correction/Correction.001: staged_reveal T2 must be a non-empty string"], 7),
    "reveal goal not text": (_reveal("Correction", 0, {"T2": 2, "T1": "a"}),
                             ["Correction/Correction.001: staged_reveal T2 must be a non-empty string"], 7),
    "turn_limit setting": (_both(lambda d: d["settings"].update(turn_limit=3),
                                 *[_reveal(s, i, {"T1": "a", "T2": "b"}) for s in KINDS for i in (0, 1)],
                                 _reveal("Daily", 1, {"T1": "a", "T2": "b", "T3": "c"})),
                           ["Daily/Daily.c.002: staged_reveal has 3 goals; turn_limit 3 allows 1 to 2 (each goal a "
                            "turn, the end phrase one more)"], 7),
    "duplicate id": (_set("Safety", 1, id="Correction.001", split="Safety"),
                     [f"{s}/Correction.001: id 'Correction.001' is given 2 times (Correction, Safety); none is "
                      "imported" for s in ("Correction", "Safety")], 6),
    "ids equal ignoring case": (_set("Daily", 1, id="daily.C.001"),
                                ["Daily/Daily.c.001: duplicate id: 'Daily.c.001' and 'daily.C.001' (Daily, Daily) "
                                 "name the same sample; none is imported",
                                 "Daily/daily.C.001: duplicate id: 'Daily.c.001' and 'daily.C.001' (Daily, Daily) "
                                 "name the same sample; none is imported"], 6),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_each_bad_task_is_one_line_and_the_rest_import(tmp_path, case):
    edit, expected, kept = BAD[case]
    doc = copy.deepcopy(upstream_doc())
    edit(doc)
    got, lines = run(write(tmp_path / "p.json", doc), tmp_path / "home")
    assert lines == expected and all("\n" not in ln for ln in lines)
    assert got.kept == kept == len(load_tasks(got.path))
    assert [f"{x['subset']}/{x['id']}: {x['reason']}" for x in got.excluded] == \
        [ln for ln in lines if not ln.startswith("note: ")]
    assert read_json(got.path / "manifest.json")["excluded"] == got.excluded


def test_an_id_that_is_not_a_plain_name_is_mapped_deterministically(tmp_path):
    doc = upstream_doc()
    doc["splits"]["Daily"]["tasks"][0]["id"] = "Daily/ordering 001"
    got, lines = run(write(tmp_path / "p.json", doc), tmp_path / "home")
    safe = importers.safe_id("Daily/ordering 001")
    assert safe == importers.safe_id("Daily/ordering 001") != importers.safe_id("Daily/ordering 002")
    assert safe.startswith("Daily-ordering-001-") and importers.safe_id("Daily.c.001") == "Daily.c.001"
    assert importers.safe_id("..").startswith("task-") and importers.safe_id("a..b").startswith("a.b-")
    assert lines == [f"note: Daily/Daily/ordering 001: the id is not a plain name (sample ids are letters, digits, "
                     f"'_', '-', '.'); imported as {safe}"]
    assert got.kept == 8
    row = next(r for r in got.manifest["samples"] if r["id"] == safe)
    assert row["source_id"] == "Daily/ordering 001"
    assert load_tasks(got.path)[safe].source["id"] == "Daily/ordering 001"
    out = synthesize("fdb-v2", got.path, tmp_path / "ds", dataset="v2-test", subsets=["daily"])
    assert read_json(out / "samples" / "daily" / safe / "sample.json")["source"]["id"] == "Daily/ordering 001"


def _no_splits(d):
    d.pop("splits")


# (the file's text or an edit of the good object, the start of the one-line refusal)
REFUSED = {
    "not JSON": ("{\"splits\": ", "p.json: not a Full-Duplex-Bench v2 task file: not strict JSON"),
    "NaN": ("{\"settings\": {\"turn_limit\": NaN}, \"splits\": {}}",
            "p.json: not a Full-Duplex-Bench v2 task file: not strict JSON (NaN is not JSON)"),
    "duplicate key": (json.dumps(upstream_doc()).replace('"class_id": "c",', '"class_id": "c", "class_id": "d",', 1),
                      "p.json: not a Full-Duplex-Bench v2 task file: not strict JSON (key 'class_id' given twice)"),
    "a list": ("[]", "p.json: not a Full-Duplex-Bench v2 task file: expected a JSON object with `splits`"),
    "no splits": (_no_splits, "p.json: not a Full-Duplex-Bench v2 task file: expected a JSON object with `splits`"),
    "no known split": (lambda d: d.update(splits={"train": {"tasks": []}}),
                       "p.json: not a Full-Duplex-Bench v2 task file: its splits name none of Daily, Correction, "
                       "EntityTracking, Safety (got train)"),
    "settings": (lambda d: d.update(settings=[]), "p.json: settings must be an object, got a list"),
    "turn_limit": (lambda d: d["settings"].update(turn_limit="5"),
                   "p.json: settings.turn_limit must be a whole number in [2, 100], got '5'"),
    "no task passes": (lambda d: [t.update(allow_barge_in=None) for s in d["splits"].values() for t in s["tasks"]],
                       "no task passed the checks (8 excluded); nothing was written"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_refused_file_is_one_line_and_leaves_nothing(tmp_path, case):
    given, message = REFUSED[case]
    if callable(given):
        doc = copy.deepcopy(upstream_doc())
        given(doc)
        given = json.dumps(doc)
    home = tmp_path / "home"
    with pytest.raises(DuplexEvalError) as exc:
        run(write(tmp_path / "p.json", given), home)
    assert message in str(exc.value) and "\n" not in str(exc.value)
    assert not (home / "datasets").exists() or list((home / "datasets").iterdir()) == []


def test_a_folder_or_a_missing_file_is_refused(tmp_path):
    for given, message in ((tmp_path, "is a folder; give upstream's task file"), (tmp_path / "x.json", "no such file")):
        with pytest.raises(DuplexEvalError, match=message):
            run(given, tmp_path / "home")
    assert not (tmp_path / "home").exists()


def test_a_refused_file_leaves_an_earlier_import_as_it_was(tmp_path):
    home = tmp_path / "home"
    got, _ = run(write(tmp_path / "p.json", upstream_doc()), home)
    before = tree(got.path)
    with pytest.raises(DuplexEvalError):
        run(write(tmp_path / "bad.json", "[]"), home, force=True)
    assert tree(got.path) == before and sorted(p.name for p in (home / "datasets").iterdir()) == ["v2-test"]


def test_importing_twice_gives_the_same_bytes(tmp_path):
    src = write(tmp_path / "p.json", upstream_doc())
    a, _ = run(src, tmp_path / "home-a")
    first = tree(a.path)
    b, _ = run(src, tmp_path / "home-b")
    again, _ = run(src, tmp_path / "home-a", force=True)
    assert tree(b.path) == first == tree(again.path)
    with pytest.raises(DuplexEvalError, match="already exists"):
        run(src, tmp_path / "home-a")


def test_the_command(tmp_path):
    """`duplexeval import fdb-v2 FILE`: exit 1 with the excluded task named on stderr, then listed."""
    doc = upstream_doc()
    doc["splits"]["Daily"]["tasks"][0]["allow_barge_in"] = "no"
    src = write(tmp_path / "p.json", doc)
    r = dx(tmp_path / "home", "import", "fdb-v2", str(src), "--name", "v2-cli")
    assert r.returncode == 1, r.stdout + r.stderr
    assert r.stderr.strip().splitlines() == ["Daily/Daily.c.001: allow_barge_in must be true or false, got 'no'"]
    assert "imported 7 samples in 4 subsets" in r.stdout
    r = dx(tmp_path / "home", "import", "list")
    assert "v2-cli" in r.stdout and "imported (fdb-v2)" in r.stdout and "with tasks.json" in r.stdout


def _upstream_bytes() -> bytes | None:
    if UPSTREAM_FILE:
        p = Path(UPSTREAM_FILE)
        return p.read_bytes() if p.is_file() else None
    if not UPSTREAM_MIRROR.is_dir():
        return None
    r = subprocess.run(["git", "-C", str(UPSTREAM_MIRROR), "show", "HEAD:v2/prompts_staged_200.json"],
                       capture_output=True)
    return r.stdout if r.returncode == 0 and r.stdout else None


def test_upstreams_own_file_imports_whole(tmp_path):
    """Upstream's real file, where this machine has it ($FDB_V2_TASK_FILE or the mirror of its
    repository): 200 tasks, 50 per kind, upstream's ids kept. It is read into a temporary folder
    only (the importer takes a file); nothing of it enters the repository."""
    data = _upstream_bytes()
    if data is None:
        pytest.skip("upstream's v2/prompts_staged_200.json is not on this machine (set FDB_V2_TASK_FILE)")
    src = tmp_path / "prompts_staged_200.json"
    if UPSTREAM_FILE:
        src = Path(UPSTREAM_FILE)
    else:
        src.write_bytes(data)
    got, lines = run(src, tmp_path / "home", name="fdb-v2")
    assert lines == [] and got.excluded == [] and got.kept == 200
    rows = got.manifest["samples"]
    assert {k: sum(r["task"] == k for r in rows) for k in TASKS} == {k: 50 for k in TASKS}
    assert all(r["id"] == r["source_id"] for r in rows) and len({r["id"] for r in rows}) == 200
    pattern = re.compile(read_json(REPO / "schemas" / "sample.schema.json")["properties"]["id"]["pattern"])
    assert all(pattern.match(r["id"]) for r in rows)  # upstream's ids (with dots) are sample ids as they are
    assert got.manifest["upstream"]["sha256"] == hashlib.sha256(data).hexdigest()
    tasks = load_tasks(got.path)
    assert all(t.opening is None and 1 <= len(t.goals) <= t.turn_limit - 1 and all(g.say is None for g in t.goals)
               for t in tasks.values())
    out = synthesize("fdb-v2", got.path, tmp_path / "ds", dataset="fdb-v2", limit=2)
    for r in read_json(out / "manifest.json")["samples"]:
        assert check_live(read_json(out / "samples" / r["subset"] / r["id"] / "live.json"), r["id"]) == []
