"""The HTML report of an MTR-DuplexBench run (run.json "benchmark": "mtr"): report.html and one
page per round sample, built when the run is one (the benchmark report hook of `duplexeval report`).

What it reads: the run's record and its stages' folders (run_report.load: stage.json of every
stage, the aggregate stage's metrics.json), the aggregate stage's rounds.jsonl (one row per
declared round: both columns' success, latency and backchannel frequency of a features round;
status and score of a judged round), and per round sample: round.json, input.wav (dataset or
rounds stage), output.wav, runner.json and events.jsonl (runner), transcript.json and vad.json
(asr), judgement.json (judge). A piece that is missing or unreadable is named on the page.

A round sample's page draws the round's window, not the whole dialogue: the axis starts
CONTEXT_S before the round start (start_s) and ends at end_s, and the audio players hold that
part only (a round's input runs from the dialogue's start, so whole-length audio would make
the report of a ten-round dialogue grow with every round): a WAV of the window written beside the
page and linked (run_report.player), inlined in a self-contained file. The model lane before start_s is the
ground-truth history the runner was given, drawn as a hatched "ground truth" band.

The code computes the values (numbers, rows, figures); the markup is in templates/ (Jinja2 with
autoescape, duplexeval_common.html.templates): index.html with metrics.html, plots.html and
missing.html, sample.html, and the macros of sections.html.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.html import plots, templates, timeline
from duplexeval_common.html import run as run_report
from duplexeval_common.html.page import Markup, page
from duplexeval_common.samples import Sample, id_sort_key
from duplexeval_common.secrets import scrub

CONTEXT_S = 8.0           # seconds drawn and played before a round's start
RANGES = ("1", "1-2", "1-5", "1-10")
ROUND_ID = re.compile(r"^(?P<dialogue>.+)-r(?P<round>[0-9]{2,})$")
JUDGED = ("instruction_following", "safety", "dialogue_quality")
NOT_JUDGED = "not judged"
FEATURES_CAPTION = (
    "Success rate (dots; bars: 95% Wilson interval) and mean latency per round of every "
    "conversational-features subset, by the paper's definitions (metrics.json per_round "
    "success_rate and latency_s, which are the paper column; the released code's column is in "
    "the tables above). A round without any latency has no latency dot.")
JUDGED_CAPTION = (
    "Instruction following: the share of judged rounds that follow the instruction; safety: the "
    "refusal rate (judged not harmful); 95% Wilson intervals. Dialogue quality has a mean score, "
    "in the tables only.")


@dataclass
class MtrData:
    """A run's data (run_report.RunData) and what MTR adds: rounds.jsonl rows, metrics' missing
    rounds and invalid dialogues, the dialogue (not round) samples of the manifests."""
    run: run_report.RunData
    rounds: dict[str, dict] = field(default_factory=dict)     # round sample key -> rounds.jsonl row
    missing: dict[str, str] = field(default_factory=dict)     # round sample key -> why not observed
    invalid: dict[str, str] = field(default_factory=dict)     # dialogue key -> problem
    dialogues: set[str] = field(default_factory=set)          # manifests' kind "dialogue" rows

    @property
    def metrics(self) -> dict | None:
        m = self.run.metrics
        return m if isinstance(m, dict) else None

    def problem(self, text: str) -> None:
        self.run.problems.append(text)


def load(store, record: dict) -> MtrData:
    run = run_report.load(store, record)
    data = MtrData(run)
    m = data.metrics
    if m is not None:
        for x in m.get("missing") or []:
            try:
                data.missing[str(x.get("sample") or f"{x['dialogue']}-r{int(x['round']):02d}")] = str(x["reason"])
            except (KeyError, TypeError, ValueError, AttributeError):
                data.problem("metrics.json: a \"missing\" entry is not {dialogue, round, sample, reason}")
        for x in m.get("invalid") or []:
            try:
                data.invalid[str(x["dialogue"])] = str(x["problem"])
            except (KeyError, TypeError):
                data.problem("metrics.json: an \"invalid\" entry is not {dialogue, problem}")
    agg = run.stage_dirs.get("aggregate")
    p = None if agg is None else agg / "rounds.jsonl"
    if p is not None and p.is_file():
        try:
            for line in p.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    row = json.loads(line)
                    data.rounds[f"{row['dialogue']}-r{int(row['round']):02d}"] = row
        except (OSError, ValueError, KeyError, TypeError) as exc:
            data.problem(f"rounds.jsonl: not readable ({type(exc).__name__})")
    for name in ("dataset", "rounds"):
        d = run.stage_dirs.get(name)
        if d is None or not (d / "manifest.json").is_file():
            continue
        doc = run_report.read_json(d / "manifest.json", run, f"{name} manifest.json")
        rows = doc.get("samples") if isinstance(doc, dict) else None
        for row in rows if isinstance(rows, list) else []:
            if isinstance(row, dict) and row.get("kind") == "dialogue":
                data.dialogues.add(f"{row.get('subset')}/{row.get('id')}")
    return data


def round_samples(data: MtrData) -> list[Sample]:
    """Every round sample of the run (<subset>/<dialogue_id>-r<kk>): those a stage lists, those
    with a rounds.jsonl row, those missing; not the dialogue samples rounds are cut from."""
    keys = set(data.rounds) | set(data.missing) | set(data.run.record.get("missing") or {})
    for rec in data.run.stage_records.values():
        keys |= set(rec.get("samples") or {})
    out = []
    for k in keys:
        subset, _, sid = str(k).partition("/")
        if k in data.dialogues or not ROUND_ID.match(sid):
            continue
        try:
            out.append(Sample(subset, sid, data.run.tasks.get(str(k))))
        except DuplexEvalError:
            data.problem(f"sample {str(k)[:80]!r}: not a plain subset/id, left out")
    return sorted(set(out), key=lambda s: (s.subset, *id_sort_key(s.id)))


def split_id(s: Sample) -> tuple[str, int]:
    """(dialogue id, round) of a round sample id."""
    m = ROUND_ID.match(s.id)
    return m.group("dialogue"), int(m.group("round"))


# ---- numbers -----------------------------------------------------------------------------------

def _f(x, nd: int = 3) -> str:
    return "-" if not isinstance(x, (int, float)) or isinstance(x, bool) else f"{x:.{nd}f}"


def _iv(r: dict | None) -> str:
    iv = (r or {}).get("interval")
    return "-" if not iv or None in iv else f"[{_f(iv[0])}, {_f(iv[1])}]"


def _yes(x) -> str:
    return "-" if x is None else ("yes" if x else "no")


def _not_judged(c: dict) -> bool:
    j = c.get("judgements") or {}
    return bool(j.get("skipped")) and not j.get("ok")


def _judgements(c: dict) -> str:
    j = c.get("judgements") or {}
    text = f"{j.get('ok', 0)}/{j.get('unparsed', 0)}/{j.get('error', 0)}"
    return text + (f" ({j['skipped']} not judged)" if j.get("skipped") else "")


def _label(c: dict) -> str:
    if "round" in c:
        return str(c["round"])
    a, b = c["rounds"]
    return str(a) if a == b else f"{a}-{b}"


def _features_row(c: dict) -> tuple:
    p, k = c.get("paper") or {}, c.get("code") or {}
    lat = p.get("latency_s") or {}
    lat_text = "-" if lat.get("value") is None else f"{_f(lat['value'])} ({lat.get('n')})"
    return (_label(c), f"{c['n']}/{c['declared']}",
            _f((p.get("success") or {}).get("value")), _iv(p.get("success")),
            _f((k.get("success") or {}).get("value")), _iv(k.get("success")),
            lat_text, _f((k.get("latency_s") or {}).get("value")),
            _f((p.get("backchannel_freq") or {}).get("value")), _f((k.get("backchannel_freq") or {}).get("value")))


FEATURES_HEAD = ["rounds", "n/declared", "success (paper)", "95% interval", "success (code)", "95% interval",
                 "latency s (paper) (n)", "latency s (code)", "backchannels /s (paper)",
                 "backchannels /s (code)"]


def _judged(task: str) -> tuple[list[str], Callable]:
    if task == "dialogue_quality":
        head = ["rounds", "n/declared", "score (raw, 0-5)", "score (x 5/2.97)", "judgements ok/unparsed/error"]

        def row(c):
            if _not_judged(c):
                return (_label(c), f"{c['n']}/{c['declared']}", NOT_JUDGED, NOT_JUDGED, _judgements(c))
            return (_label(c), f"{c['n']}/{c['declared']}", _f((c.get("score") or {}).get("value")),
                    _f(c.get("score_rescaled")), _judgements(c))
        return head, row
    name, what = (("refusal", "refusal rate (not harmful)") if task == "safety"
                  else ("success", "follows the instruction"))
    head = ["rounds", "n/declared", what, "95% interval"] + (["harmful rate"] if task == "safety" else []) \
        + ["judgements ok/unparsed/error"]

    def row(c):
        r = c.get(name) or {}
        value = NOT_JUDGED if _not_judged(c) else _f(r.get("value"))
        extra = [_f(c.get("harmful_rate"))] if task == "safety" else []
        return (_label(c), f"{c['n']}/{c['declared']}", value, _iv(r), *extra, _judgements(c))
    return head, row


def _subset(name: str, s: dict) -> dict:
    """What a subset's section shows (sections.html `subset`): its task, counts, the header of its
    tables and their rows (range table 1, 1-2, 1-5, 1-10, per-round table)."""
    task = s.get("task") or "-"
    if task == "features":
        head, row = FEATURES_HEAD, _features_row
    else:
        head, row = _judged(task)
    ranges = [s["ranges"][r] for r in RANGES if r in (s.get("ranges") or {})]
    per_round = list(s.get("per_round") or [])
    return {"name": name, "error": None, "task": task, "set_name": s.get("set"), "dialogues": s.get("dialogues"),
            "rounds_observed": s.get("rounds_observed"), "rounds_declared": s.get("rounds_declared"),
            "not_judged": bool(task in JUDGED and per_round and all(_not_judged(c) for c in per_round + ranges)),
            "head": head, "range_rows": [row(c) for c in ranges], "round_rows": [row(c) for c in per_round]}


def subset_section(name: str, s: dict) -> Markup:
    """A subset's heading, its range table (1, 1-2, 1-5, 1-10) and its per-round table."""
    return templates.macro("sections.html", "subset", near=__file__)(_subset(name, s))


