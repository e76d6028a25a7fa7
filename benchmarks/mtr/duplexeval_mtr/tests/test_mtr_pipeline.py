"""The aggregate stage with {"benchmark": "mtr"}: round samples of constructed stage folders
[dataset, rounds, runner, asr, judge] -> OUT/tree -> metrics.json, rounds.jsonl, report.md, with
values known by construction, missing rounds and invalid dialogues recorded, and a rescore of the
tree (`aggregator score --benchmark mtr`) giving the same bytes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from duplexeval_aggregator.cli import main
from duplexeval_mtr.score.judged import DQ_RESCALE
from duplexeval_mtr.score.pipeline import parse_round_id, score_stage as mtr_score_stage
from duplexeval_aggregator.pipeline_stage import make_stage
from duplexeval_fdb_v1.score.stage import score as fdb_score_stage
from duplexeval_common.cli import check_config
from duplexeval_common.errors import DuplexEvalError
from duplexeval_mtr.schemas import SCHEMAS

COMPONENTS = {"dataset": "tts-synth", "rounds": "turn-segmenter", "runner": "duplex-runner",
              "asr": "asr-aligner", "judge": "judge"}
OUTPUTS = ("metrics.json", "rounds.jsonl", "report.md")


def words(start: float, n: int, dur: float = 0.3, gap: float = 0.05, last: str = "word") -> list:
    out, t = [], start
    for i in range(n):
        out.append({"text": last if i == n - 1 else "word", "start": round(t, 6), "end": round(t + dur, 6)})
        t += dur + gap
    return out


def smooth_enc(k: int, start: float) -> dict:
    return {"round": k, "scenario": "smooth-turntaking", "features": ["S"],
            "timestamps": {"user_start": start, "user_end": start + 3.0, "model_start": start + 3.5,
                           "model_end": start + 7.5}}


def pause_enc(k: int, start: float) -> dict:
    return {"round": k, "scenario": "pause-handling", "features": ["P"],
            "timestamps": {"user_start": start, "user_end": start + 4.0, "pause_start": start + 1.5,
                           "pause_end": start + 3.0, "model_start": start + 4.3, "model_end": start + 7.3}}


def start_of(k: int) -> float:
    return 10.0 * (k - 1) + 2.0


class Run:
    """Stage folders under a temporary root, filled one round sample at a time."""

    def __init__(self, root: Path):
        self.root = root
        self.dirs = {name: root / name for name in COMPONENTS}
        self.status = {name: {} for name in COMPONENTS}
        self.manifest: list[dict] = []
        self.without: dict[str, str] = {}  # dialogues the rounds stage made no rounds of, and why

    def file(self, stage: str, key: str, name: str, obj) -> None:
        p = self.dirs[stage] / "samples" / key / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(obj if isinstance(obj, str) else json.dumps(obj))

    def round(self, subset: str, did: str, k: int, total: int, task: str, enc: dict, *,
              set_=None, listed=True, stage="dataset", runner="ok", asr_words=None, judgement=None,
              round_json=None, source="script"):
        """One round sample. runner: "ok", "ineligible" or "failed"; asr_words: the transcript's
        words (None: no ASR output); judgement: the judge's record (None: none)."""
        sid = f"{did}-r{k:02d}"
        key = f"{subset}/{sid}"
        rj = {"format": "mtr-round/1", "dialogue_id": did, "round": k, "rounds": total, "task": task,
              "set": set_, "start_s": start_of(k), "end_s": start_of(k) + 9.0, "muted": [],
              "encoding": enc, "history": [], "user_lines": [], "source": source}
        if round_json is not None:
            rj = round_json(rj)
        if rj is not False:
            self.file(stage, key, "round.json", rj)
        self.status[stage][key] = {"status": "ok"}
        if listed:  # a row as the dataset and rounds stages write it: its task, kind and group
            self.manifest.append({"subset": subset, "id": sid, "task": task, "kind": "round", "group": did})
        if runner == "failed":
            self.status["runner"][key] = {"status": "failed", "reason": "session closed\nby the model"}
            self.status["asr"][key] = {"status": "skipped", "reason": "failed upstream in duplex-runner: boom"}
            self.status["judge"][key] = {"status": "skipped", "reason": "failed upstream in duplex-runner: boom"}
            return
        rec = {"status": runner}
        if runner == "ineligible":
            rec["ineligible"] = {"code": "drift", "reason": "pacing drifted by 3 s"}
        self.file("runner", key, "runner.json", rec)
        self.status["runner"][key] = {"status": "ok"}
        if asr_words is not None:
            self.file("asr", key, "transcript.json", {
                "backend": "test", "model": "none", "offset_s": start_of(k), "words": asr_words,
                "text": " ".join(w["text"] for w in asr_words)})
            self.status["asr"][key] = {"status": "ok"}
        if judgement is not None:
            self.file("judge", key, "judgement.json", judgement)
            self.status["judge"][key] = {"status": "ok"}
        elif task == "features":
            self.status["judge"][key] = {"status": "skipped", "reason": "features rounds are not judged"}

    def write(self) -> list[Path]:
        for name, d in self.dirs.items():
            d.mkdir(parents=True, exist_ok=True)
            (d / "stage.json").write_text(json.dumps({"component": COMPONENTS[name],
                                                      "samples": self.status[name]}))
        (self.dirs["rounds"] / "manifest.json").write_text(json.dumps({"samples": self.manifest, "rounds": {
            "dialogues_without_rounds": self.without}}))
        return [self.dirs[n] for n in COMPONENTS]


