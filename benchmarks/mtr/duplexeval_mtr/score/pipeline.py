"""The aggregate stage for MTR-DuplexBench (config {"benchmark": "mtr"}): round samples -> the
scoring tree of benchmarks/mtr/README.md -> metrics.json, rounds.jsonl, report.md (one code path with
`aggregator score --benchmark mtr`: mtr.score.score_outputs).

Inputs are the stage folders [dataset, rounds, runner, asr, judge], merged per sample; the samples
are the round samples the last manifest lists, `<subset>/<dialogue_id>-r<kk>` (benchmarks/mtr/README.md). Per
(subset, dialogue_id) the stage writes under OUT/tree/<subset>/<dialogue_id>/:

- encoding.json: task, set, source and the encoding of every declared round 1..K (K = round.json
  "rounds"), each from that round's round.json, found in any input stage even when the round's
  sample failed later or is not listed; a missing or malformed round.json makes the dialogue
  invalid (one line), as do round.json files that disagree (dialogue_id, rounds, task, set, source)
  or a dialogue_id that is not a plain name;
- transcript.json: one entry per observed round (listed in the manifest, no input stage failed or
  skipped it, runner.json present and not "ineligible", the ASR's transcript.json present and
  well formed), its segments = duplexeval_common.ipus.segments_from_words over the words that
  start at or after the round's start_s;
- judgements.jsonl (instruction following, safety, dialogue quality): the judge's judgement.json of
  each observed round, by round.

OUT/tree/coverage.json records the dialogues left out ("invalid") and, per declared round not
observed, the reason ("missing"); score_tree reads it back, so `aggregator score --benchmark mtr --tree OUT/tree
--out X` writes the same metrics.json, rounds.jsonl and report.md byte for byte. Features rounds
ignore the judge stage's record (features rounds are not judged).
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.ipus import segments_from_words
from duplexeval_common.jsonio import dumps, jsonl_text
from duplexeval_common.samples import STAGE_RECORD, Inputs, Sample, id_sort_key, name_problem

from ..tasks import TASKS

from .encodings import ENCODING, JUDGEMENTS, JUDGED, TRANSCRIPT
from .score import COVERAGE, COVERAGE_FORMAT

ROUND_ID = re.compile(r"^(?P<dialogue>.+)-r(?P<k>[0-9]{2,3})$")
ROUND_FORMAT = "mtr-round/1"
TREE = "tree"
JUDGE_COMPONENT = "judge"


class Problem(Exception):
    """A one-line problem of a dialogue (invalid) or of one round (missing)."""


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _reject_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def read_json_file(path: Path, name: str) -> object:
    """A JSON file, or Problem (one line): unreadable, not JSON, NaN/Infinity, nested too deep."""
    try:
        return json.loads(path.read_text(encoding="utf-8"), parse_constant=_reject_constant)
    except RecursionError:
        raise Problem(f"{name}: nested too deeply") from None
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise Problem(f"{name}: not readable JSON ({_one_line(exc)})") from None


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def parse_round_id(sample_id: str) -> tuple[str, int] | None:
    """(dialogue_id, k) of a round sample id `<dialogue_id>-r<kk>` (kk two digits, or three past
    99), or None."""
    m = ROUND_ID.match(sample_id)
    if not m:
        return None
    k = int(m["k"])
    if k < 1 or sample_id != f"{m['dialogue']}-r{k:02d}":
        return None
    return m["dialogue"], k


@dataclass
class Upstream:
    """The input stages' per-sample statuses (stage.json "samples"), by component."""

    records: list = field(default_factory=list)   # [(component, {key: status})]

    @classmethod
    def read(cls, dirs: list[Path]) -> "Upstream":
        out = []
        for d in dirs:
            p = Path(d) / STAGE_RECORD
            if not p.is_file():
                continue
            try:
                rec = json.loads(p.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
                raise DuplexEvalError(f"{p}: not readable JSON ({_one_line(exc)})") from None
            samples = rec.get("samples") if isinstance(rec, dict) else None
            out.append((str(rec.get("component", "?")) if isinstance(rec, dict) else "?",
                        samples if isinstance(samples, dict) else {}))
        return cls(out)

    def failure(self, key: str, ignore: tuple = ()) -> str | None:
        """Why an input stage failed or skipped the sample (as Inputs.upstream_failure says it),
        leaving out the components in `ignore`."""
        for component, samples in self.records:
            if component in ignore:
                continue
            st = samples.get(key)
            if not isinstance(st, dict) or st.get("status") == "ok":
                continue
            if st.get("status") == "skipped":
                return _one_line(st.get("reason") or f"skipped upstream in {component}")
            return _one_line(f"failed upstream in {component}: {st.get('reason', '')}")
        return None


@dataclass
class Built:
    """What build_tree makes: files by path relative to the tree, and the records of what was
    left out."""

    files: dict = field(default_factory=dict)
    invalid: list = field(default_factory=list)    # [(dialogue key, problem)]
    missing: list = field(default_factory=list)    # [{"dialogue", "round", "reason"}]
    notes: list = field(default_factory=list)      # lines for the log: samples not scored at all

    def coverage(self) -> dict:
        return {"format": COVERAGE_FORMAT,
                "invalid": [{"dialogue": k, "problem": p} for k, p in self.invalid],
                "missing": self.missing}


def _check_round_json(obj, sample: str, task: str, dialogue_id: str, k: int) -> dict:
    """The fields of one round.json the tree needs, checked; Problem naming the sample."""
    where = f"{sample}: round.json"
    if not isinstance(obj, dict):
        raise Problem(f"{where}: expected a JSON object")
    if obj.get("format") != ROUND_FORMAT:
        raise Problem(f"{where}: format must be {ROUND_FORMAT!r}, got {obj.get('format')!r}")
    did = obj.get("dialogue_id")
    bad = name_problem(did)
    if bad:
        raise Problem(f"{where}: dialogue_id {bad}")
    if did != dialogue_id:
        raise Problem(f"{where}: dialogue_id {did!r} is not the sample's dialogue {dialogue_id!r}")
    n, total = obj.get("round"), obj.get("rounds")
    if not isinstance(total, int) or isinstance(total, bool) or total < 1:
        raise Problem(f"{where}: rounds must be a positive integer, got {total!r}")
    if n != k or isinstance(n, bool):
        raise Problem(f"{where}: round must be {k} (the sample's round), got {n!r}")
    if obj.get("task") != task:
        raise Problem(f"{where}: task {obj.get('task')!r} is not the sample's task {task!r} (its manifest row's)")
    set_ = obj.get("set")
    if set_ is not None and (not isinstance(set_, str) or not set_):
        raise Problem(f"{where}: set must be a non-empty string or null, got {set_!r}")
    if not _finite(obj.get("start_s")) or obj["start_s"] < 0:
        raise Problem(f"{where}: start_s must be a non-negative number, got {obj.get('start_s')!r}")
    if not _finite(obj.get("end_s")) or obj["end_s"] < obj["start_s"]:
        raise Problem(f"{where}: end_s must be a number at or after start_s ({obj['start_s']}), "
                      f"got {obj.get('end_s')!r}")
    enc = obj.get("encoding")
    if not isinstance(enc, dict):
        raise Problem(f"{where}: encoding must be an object")
    if enc.get("round") != k or isinstance(enc.get("round"), bool):
        raise Problem(f"{where}: encoding round must be {k}, got {enc.get('round')!r}")
    source = obj.get("source")
    if source is not None and not isinstance(source, str):
        raise Problem(f"{where}: source must be a string")
    return {"rounds": total, "task": task, "set": set_, "source": source, "start_s": float(obj["start_s"]),
            "encoding": enc}


def _find(inputs: Inputs, sample: Sample, name: str) -> Path | None:
    try:
        return inputs.find(sample, name)
    except DuplexEvalError as exc:
        raise Problem(_one_line(exc)) from None


def _words(obj, start_s: float) -> list[dict]:
    """The transcript's words that start at or after start_s (dialogue timeline), checked, in
    time order."""
    if not isinstance(obj, dict) or not isinstance(obj.get("words"), list):
        raise Problem("transcript.json: expected an object with a words list")
    out = []
    for j, w in enumerate(obj["words"]):
        if not isinstance(w, dict) or not isinstance(w.get("text", ""), str):
            raise Problem(f"transcript.json: word {j}: expected an object with a text")
        a, b = w.get("start"), w.get("end")
        if not _finite(a) or a < 0:
            raise Problem(f"transcript.json: word {j}: start must be a non-negative number, got {a!r}")
        if b is not None and (not _finite(b) or b < a):
            raise Problem(f"transcript.json: word {j}: end must be null or a number at or after its "
                          f"start ({a}), got {b!r}")
        if a >= start_s:
            out.append({"text": w.get("text", ""), "start": a, "end": b})
    return sorted(out, key=lambda w: (w["start"], w["start"] if w["end"] is None else w["end"]))


def _observe(inputs: Inputs, upstream: Upstream, sample: Sample, task: str, start_s: float,
             listed: bool) -> tuple[list | None, dict | None]:
    """(segments, judgement) of one round; Problem(reason) when the round is not observed."""
    if not listed:
        raise Problem("the round sample is not listed in the manifest")
    why = upstream.failure(sample.key, ignore=() if task in JUDGED else (JUDGE_COMPONENT,))
    if why:
        raise Problem(why)
    p = _find(inputs, sample, "runner.json")
    if p is None:
        raise Problem("no runner.json (the runner wrote no output for the round)")
    runner = read_json_file(p, "runner.json")
    if not isinstance(runner, dict):
        raise Problem("runner.json: expected a JSON object")
    if runner.get("status") == "ineligible":
        inel = runner.get("ineligible") if isinstance(runner.get("ineligible"), dict) else {}
        raise Problem(_one_line(f"the runner marked the round ineligible ({inel.get('code', '?')}: "
                                f"{inel.get('reason', '')})"))
    p = _find(inputs, sample, "transcript.json")
    if p is None:
        raise Problem("no transcript.json (the ASR wrote none for the round)")
    segments = segments_from_words(_words(read_json_file(p, "transcript.json"), start_s))
    judgement = None
    if task in JUDGED:
        p = _find(inputs, sample, "judgement.json")
        if p is None:
            raise Problem("no judgement.json (the judge wrote none for the round)")
        judgement = read_json_file(p, "judgement.json")
        if not isinstance(judgement, dict):
            raise Problem("judgement.json: expected a JSON object")
    return segments, judgement


def _check_judgement(judgement: dict, did: str, task: str, k: int) -> None:
    """The judge's record names this round (round, dialogue_id and task, when it gives them)."""
    for name, want in (("round", k), ("dialogue_id", did), ("task", task)):
        if name in judgement and (judgement[name] != want or isinstance(judgement[name], bool)):
            raise Problem(f"judgement.json: {name} {judgement[name]!r} is not the round's {want!r}")


def _dialogue(inputs: Inputs, upstream: Upstream, subset: str, did: str, listed: dict,
              built: Built) -> None:
    """Add one dialogue's folder to built.files, or record it as invalid."""
    key = f"{subset}/{did}"
    task = next(iter(listed.values())).task
    # The round.json of every listed round sample, then of every declared round 1..K.
    info: dict[int, dict] = {}
    for k in sorted(listed):
        p = _find(inputs, listed[k], "round.json")
        if p is not None:
            info[k] = _check_round_json(read_json_file(p, f"{listed[k].key}: round.json"),
                                        listed[k].key, task, did, k)
    if not info:
        raise Problem(f"none of its {len(listed)} round sample(s) has a round.json")
    first = info[min(info)]
    total = first["rounds"]
    for k in sorted(listed):
        if k > total:
            raise Problem(f"round sample {listed[k].key} is beyond the {total} rounds round.json declares")
    for k in range(1, total + 1):
        s = listed.get(k) or Sample(subset, f"{did}-r{k:02d}")
        if k not in info:
            p = _find(inputs, s, "round.json")
            if p is None:
                raise Problem(f"round {k}: {s.key} has no round.json (its encoding is needed for "
                              "declared rounds)")
            info[k] = _check_round_json(read_json_file(p, f"{s.key}: round.json"), s.key, task, did, k)
        for name in ("rounds", "task", "set", "source"):
            if info[k][name] != first[name]:
                raise Problem(f"{s.key}: round.json {name} {info[k][name]!r} differs from round "
                              f"{min(info)}'s {first[name]!r}")
    encoding = {"dialogue_id": did, "task": task, "rounds": [info[k]["encoding"] for k in range(1, total + 1)]}
    if first["set"] is not None:
        encoding["set"] = first["set"]
    if first["source"] is not None:
        encoding["source"] = first["source"]
    rounds, judgements, missing = [], [], []
    for k in range(1, total + 1):
        s = listed.get(k) or Sample(subset, f"{did}-r{k:02d}")
        try:
            segments, judgement = _observe(inputs, upstream, s, task, info[k]["start_s"], k in listed)
            if judgement is not None:
                _check_judgement(judgement, did, task, k)
        except Problem as exc:
            missing.append({"dialogue": key, "round": k, "reason": _one_line(exc)})
            continue
        rounds.append({"round": k, "segments": segments})
        if judgement is not None:
            judgements.append({**judgement, "round": k})
    try:  # nothing unwritable should reach here (NaN and Infinity are refused on reading)
        files = {ENCODING: dumps(encoding), TRANSCRIPT: dumps({"dialogue_id": did, "rounds": rounds})}
        if task in JUDGED:
            files[JUDGEMENTS] = jsonl_text(judgements)
    except (TypeError, ValueError) as exc:
        raise Problem(f"cannot write its tree files ({_one_line(exc)})") from None
    files = {f"{subset}/{did}/{name}": text for name, text in files.items()}
    built.files.update(files)
    built.missing += missing


def build_tree(inputs: Inputs) -> Built:
    """The scoring tree of the stage's inputs (files in memory) and what was left out."""
    upstream = Upstream.read(inputs.dirs)
    groups: dict[tuple[str, str], dict[int, Sample]] = {}
    built = Built()
    for s in inputs.samples():
        if s.task not in TASKS:
            built.notes.append(f"{s.key}: task {s.task!r} (its manifest row's) is not an MTR-DuplexBench task; "
                               "not scored")
            continue
        parsed = parse_round_id(s.id)
        if parsed is None:
            built.notes.append(f"{s.key}: not a round sample (<dialogue_id>-r<kk>); not scored")
            continue
        groups.setdefault((s.subset, parsed[0]), {})[parsed[1]] = s
    for subset, did in sorted(groups, key=lambda g: (g[0], *id_sort_key(g[1]))):
        try:
            _dialogue(inputs, upstream, subset, did, groups[(subset, did)], built)
        except Problem as exc:
            built.invalid.append((f"{subset}/{did}", _one_line(exc)))
    # dialogues the rounds stage could not cut into rounds (its manifest says which, and why):
    # invalid, so the scores, the tree's coverage.json and a rescore all name them
    man = inputs.root_file("manifest.json")
    try:
        rounds = read_json_file(man, "manifest.json").get("rounds") if man is not None else None
    except (Problem, AttributeError):
        rounds = None  # the samples' listing read it already: nothing more to learn here
    without = rounds.get("dialogues_without_rounds") if isinstance(rounds, dict) else None
    if isinstance(without, dict):
        for key, why in sorted(without.items()):
            built.invalid.append((str(key), _one_line(f"no round samples: {why}")))
    built.invalid.sort(key=lambda x: (x[0], x[1]))
    built.files[COVERAGE] = dumps(built.coverage())
    return built


def write_tree(built: Built, tree: Path) -> None:
    """Write the tree all at once: into a hidden sibling folder, then renamed over `tree`."""
    tree = Path(tree)
    partial = tree.parent / f".{tree.name}.partial"
    if partial.exists() or partial.is_symlink():
        _remove(partial)
    partial.mkdir(parents=True)
    for rel, text in sorted(built.files.items()):
        p = partial / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    if tree.exists() or tree.is_symlink():
        _remove(tree)
    os.replace(partial, tree)


def _remove(p: Path) -> None:
    if p.is_symlink() or p.is_file():
        p.unlink()
    else:
        shutil.rmtree(p)


def score_stage(sctx) -> None:
    """The stage's finalize step: build OUT/tree, score it, write metrics.json, rounds.jsonl and
    report.md; one log line per invalid dialogue, missing round and sample not scored."""
    import sys
    from duplexeval_common.jsonio import atomic_write_many
    from .score import score_outputs
    built = build_tree(sctx.inputs)
    tree = Path(sctx.output) / TREE
    write_tree(built, tree)
    metrics, files = score_outputs(tree)
    atomic_write_many({Path(sctx.output) / name: text for name, text in files.items()})
    for line in built.notes:
        print(f"[aggregator] {line}", file=sys.stderr, flush=True)
    for bad in metrics["invalid"]:
        print(f"[aggregator] invalid: {bad['dialogue']}: {bad['problem']}", file=sys.stderr, flush=True)
    for m in metrics["missing"]:
        print(f"[aggregator] missing: {m['sample']}: {m['reason']}", file=sys.stderr, flush=True)
    sctx.invocation["mtr"] = {"dialogues": sum(s["dialogues"] for s in metrics["subsets"].values()),
                              "invalid": len(metrics["invalid"]), "missing": len(metrics["missing"])}