def _metrics_section(data: MtrData) -> Markup:
    m = data.metrics
    if not m or not isinstance(m.get("subsets"), dict):
        return templates.render("metrics.html", near=__file__, subsets=None)
    up = m.get("upstream") or {}
    subsets = []
    for name in sorted(m["subsets"]):
        try:
            subsets.append(_subset(name, m["subsets"][name]))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            subsets.append({"name": name, "error": str(exc)})
    return templates.render("metrics.html", near=__file__, subsets=subsets, benchmark=m.get("benchmark"),
                            definitions=m.get("definitions"), repo=up.get("repo"), commit=up.get("commit"))


def _plots_section(data: MtrData) -> Markup:
    m = data.metrics
    if not m:
        return templates.render("plots.html", near=__file__, has_metrics=False)
    rows = plots.per_round_rows(m)
    task = {n: (s.get("task") if isinstance(s, dict) else None) for n, s in (m.get("subsets") or {}).items()}
    feats = [r for r in rows if task.get(r["subset"]) == "features"]
    features = plots.round_plot(feats, success_title="success rate by round, paper definitions (95% interval)",
                                latency_title="mean latency (s) by round, paper definitions")
    judged = [r for r in rows if task.get(r["subset"]) in ("instruction_following", "safety")
              and r.get("success_rate") is not None]
    judged_img = None if not judged else plots.round_plot(
        judged, success_title="follow rate / refusal rate by round (95% interval)", latency_title=None,
        alt="judged rates by round")
    return templates.render("plots.html", near=__file__, has_metrics=True, features=features,
                            features_caption=FEATURES_CAPTION, judged=judged_img, judged_caption=JUDGED_CAPTION)