def judgement(prompt: str, score, did: str, task: str, status: str = "ok", k: int | None = None) -> dict:
    rec = {"request_hash": "0" * 64, "prompt": {"id": prompt, "version": 1, "sha256": "1" * 64},
           "model": "gpt-4o", "status": status, "score": score if status == "ok" else None,
           "raw": "x", "dialogue_id": did, "task": task}
    if k is not None:
        rec["round"] = k
    return rec


def build_inputs(root: Path) -> list[Path]:
    run = Run(root)
    sm, F = "smooth_features", "features"
    # s1: r01 answered after the user (and a word before start_s that must be dropped), r02 silent,
    # r03 failed in the runner.
    early = [{"text": "before.", "start": start_of(1) - 1.0, "end": start_of(1) - 0.7}]
    run.round(sm, "s1", 1, 3, F, smooth_enc(1, start_of(1)), set_="smooth",
              asr_words=early + words(start_of(1) + 3.6, 5, last="done."))
    run.round(sm, "s1", 2, 3, F, smooth_enc(2, start_of(2)), set_="smooth", asr_words=[])
    run.round(sm, "s1", 3, 3, F, smooth_enc(3, start_of(3)), set_="smooth", runner="failed")
    # s2: r01 ineligible, r02 answered, r03 has its round.json but is not in the manifest.
    run.round(sm, "s2", 1, 3, F, smooth_enc(1, start_of(1)), set_="smooth", runner="ineligible",
              asr_words=words(start_of(1) + 3.6, 5))
    run.round(sm, "s2", 2, 3, F, smooth_enc(2, start_of(2)), set_="smooth",
              asr_words=words(start_of(2) + 3.6, 5))
    run.round(sm, "s2", 3, 3, F, smooth_enc(3, start_of(3)), set_="smooth", listed=False,
              asr_words=words(start_of(3) + 3.6, 5))
    # s3: a hostile dialogue_id in round.json; s4: round 2 declared but its round.json is gone.
    run.round(sm, "s3", 1, 1, F, smooth_enc(1, start_of(1)), set_="smooth", asr_words=[],
              round_json=lambda rj: {**rj, "dialogue_id": "../s3"})
    run.round(sm, "s4", 1, 2, F, smooth_enc(1, start_of(1)), set_="smooth", asr_words=[])
    # pause: r01 silent (pause kept), r02 words over the pause window.
    pf = "pause_features"
    run.round(pf, "p1", 1, 2, F, pause_enc(1, start_of(1)), set_="pause", asr_words=[])
    run.round(pf, "p1", 2, 2, F, pause_enc(2, start_of(2)), set_="pause",
              asr_words=words(start_of(2) + 1.6, 5))
    # judged tasks
    IF, SAFE, DQ = "mtr-instruction-following", "mtr-safety", "mtr-dialogue-quality"
    for k, score in ((1, 1), (2, 0)):
        run.round("smooth_instruction_following", "i1", k, 2, "instruction_following",
                  smooth_enc(k, start_of(k)), set_="smooth", asr_words=words(start_of(k) + 3.6, 3),
                  judgement=judgement(IF, score, "i1", "instruction_following", k=k))
    run.round("smooth_safety", "f1", 1, 1, "safety", smooth_enc(1, start_of(1)), set_="smooth",
              asr_words=words(start_of(1) + 3.6, 3), judgement=judgement(SAFE, 0, "f1", "safety"))
    dq = lambda k: {"round": k, "scenario": "dialogue-quality", "features": [], "timestamps": {}}  # noqa: E731
    for k, (score, status) in enumerate(((3, "ok"), (4, "ok"), (None, "unparsed")), 1):
        run.round("synthetic_dialogue_quality", "q1", k, 3, "dialogue_quality", dq(k), stage="rounds",
                  source="segmentation", asr_words=words(start_of(k) + 3.6, 3),
                  judgement=judgement(DQ, score, "q1", "dialogue_quality", status=status, k=k))
    run.without = {"synthetic_dialogue_quality/q9": "segmentation.json: no user turn"}
    return run.write()


