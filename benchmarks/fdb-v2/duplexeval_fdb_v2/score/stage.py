"""The aggregate stage of fdb-v2 (the `score` hook): each live session of the merged dataset and
runner stages scored (session.py), pooled per task (pool.py), written as metrics.json,
samples.jsonl and report.md.

A session is scored only with everything it needs: the runner completed it (no upstream
failure), its runner.json says status ok (an `ineligible` record is counted with its code and
reason), and its examiner.json, output.wav and live.json are there and well formed. Every other
session is listed in metrics.json `missing` with its reason, and counts in its task's coverage.

Setting (beside "benchmark"): `response_window_s` (default 5.0).
"""

from __future__ import annotations

import json
from pathlib import Path

from duplexeval_common.benchmarks import Option
from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.jsonio import atomic_write_many, dumps, jsonl_text

from . import judged, pool, report_md
from .session import SessionError, session_metrics

DEFINITIONS = "fdb-v2-live-1"
OPTIONS = (Option("response_window_s", float, 5.0, "seconds after an examiner turn within which the model's "
                  "start of speech answers it", low=0.1, high=60.0),)
NOTE = ("not official: an offline examiner in lockstep with the model (duplexeval), not upstream's "
        "gpt-realtime examiner over WebRTC; numbers measured on the recording, not judged")


def check(config: dict) -> None:
    unknown = sorted(set(config) - {"benchmark", "response_window_s"})
    if unknown:
        raise DuplexEvalError(f"aggregator: fdb-v2 scoring has no setting {', '.join(unknown)} "
                              f"(known: response_window_s)")
    OPTIONS[0].check("fdb-v2", config.get("response_window_s", 5.0))


def _json(path: Path | None):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def eligibility(find, key: str, failure: str | None) -> tuple[dict | None, str | None]:
    """({file: path or parsed JSON}, None) of a scorable session, else (None, why).
    `find(name)` gives a file of the session or None."""
    if failure:
        return None, f"failed: {failure}"
    files = {n: find(n) for n in ("runner.json", "examiner.json", "output.wav", "live.json")}
    judgement = find("judgement.json")
    for name, path in files.items():
        if path is None:
            return None, f"missing: {name}"
    runner = _json(files["runner.json"])
    if not isinstance(runner, dict):
        return None, "invalid: runner.json is not a JSON object"
    if runner.get("status", "ok") != "ok":
        ine = runner.get("ineligible") or {}
        return None, f"ineligible: {ine.get('code', runner['status'])}: {ine.get('reason', 'the runner says so')}"
    examiner, live = _json(files["examiner.json"]), _json(files["live.json"])
    if examiner is None:
        return None, "invalid: examiner.json is not valid JSON"
    if not isinstance(live, dict) or not isinstance((live.get("examiner") or {}).get("goals"), list):
        return None, "invalid: live.json has no examiner goals"
    return {"examiner": examiner, "live": live, "output": files["output.wav"],
            "judgement": _json(judgement) if judgement is not None else None}, None


def score_sessions(sessions: list[dict], window_s: float, cache: Path | None = None) -> tuple[list[dict], dict]:
    """sessions: [{"key", "subset", "task", "find", "failure"}] -> (samples.jsonl rows, missing)."""
    import soundfile as sf
    from .speech import model_speech
    ready, missing = [], {}
    for s in sessions:
        got, why = eligibility(s["find"], s["key"], s["failure"])
        if why:
            missing[s["key"]] = why
        else:
            ready.append((s, got))
    speech = model_speech([g["output"] for _, g in ready], cache)
    rows = []
    for s, g in ready:
        info = sf.info(str(g["output"]))
        goal_ids = [x.get("id") for x in g["live"]["examiner"]["goals"] if isinstance(x, dict)]
        try:
            m = session_metrics(g["examiner"], speech[g["output"]], info.frames / info.samplerate, window_s, goal_ids)
        except SessionError as exc:
            missing[s["key"]] = f"invalid: {exc}"
            continue
        row = {"sample_id": s["key"], "subset": s["subset"], "task": s["task"], "eligible": True,
               "model_speech": [list(x) for x in speech[g["output"]]], **m}
        if g["live"].get("seed"):  # an epoch after the first (the dataset's `epochs`)
            row["epoch"] = int(g["live"]["seed"]) + 1
        if s.get("judged"):
            j = g["judgement"] if isinstance(g["judgement"], dict) else {"status": "missing"}
            row["judgement"] = {k: j.get(k) for k in ("status", "events", "task_score", "judge", "model", "official")}
        rows.append(row)
    for key, why in missing.items():
        s = next(x for x in sessions if x["key"] == key)
        rows.append({"sample_id": key, "subset": s["subset"], "task": s["task"], "eligible": False, "reason": why})
    return sorted(rows, key=lambda r: r["sample_id"]), missing


def metrics_of(rows: list[dict], missing: dict, window_s: float, vad: dict) -> dict:
    subsets = {}
    for subset in sorted({r["subset"] for r in rows}):
        mine = [r for r in rows if r["subset"] == subset]
        scored = [r for r in mine if r["eligible"]]
        unified, examiner = pool.pool(scored)
        subsets[subset] = {
            "task": mine[0]["task"], "n": len(mine),
            "coverage": {"sessions": len(mine), "scored": len(scored), "missing": len(mine) - len(scored),
                         "share": len(scored) / len(mine),
                         "reasons": {r["sample_id"]: r["reason"] for r in mine if not r["eligible"]}},
            "unified": unified, "examiner": examiner}
        spread = pool.epochs(scored)
        if spread is not None:
            subsets[subset]["epochs"] = spread
        if any("judgement" in r for r in scored):
            subsets[subset]["judged"] = judged.pool([r["judgement"] for r in scored if "judgement" in r])
    return {"benchmark": "fdb-v2", "definitions": DEFINITIONS, "official": False, "note": NOTE,
            "settings": {"response_window_s": window_s, "vad": vad},
            "subsets": subsets, "missing": dict(sorted(missing.items()))}


def write(out: Path, rows: list[dict], metrics: dict) -> None:
    out = Path(out)
    atomic_write_many({out / "metrics.json": dumps(metrics), out / "samples.jsonl": jsonl_text(rows),
                       out / "report.md": report_md.render(metrics)})


def score(sctx) -> None:
    from .speech import vad_record
    window = float(sctx.config.get("response_window_s", 5.0))
    judged_run = any((Path(d) / "judge.json").is_file() for d in getattr(sctx.inputs, "dirs", []))
    sessions = [{"key": s.key, "subset": s.subset, "task": s.task or s.subset,
                 "find": (lambda name, s=s: sctx.inputs.find(s, name)),
                 "failure": sctx.inputs.upstream_failure(s), "judged": judged_run} for s in sctx.inputs.samples()]
    rows, missing = score_sessions(sessions, window)
    write(sctx.output, rows, metrics_of(rows, missing, window, vad_record()))