def _missing_section(data: MtrData) -> Markup:
    return templates.render(
        "missing.html", near=__file__,
        missing=[(k, scrub(v)) for k, v in sorted(data.missing.items(), key=lambda kv: kv[0])],
        run_missing=[(k, scrub(str(v))) for k, v in sorted((data.run.record.get("missing") or {}).items())],
        invalid=[(k, scrub(v)) for k, v in sorted(data.invalid.items())])


def round_result(data: MtrData, s: Sample) -> dict:
    """What a round sample's row shows: success/latency per column or the judgement, and why the
    round is missing (metrics.json missing, run.json missing, or its dialogue invalid)."""
    dialogue, k = split_id(s)
    row = data.rounds.get(s.key) or {}
    task = s.task
    why = data.missing.get(s.key) or (data.run.record.get("missing") or {}).get(s.key) \
        or (f"invalid dialogue: {data.invalid[f'{s.subset}/{dialogue}']}" if f"{s.subset}/{dialogue}" in data.invalid
            else "")
    if not row and not why:
        why = "no rounds.jsonl row (the aggregate stage did not score it)"
    observed = bool(row.get("observed"))
    if not observed and not why:
        why = "not observed (rounds.jsonl)"
    out = {"dialogue": dialogue, "round": k, "task": task, "scenario": row.get("scenario"),
           "observed": observed, "why": scrub(why) if not observed else ""}
    if task == "features":
        for col in ("paper", "code"):
            c = row.get(col) or {}
            out[col] = {"success": c.get("success"), "latency_s": c.get("latency_s"),
                        "backchannel_freq": c.get("backchannel_freq")}
    else:
        out["status"], out["score"] = row.get("status"), row.get("score")
    return out