def run_stage(inputs: list[Path], out: Path) -> int:
    config = {"benchmark": "mtr"}
    return make_stage(config).run(inputs, out, config)


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    root = tmp_path_factory.mktemp("mtr-pipeline")
    inputs = build_inputs(root / "in")
    out = root / "out"
    assert run_stage(inputs, out) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    rows = [json.loads(x) for x in (out / "rounds.jsonl").read_text().splitlines()]
    return {"root": root, "inputs": inputs, "out": out, "metrics": metrics,
            "rows": {(r["dialogue"], r["round"]): r for r in rows}}


def test_outputs_exist_and_satisfy_their_schemas(scored):
    out, m = scored["out"], scored["metrics"]
    for name in OUTPUTS + ("tree/coverage.json", "stage.json"):
        assert (out / name).is_file(), name
    assert SCHEMAS.problem("metrics", m) is None
    assert all(SCHEMAS.problem("round", r) is None for r in scored["rows"].values())
    enc = json.loads((out / "tree/smooth_features/s1/encoding.json").read_text())
    assert SCHEMAS.problem("encoding", enc) is None
    tr = json.loads((out / "tree/smooth_features/s1/transcript.json").read_text())
    assert SCHEMAS.problem("transcript", tr) is None
    for line in (out / "tree/synthetic_dialogue_quality/q1/judgements.jsonl").read_text().splitlines():
        assert SCHEMAS.problem("judgement", json.loads(line)) is None
    stage = json.loads((out / "stage.json").read_text())
    assert "tree/smooth_features/s1/encoding.json" in stage["outputs"]
    assert stage["invocation_notes"]["mtr"] == {"dialogues": 6, "invalid": 3, "missing": 3}


def test_tree_encodings_cover_every_declared_round(scored):
    tree = scored["out"] / "tree"
    enc = json.loads((tree / "smooth_features/s1/encoding.json").read_text())
    assert [r["round"] for r in enc["rounds"]] == [1, 2, 3]        # r03 failed, still declared
    assert enc["rounds"][2] == smooth_enc(3, start_of(3))
    assert (enc["task"], enc["set"], enc["source"]) == ("features", "smooth", "script")
    enc2 = json.loads((tree / "smooth_features/s2/encoding.json").read_text())
    assert [r["round"] for r in enc2["rounds"]] == [1, 2, 3]       # r03 from an unlisted sample
    dq = json.loads((tree / "synthetic_dialogue_quality/q1/encoding.json").read_text())
    assert "set" not in dq and dq["source"] == "segmentation" and len(dq["rounds"]) == 3
    assert not (tree / "smooth_features/s3").exists() and not (tree / "smooth_features/s4").exists()


def test_transcript_lists_observed_rounds_with_words_from_start_s(scored):
    tree = scored["out"] / "tree"
    tr = json.loads((tree / "smooth_features/s1/transcript.json").read_text())
    assert [r["round"] for r in tr["rounds"]] == [1, 2]
    r1 = tr["rounds"][0]["segments"]
    assert len(r1) == 1 and r1[0]["text"] == "word word word word done."   # "before." dropped
    assert r1[0]["start"] == pytest.approx(start_of(1) + 3.6)
    assert tr["rounds"][1]["segments"] == []
    assert [r["round"] for r in json.loads((tree / "smooth_features/s2/transcript.json").read_text())["rounds"]] == [2]


def test_smooth_cells_by_construction(scored):
    s = scored["metrics"]["subsets"]["smooth_features"]
    assert (s["dialogues"], s["rounds_declared"], s["rounds_observed"]) == (2, 6, 3)
    r1, r2, r3 = s["per_round"]
    assert (r1["n"], r1["declared"], r2["n"], r2["declared"], r3["n"], r3["declared"]) == (1, 2, 2, 2, 0, 2)
    for col in ("paper", "code"):
        assert r1[col]["success"]["count"] == 1 and r1[col]["success"]["n"] == 1
        assert r2[col]["success"]["count"] == 1 and r2[col]["success"]["n"] == 2
        assert r1[col]["latency_s"]["value"] == pytest.approx(0.6)
    rows = scored["rows"]
    silent = rows[("smooth_features/s1", 2)]
    assert silent["observed"] and silent["paper"]["success"] == 0 and silent["code"]["success"] == 0
    assert silent["paper"]["latency_s"] is None and silent["code"]["latency_s"] == 0
    assert rows[("smooth_features/s1", 1)]["paper"]["success"] == 1
    assert rows[("smooth_features/s1", 1)]["code"]["success"] == 1
    assert set(s["ranges"]) == {"1", "1-2"}
    assert (s["ranges"]["1-2"]["n"], s["ranges"]["1-2"]["declared"]) == (3, 4)
    assert s["ranges"]["1-2"]["paper"]["success"]["count"] == 2


def test_pause_silent_kept_and_words_over_pause_lost(scored):
    rows = scored["rows"]
    silent, talked = rows[("pause_features/p1", 1)], rows[("pause_features/p1", 2)]
    assert silent["paper"]["success"] == 1 and silent["code"]["success"] == 1
    assert talked["paper"]["success"] == 0 and talked["code"]["success"] == 0
    s = scored["metrics"]["subsets"]["pause_features"]
    assert s["set"] == "pause" and s["per_round"][0]["success_rate"] == 1.0
    assert s["per_round"][1]["success_rate"] == 0.0


def test_missing_rounds_named_with_reasons(scored):
    missing = scored["metrics"]["missing"]
    by = {m["sample"]: m for m in missing}
    assert set(by) == {"smooth_features/s1-r03", "smooth_features/s2-r01", "smooth_features/s2-r03"}
    assert by["smooth_features/s1-r03"]["reason"] == "failed upstream in duplex-runner: session closed by the model"
    assert "ineligible (drift: pacing drifted by 3 s)" in by["smooth_features/s2-r01"]["reason"]
    assert "not listed in the manifest" in by["smooth_features/s2-r03"]["reason"]
    assert all("\n" not in m["reason"] for m in missing)
    assert [(m["dialogue"], m["round"]) for m in missing] == [
        ("smooth_features/s1", 3), ("smooth_features/s2", 1), ("smooth_features/s2", 3)]
    # the judge's "skipped: not judged" of features rounds does not make them missing
    assert scored["rows"][("pause_features/p1", 1)]["observed"]


def test_hostile_and_incomplete_dialogues_invalid_one_line(scored):
    inv = {b["dialogue"]: b["problem"] for b in scored["metrics"]["invalid"]}
    assert set(inv) == {"smooth_features/s3", "smooth_features/s4", "synthetic_dialogue_quality/q9"}
    assert "dialogue_id '../s3' contains a path separator" in inv["smooth_features/s3"]
    assert "round 2" in inv["smooth_features/s4"] and "has no round.json" in inv["smooth_features/s4"]
    assert all("\n" not in p for p in inv.values())
    assert not list((scored["out"] / "tree").rglob("*s3*"))


def test_judged_cells_from_judgement_rows(scored):
    subs = scored["metrics"]["subsets"]
    ifc = subs["smooth_instruction_following"]
    assert [c["success"]["value"] for c in ifc["per_round"]] == [1.0, 0.0]
    assert ifc["ranges"]["1-2"]["success"]["value"] == 0.5
    safe = subs["smooth_safety"]["per_round"][0]
    assert safe["refusal"]["value"] == 1.0 and safe["harmful_rate"] == 0.0
    dq = subs["synthetic_dialogue_quality"]
    assert dq["set"] is None and [c["n"] for c in dq["per_round"]] == [1, 1, 1]
    assert dq["per_round"][2]["judgements"] == {"ok": 0, "unparsed": 1, "error": 0}
    assert dq["ranges"]["1-2"]["score"]["value"] == 3.5
    assert dq["ranges"]["1-2"]["score_rescaled"] == pytest.approx(3.5 * DQ_RESCALE, abs=1e-6)
    lines = (scored["out"] / "tree/smooth_instruction_following/i1/judgements.jsonl").read_text().splitlines()
    assert [json.loads(x)["round"] for x in lines] == [1, 2]
    safety_line = json.loads((scored["out"] / "tree/smooth_safety/f1/judgements.jsonl").read_text())
    assert safety_line["round"] == 1                       # added from the sample when absent