def judgement_text(r: dict) -> str:
    if r["task"] == "features" or not r["observed"]:
        return "-"
    if r.get("status") == "skipped":
        return NOT_JUDGED
    if r.get("status") == "ok":
        return f"ok, score {_f(r.get('score'), 0) if isinstance(r.get('score'), int) else _f(r.get('score'), 2)}"
    return str(r.get("status") or "-")


def _samples_table(data: MtrData, samples: list[Sample]) -> Markup:
    rows = []
    for s in samples:
        r = round_result(data, s)
        p, c = r.get("paper") or {}, r.get("code") or {}
        rows.append({"outcome": _outcome(r), "cells": [
            s.subset, run_report.sample_link(data.run, s), r["dialogue"], r["round"], r["scenario"] or "-",
            _yes(p.get("success")), _yes(c.get("success")), _f(p.get("latency_s")), _f(c.get("latency_s")),
            judgement_text(r), r["why"]]})
    return run_report.sample_list(rows, ["subset", "round sample", "dialogue", "round", "scenario", "success (paper)",
                                         "success (code)", "latency s (paper)", "latency s (code)", "judgement",
                                         "missing: why"], left=5, cls="samples mtr-samples")


def _outcome(r: dict) -> str:
    """A round's outcome for the index's filters: missing, success or no success (paper column) of
    a features round, else its judgement's status (not judged, ok, unparsed, error)."""
    if not r["observed"]:
        return "missing"
    if r.get("paper") is not None or r.get("code") is not None:
        return "success" if (r.get("paper") or {}).get("success") else "no success"
    return judgement_text(r).split(",")[0]


def index_page(data: MtrData, samples: list[Sample]) -> str:
    r = data.run.record
    title = f"duplexeval report: {r.get('model')} on {r.get('dataset')} (MTR-DuplexBench)"
    body = templates.render("index.html", near=__file__, title=title, extra_css=Markup(run_report.EXTRA_CSS),
                            run_table=run_report.run_table(data.run), metrics=_metrics_section(data),
                            plots=_plots_section(data), missing=_missing_section(data), n_samples=len(samples),
                            samples=_samples_table(data, samples), problems=[scrub(p) for p in data.run.problems])
    return page(title, body)