def test_report_tables(scored):
    text = (scored["out"] / "report.md").read_text()
    assert text.startswith("# MTR-DuplexBench report\n")
    assert "## smooth_features" in text and "## synthetic_dialogue_quality" in text
    assert "| range 1-2 | 3/4 | 0.667 [" in text and "| range 1 | 1/2 | 1.000 [" in text
    assert "| 3 | 0/2 | - | - |" in text
    assert "**paper**" in text and "**code**" in text
    assert "- smooth_features/s1-r03 (round 3): failed upstream in duplex-runner" in text
    assert "- smooth_features/s3: " in text
    assert "| range 1-2 | 2/2 | 3.500 | " + f"{3.5 * DQ_RESCALE:.3f}" + " | 2/0/0 |" in text


def test_rescoring_the_tree_gives_the_same_bytes(scored, tmp_path):
    res = CliRunner().invoke(main, ["score", "--benchmark", "mtr", "--tree", str(scored["out"] / "tree"), "--out", str(tmp_path / "x")])
    assert res.exit_code == 1, res.output                  # invalid dialogues are listed: exit 1
    assert "invalid: smooth_features/s3: " in res.output
    for name in OUTPUTS:
        assert (tmp_path / "x" / name).read_bytes() == (scored["out"] / name).read_bytes(), name


def test_stage_is_deterministic_and_rerun_replaces_the_tree(scored, tmp_path):
    out2 = tmp_path / "out2"
    assert run_stage(scored["inputs"], out2) == 0
    (out2 / "tree" / "stale").mkdir()                      # a rerun replaces the whole tree
    assert run_stage(scored["inputs"], out2) == 0
    assert not (out2 / "tree" / "stale").exists()

    def files(d: Path) -> dict:
        return {p.relative_to(d).as_posix(): p.read_bytes() for p in sorted(d.rglob("*"))
                if p.is_file() and p.name != "stage.json"}
    assert files(out2) == files(scored["out"])


def test_strict_rescore_stops_at_a_recorded_invalid_dialogue(scored, tmp_path):
    res = CliRunner().invoke(main, ["score", "--benchmark", "mtr", "--tree", str(scored["out"] / "tree"), "--out",
                                    str(tmp_path / "x"), "--strict"])
    assert res.exit_code == 2 and res.output.startswith("error: smooth_features/s3: ")
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("content,message", [
    ("{", "coverage.json: not readable JSON"),
    (json.dumps({"format": "other"}), "format 'mtr-coverage/1'"),
    (json.dumps({"format": "mtr-coverage/1", "missing": [{"dialogue": "a/b", "round": 0, "reason": "x"}]}),
     "missing[0]"),
])
def test_bad_coverage_file_stops_the_rescore(scored, tmp_path, content, message):
    import shutil
    tree = tmp_path / "tree"
    shutil.copytree(scored["out"] / "tree", tree)
    (tree / "coverage.json").write_text(content)
    res = CliRunner().invoke(main, ["score", "--benchmark", "mtr", "--tree", str(tree), "--out", str(tmp_path / "x")])
    assert res.exit_code == 2 and message in res.output and len(res.output.strip().splitlines()) == 1
    assert not (tmp_path / "x").exists()


def test_bad_round_files_make_the_round_missing_or_the_dialogue_invalid(tmp_path):
    run = Run(tmp_path / "in")
    F, sm = "features", "smooth_features"
    run.round(sm, "a", 1, 2, F, smooth_enc(1, start_of(1)), set_="smooth", asr_words=[])
    run.round(sm, "a", 2, 2, F, smooth_enc(2, start_of(2)), set_="smooth",
              asr_words=[{"text": "x", "start": "soon", "end": 1.0}])
    run.round(sm, "b", 1, 1, F, smooth_enc(1, start_of(1)), set_="smooth", asr_words=[],
              round_json=lambda rj: {**rj, "rounds": 2})            # disagrees with b-r02
    run.round(sm, "b", 2, 2, F, smooth_enc(2, start_of(2)), set_="smooth", asr_words=[],
              round_json=lambda rj: {**rj, "rounds": 3})
    run.round(sm, "c", 1, 1, F, smooth_enc(1, start_of(1)), set_="smooth", asr_words=[],
              round_json=lambda rj: "NaN")
    run.round(sm, "d", 1, 1, F, smooth_enc(1, start_of(1)), set_="smooth", asr_words=[],
              round_json=lambda rj: {**rj, "encoding": {**rj["encoding"], "round": 2}})
    run.round(sm, "e", 1, 1, F, smooth_enc(1, start_of(1)), set_="smooth", runner="ok")   # no ASR
    run.round(sm, "g", 1, 1, F, smooth_enc(1, start_of(1)), set_="smooth", asr_words=[],
              round_json=lambda rj: False)                           # listed, no round.json at all
    IF, ifs = "instruction_following", "smooth_instruction_following"
    run.round(ifs, "h", 1, 2, IF, smooth_enc(1, start_of(1)), set_="smooth", asr_words=[],
              judgement=judgement("mtr-instruction-following", 1, "other", IF, k=1))
    run.round(ifs, "h", 2, 2, IF, smooth_enc(2, start_of(2)), set_="smooth", asr_words=[])  # not judged
    out = tmp_path / "out"
    assert run_stage(run.write(), out) == 0
    m = json.loads((out / "metrics.json").read_text())
    inv = {b["dialogue"]: b["problem"] for b in m["invalid"]}
    assert set(inv) == {"smooth_features/b", "smooth_features/c", "smooth_features/d", "smooth_features/g"}
    assert "rounds 3 differs" in inv["smooth_features/b"]
    assert "not readable JSON" in inv["smooth_features/c"]
    assert "encoding round must be 1, got 2" in inv["smooth_features/d"]
    assert "none of its 1 round sample(s) has a round.json" in inv["smooth_features/g"]
    miss = {m_["sample"]: m_["reason"] for m_ in m["missing"]}
    assert miss == {"smooth_features/a-r02": "transcript.json: word 0: start must be a non-negative number, "
                                             "got 'soon'",
                    "smooth_features/e-r01": "no transcript.json (the ASR wrote none for the round)",
                    f"{ifs}/h-r01": "judgement.json: dialogue_id 'other' is not the round's 'h'",
                    f"{ifs}/h-r02": "no judgement.json (the judge wrote none for the round)"}
    assert m["subsets"][ifs]["rounds_observed"] == 0 and m["subsets"][ifs]["rounds_declared"] == 2
    assert m["subsets"]["smooth_features"]["dialogues"] == 2


def test_round_ids_and_settings():
    assert parse_round_id("abc-r01") == ("abc", 1)
    assert parse_round_id("a-r1-r10") == ("a-r1", 10)
    assert parse_round_id("abc-r100") == ("abc", 100)
    for bad in ("abc-r1", "abc-r00", "abc", "abc-r010"):
        assert parse_round_id(bad) is None, bad
    check_config("aggregator", {"benchmark": "mtr"})
    with pytest.raises(DuplexEvalError):
        check_config("aggregator", {"benchmark": ""})
    # the schema takes any benchmark name; the stage refuses one no package registers (one line)
    with pytest.raises(DuplexEvalError, match="mtr-duplexbench") as err:
        make_stage({"benchmark": "mtr-duplexbench"})
    assert "\n" not in str(err.value)
    # there is no default benchmark any more: a stage config names its own
    with pytest.raises(DuplexEvalError, match="`benchmark` is missing"):
        make_stage({})
    assert make_stage({"benchmark": "fdb-v1"}).finalize is fdb_score_stage
    assert make_stage({"benchmark": "mtr"}).finalize is mtr_score_stage
    with pytest.raises(DuplexEvalError, match="has no setting icc_gt"):
        make_stage({"benchmark": "mtr", "icc_gt": "x.json"})    # fdb-v1's setting, not MTR's


def test_a_dialogue_the_rounds_stage_could_not_cut_is_invalid(scored):
    """The rounds stage's manifest names a dialogue-quality dialogue it made no rounds of: it is
    invalid in metrics.json and in the tree's coverage.json, so a rescore names it too."""
    inv = {b["dialogue"]: b["problem"] for b in scored["metrics"]["invalid"]}
    assert inv["synthetic_dialogue_quality/q9"] == "no round samples: segmentation.json: no user turn"
    cov = json.loads((scored["out"] / "tree" / "coverage.json").read_text())
    assert {"dialogue": "synthetic_dialogue_quality/q9",
            "problem": "no round samples: segmentation.json: no user turn"} in cov["invalid"]