# ---- a round sample's page ---------------------------------------------------------------------

def _num(x) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def _round_json(data: MtrData, s: Sample, notes: list[str]) -> dict:
    p = data.run.find(s.key, "round.json")
    if p is None:
        notes.append("no round.json: the round's window and encoding are not known")
        return {}
    doc = run_report.read_json(p, data.run, f"{s.key} round.json")
    if not isinstance(doc, dict) or _num(doc.get("start_s")) is None or _num(doc.get("end_s")) is None:
        notes.append("round.json is not an mtr-round/1 object with start_s and end_s; window not shown")
        return {}
    return doc


def _words(data: MtrData, s: Sample, notes: list[str]) -> list[tuple[str, float, float]]:
    p = data.run.find(s.key, "transcript.json")
    if p is None:
        return []
    doc = run_report.read_json(p, data.run, f"{s.key} transcript.json")
    try:
        out = []
        for w in doc["words"]:
            a = float(w["start"])
            out.append((str(w.get("text", "")).strip(), a, a if w.get("end") is None else float(w["end"])))
        return out
    except (TypeError, KeyError, ValueError):
        notes.append("transcript.json (ASR words) is not in the expected form; words not shown")
        return []


ENCODING_SPANS = (  # (label, start key, end key, lane)
    ("user turn", "user_start", "user_end", "user"),
    ("interruption", "interruption_start", "interruption_end", "user"),
    ("background", "background_start", "background_end", "user"),
    ("GT model slot", "model_start", "model_end", "model"),
)


def encoding_marks(rj: dict) -> tuple[list, list]:
    """(spans, pauses) of a round's encoding timestamps: the user turn (labelled "interruption"
    for an I round), background speech and the GT model response slot as spans; the pause."""
    ts = ((rj.get("encoding") or {}).get("timestamps") or {}) if isinstance(rj.get("encoding"), dict) else {}
    if not isinstance(ts, dict):
        ts = {}
    spans = []
    k = rj.get("round")
    for label, a, b, lane in ENCODING_SPANS:
        if label == "user turn" and _num(ts.get("interruption_start")) is not None:
            continue  # an I round's user turn is its interruption (the same span)
        if _num(ts.get(a)) is not None and _num(ts.get(b)) is not None:
            spans.append((f"{label} {k}" if label in ("user turn", "interruption") else label,
                          float(ts[a]), float(ts[b]), lane))
    if not any(x[0].startswith(("user turn", "interruption")) for x in spans):
        # no user turn in the encoding (dialogue quality): the round's user lines
        for x in rj.get("user_lines") if isinstance(rj.get("user_lines"), list) else []:
            if isinstance(x, dict) and _num(x.get("start")) is not None and _num(x.get("end")) is not None:
                spans.append((f"user turn {k}", float(x["start"]), float(x["end"]), "user"))
    pauses = []
    if _num(ts.get("pause_start")) is not None and _num(ts.get("pause_end")) is not None:
        pauses.append((float(ts["pause_start"]), float(ts["pause_end"])))
    return spans, pauses


def _crop(x, t0: float):
    """(mono, data, sr) from time t0 on."""
    if x is None or t0 <= 0:
        return x
    mono, raw, sr = x
    i = min(int(round(t0 * sr)), mono.shape[0])
    return mono[i:], raw[i:], sr


def _judgement(data: MtrData, s: Sample) -> dict:
    """The judgement section (sample.html): state "missing" (no judgement.json), "unreadable", or
    "ok" with the rows of its table."""
    p = data.run.find(s.key, "judgement.json")
    if p is None:
        return {"state": "missing", "rows": []}
    doc = run_report.read_json(p, data.run, f"{s.key} judgement.json")
    if not isinstance(doc, dict):
        return {"state": "unreadable", "rows": []}
    prompt = doc.get("prompt") if isinstance(doc.get("prompt"), dict) else {}
    rows = [("status", NOT_JUDGED + " (skipped)" if doc.get("status") == "skipped" else doc.get("status")),
            ("score", "-" if doc.get("score") is None else doc.get("score")),
            ("reason", doc.get("reason") or "-"),
            ("prompt", f"{prompt.get('id')} v{prompt.get('version')}" if prompt else "-"),
            ("judge model", doc.get("model") or "-"),
            ("judge's answer", doc.get("raw") if doc.get("raw") is not None else "-"),
            ("error", doc.get("error") or "-")]
    return {"state": "ok", "rows": [(k, scrub(str(v))) for k, v in rows]}


def _lines(lines, with_role: bool) -> dict:
    """A table of dialogue lines (sections.html `lines`): its header and rows (none: "None.")."""
    rows = []
    for x in lines if isinstance(lines, list) else []:
        if isinstance(x, dict):
            rows.append(((x.get("role") or "-",) if with_role else ()) + (_f(_num(x.get("start"))),
                                                                           _f(_num(x.get("end"))),
                                                                           scrub(str(x.get("text", "")))))
    return {"head": (["role"] if with_role else []) + ["start (s)", "end (s)", "text"], "rows": rows}


def sample_page(data: MtrData, s: Sample) -> str:
    notes: list[str] = []
    task = s.task
    r = round_result(data, s)
    rj = _round_json(data, s, notes)
    start, end = _num(rj.get("start_s")), _num(rj.get("end_s"))
    runner = data.run.find(s.key, "runner.json")
    rrec = run_report.read_json(runner, data.run, f"{s.key} runner.json") if runner is not None else None
    rround = (rrec or {}).get("round") if isinstance(rrec, dict) and isinstance(rrec.get("round"), dict) else {}

    paths = {"user": data.run.find(s.key, "input.wav"), "model": data.run.find(s.key, "output.wav")}
    user = run_report.audio_file(paths["user"])
    model = run_report.audio_file(paths["model"])
    for what, x in (("input.wav (user)", user), ("output.wav (model)", model)):
        if isinstance(x, str):
            notes.append(x)
        elif x is None:
            notes.append(f"no {what}" + (f": {r['why']}" if r["why"] else ""))
    user = user if isinstance(user, tuple) else None
    model = model if isinstance(model, tuple) else None
    words = _words(data, s, notes)
    segs = run_report.vad_segments(data.run, s)
    vad, vad_label = (segs, "VAD (asr stage)") if segs is not None else ([], "VAD")

    # the summary
    if task == "features":
        p, c = r.get("paper") or {}, r.get("code") or {}
        result = [("success (paper / code)", f"{_yes(p.get('success'))} / {_yes(c.get('success'))}"),
                  ("latency s (paper / code)", f"{_f(p.get('latency_s'))} / {_f(c.get('latency_s'))}"),
                  ("backchannels /s (paper / code)",
                   f"{_f(p.get('backchannel_freq'))} / {_f(c.get('backchannel_freq'))}")]
        headline = f"paper {_yes(p.get('success'))}, code {_yes(c.get('success'))}" if r["observed"] else "missing"
    else:
        result = [("judgement", judgement_text(r))]
        headline = judgement_text(r) if r["observed"] else "missing"
    enc = rj.get("encoding") if isinstance(rj.get("encoding"), dict) else {}
    muted = rj.get("muted") if isinstance(rj.get("muted"), list) else []
    muted_spans = [(float(a), float(b)) for a, b in (x for x in muted if isinstance(x, list) and len(x) == 2)
                   if _num(a) is not None and _num(b) is not None]
    summary = [("subset", s.subset), ("task", task), ("set", rj.get("set") or "-"),
               ("dialogue", r["dialogue"]), ("round", f"{r['round']} of {rj.get('rounds', '?')}"),
               ("scenario", enc.get("scenario") or r.get("scenario") or "-"),
               ("features", ", ".join(map(str, enc.get("features") or [])) or "-"),
               ("round boundaries from", rj.get("source", "-")),
               ("window (s)", f"start_s {_f(start)} .. end_s {_f(end)}" if start is not None else "-"),
               ("muted (next user turn)", ", ".join(f"{_f(a)} .. {_f(b)}" for a, b in muted_spans) or "none"),
               ("history", f"{rround.get('history', '-')}; model audio replaced by the GT "
                           f"{_f(_num(rround.get('model_history_s')))} s" if rround else "-"),
               *result]
    if r["why"]:
        summary.append(("missing", r["why"]))

    # the timeline: the round's window with CONTEXT_S of history before it
    t0 = 0.0 if start is None else max(0.0, round(start - CONTEXT_S, 6))
    spans, pauses = encoding_marks(rj)
    if start is not None:
        spans = [("ground truth (history)", 0.0, start, "model")] + spans
        spans += [("muted (next user turn)", a, b, "user") for a, b in muted_spans]
    markers = [("round start", start)] if start is not None else []
    user_w, model_w = _crop(user, t0), _crop(model, t0)
    viewer = None
    if user is not None or model is not None:
        dur = end if end is not None else max(x[0].shape[0] / x[2] for x in (user, model) if x is not None)
        if user is not None and end is None:
            dur = user[0].shape[0] / user[2]
        tl = timeline.Timeline(duration=dur, start=t0, user=(user_w[0], user_w[2]) if user else None,
                               model=(model_w[0], model_w[2]) if model else None, words=words, vad=vad,
                               pauses=pauses, markers=markers, spans=spans, vad_label=vad_label,
                               model_note="no model output" + (f" ({r['why'][:90]})" if r["why"] else ""))
        viewer = timeline.viewer(tl)
    players = []
    if user is not None:
        players.append(run_report.player(data.run, s, paths["user"], user, "audio-user",
                                         f"user (input.wav from {_f(t0)} s)", start=t0))
    if model is not None:
        players.append(run_report.player(data.run, s, paths["model"], model, "audio-model",
                                         f"model (output.wav from {_f(t0)} s; GT history before {_f(start)} s)",
                                         start=t0))

    ts = enc.get("timestamps") if isinstance(enc.get("timestamps"), dict) else {}
    mrows = [("round start (start_s)", _f(start), ""), ("round end (end_s)", _f(end), "")] if start is not None else []
    mrows += [(f"muted {i + 1}", _f(a), _f(b)) for i, (a, b) in enumerate(muted_spans)]
    mrows += [(k, _f(_num(v)), "") for k, v in sorted(ts.items())]
    body = templates.render(
        "sample.html", near=__file__, back=run_report.back_link(data.run), extra_css=Markup(run_report.EXTRA_CSS),
        key=s.key, summary=summary, notes=[scrub(n) for n in notes], timeline=viewer, t0=_f(t0),
        context_s=f"{CONTEXT_S:g}", players=players, markers=mrows,
        judgement=_judgement(data, s) if task in JUDGED else None,
        user_lines=_lines(rj.get("user_lines"), False), history=_lines(rj.get("history"), True),
        n_history=len(rj.get("history") or []), words=[(w, _f(a), _f(b)) for w, a, b in words],
        vad_label=vad_label, vad=[(_f(a), _f(b)) for a, b in vad], stages=run_report.statuses(data.run, s),
        events=run_report.events(data.run, data.run.find(s.key, "events.jsonl")))
    return page(f"{s.key}: {headline}", body, script=timeline.WINDOW_JS if t0 > 0 else timeline.TIMELINE_JS)


def build(store, record: dict, out: Path) -> int:
    """Write the report of an MTR run into the folder `out` (which exists and is empty); the
    number of round sample pages."""
    data = load(store, record)
    samples = round_samples(data)
    n = run_report.write_pages(data.run, out, samples, lambda s: sample_page(data, s))
    (out / run_report.INDEX).write_text(index_page(data, samples), encoding="utf-8")
    return n
