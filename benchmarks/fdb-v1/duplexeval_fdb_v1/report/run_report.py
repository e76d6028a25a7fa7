"""The static HTML report of a Full-Duplex-Bench v1.0 run (the benchmark's `report` hook):
report.html (tables, plots, samples) and one page per sample.

Everything comes from the run's record (run.json) and its stages' folders in the store: the
aggregate stage's metrics.json, unified.json and unified-samples.jsonl; the dataset stage's
input.wav and annotations; the runner stage's output.wav and events.jsonl; the asr stage's
output.json (words) and vad.json; every stage's stage.json (each sample's status and reason).
A piece that is missing or unreadable is named on the page; it never stops the report.

`build(store, record, out)` writes out/report.html and out/samples/<subset>/<id>.html (their audio
linked from the store, duplexeval_common.html.run.player) and returns the number of sample pages.
The HTML comes from templates/index.html and templates/sample.html (Jinja2, autoescape). The bytes
depend only on those inputs (no clock, no paths).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from itertools import zip_longest
from pathlib import Path

from duplexeval_common.html import run as common, templates, timeline
from duplexeval_common.html.page import Markup, Raw, fmt, page
from duplexeval_common.html.run import EXTRA_CSS, INDEX, read_json
from duplexeval_common.samples import Sample
from duplexeval_common.secrets import scrub

from . import plots


@dataclass
class RunData(common.RunData):
    """The shared run data and what the unified column adds: unified.json and its rows."""
    unified: dict | None = None
    rows: dict[str, dict] = field(default_factory=dict)           # sample_id -> unified row


def load(store, record: dict) -> RunData:
    data = common.load(store, record, RunData(record))
    agg = data.stage_dirs.get("aggregate")
    if agg is not None:
        p = agg / "unified.json"
        if p.is_file():
            data.unified = read_json(p, data, "unified.json")
        p = agg / "unified-samples.jsonl"
        if p.is_file():
            try:
                for line in p.read_text(encoding="utf-8").splitlines():
                    if line.strip():
                        row = json.loads(line)
                        data.rows[row["sample_id"]] = row
            except (OSError, ValueError, KeyError, TypeError) as exc:
                data.problems.append(f"unified-samples.jsonl: not readable ({type(exc).__name__})")
    return data


def subset_tasks(data: RunData) -> dict[str, str]:
    """{subset: task}: unified.json's (each subset's task as its dataset declared it)."""
    subs = (data.unified or {}).get("subsets") if isinstance(data.unified, dict) else None
    return {k: v["task"] for k, v in (subs or {}).items() if isinstance(v, dict) and isinstance(v.get("task"), str)}


# ---- outcomes ----------------------------------------------------------------------------------

def _s(x) -> str:
    return "-" if x is None else f"{x:.3f} s"


def outcome(data: RunData, s: Sample) -> tuple[str, str]:
    """(outcome, reason) of a sample as the unified column decided it, or why it has none
    (secrets from the environment scrubbed, as from every text taken from a file)."""
    out, why = _outcome(data, s)
    return out, scrub(why)


def _outcome(data: RunData, s: Sample) -> tuple[str, str]:
    missing = (data.record.get("missing") or {}).get(s.key)
    row = data.rows.get(s.key)
    if row is None:
        if missing:
            return "missing", missing
        if s.task == "backchannel":
            return "-", "backchannel: no unified outcome (official column only)"
        return "-", "no unified row (the aggregate stage did not score it)"
    if not row.get("eligible", True):
        why = ", ".join(row.get("reasons", [])) or "ineligible"
        if row.get("problem"):
            why += f" ({row['problem']})"
        return "ineligible", missing or why
    task = row.get("task")
    if task == "pause_handling":
        first = row.get("first_pause_s")
        if row.get("pause_intrusion"):
            return "intrusion", (f"{row.get('intrusion_words')} word onset(s) at or after the first pause "
                                 f"start ({_s(first)}); {row.get('pauses_intruded')}/{row.get('n_pauses')} "
                                 "pauses intruded")
        return "no intrusion", f"no word onset at or after the first pause start ({_s(first)})"
    if task == "smooth_turn_taking":
        out, E = row.get("outcome"), row.get("E_s")
        if out == "response":
            return out, f"first word {_s(row.get('latency_s'))} after E ({_s(E)})"
        if out == "early_start":
            return out, f"a word starts before E ({_s(E)})"
        return str(out), "no word in the transcript"
    if task == "user_interruption":
        out, S, R = row.get("outcome"), row.get("S_s"), row.get("R_s")
        if out == "not_exercised":
            return out, f"no speech detected at S ({_s(S)}): the interruption interrupted nothing"
        if out == "speaking_at_end":
            return out, f"speech at S ({_s(S)}) and across R ({_s(R)})"
        stop = f"stopped {_s(row.get('stop_s'))} after S" if row.get("stop_s") is not None \
            else "no observed stop"
        if out == "response":
            return out, f"speech at S {stop}; first word {_s(row.get('latency_s'))} after R ({_s(R)})"
        return str(out), f"speech at S {stop}; none across R, no word after R ({_s(R)})"
    return str(row.get("outcome", "-")), ""



def _subset_section(name: str, task: str, s: dict, revision: dict | None, extra: dict | None) -> dict:
    """What templates/index.html shows of one subset: its header line, the table of both columns,
    the ineligible reasons and the unified.json notes."""
    from ..score import report as agg
    lines = agg.subset_table(name, task, s, revision)
    off = []
    for k in agg.OFFICIAL_KEYS[task]:
        label = f"rating[{s.get('rating_label')}]" if k == "rating" and s.get("rating_label") not in (
            None, "official") else k
        off.append((label, agg._f((s.get("official") or {}).get(k))))
    uni = []
    for k in agg._ordered(task, s.get("unified") or {}):
        m = s["unified"][k]
        cn = f"{m['count']}/{m['n']}" if m["kind"] != "pooled" else f"n {m['n']}"
        uni.append((k, agg._value(m), agg._interval(m["interval"]), cn, agg._extra(m)))
    if not uni:
        uni.append((agg.NO_UNIFIED, "", "", "", ""))
    extra = extra or {}
    return {"name": name, "error": None, "head": lines[0].removeprefix("== "),
            "headers": [agg.official_head(revision), "value", "unified", "value", "95% interval", "count/n",
                        "bounds / p90"],
            "rows": [(*(a or ("", "")), *(b or ("", "", "", "", ""))) for a, b in zip_longest(off, uni)],
            "ineligible": [x.strip() for x in lines if x.startswith("   ineligible:")],
            "min_observable": (agg._f(extra["min_observable_s"], 3) if extra.get("min_observable_s") is not None
                               else None),
            "notes": extra.get("official_notes") or [], "invalid": extra.get("invalid") or []}


def _headline(data: RunData) -> dict | None:
    """The metrics of templates/index.html: the revision line and each subset (None without metrics)."""
    from ..score.report import revision_line
    m = data.metrics
    if not m or not isinstance(m.get("subsets"), dict):
        return None
    revision = m.get("official_revision")
    extras = (data.unified or {}).get("subsets", {}) if isinstance(data.unified, dict) else {}
    tasks = subset_tasks(data)
    subsets = []
    for name, s in m["subsets"].items():
        if tasks.get(name) is None:
            continue
        try:
            subsets.append(_subset_section(name, tasks[name], s, revision, extras.get(name)))
        except (KeyError, TypeError, ValueError) as exc:
            subsets.append({"name": name, "error": str(exc)})
    return {"revision": revision_line(revision), "subsets": subsets}


def _plots(data: RunData) -> str:
    out = []
    rows = [data.rows[k] for k in sorted(data.rows)]
    img = plots.latency_plot(rows)
    out.append(img if img is not None else '<p class="muted">No response latencies to plot.</p>')
    if data.metrics:
        img = plots.rates_plot(data.metrics, subset_tasks(data))
        if img is not None:
            out.append(img)
    return "\n".join(out)


def _samples_table(data: RunData, samples: list[Sample]) -> Raw:
    rows = []
    for s in samples:
        out, why = outcome(data, s)
        row = data.rows.get(s.key) or {}
        rows.append({"outcome": out, "cells": [s.subset, common.sample_link(data, s),
                                               Raw(Markup('<span class="outcome">{}</span>').format(out)),
                                               why, fmt(row.get("latency_s"), 3)]})
    return common.sample_list(rows, ["subset", "id", "outcome", "reason", "latency (s)"], left=4)


def index_page(data: RunData, samples: list[Sample]) -> str:
    r = data.record
    body = templates.render("index.html", near=__file__, record=r, extra_css=Markup(EXTRA_CSS),
                            run_table=common.run_table(data), metrics=_headline(data), plots=Markup(_plots(data)),
                            missing=Markup(common.missing_section(data)), n_samples=len(samples),
                            samples=_samples_table(data, samples), problems=[scrub(p) for p in data.problems])
    return page(f"duplexeval report: {r.get('model')} on {r.get('dataset')}", body)


def _markers(data: RunData, s: Sample, notes: list[str]) -> tuple[list, list]:
    """(pauses, markers) from the dataset's annotation: pause spans, E, S and R (benchmarks/fdb-v1/README.md);
    for a backchannel sample, its transition-relevance places (TRP) when sample.json has them."""
    task = s.task
    if task == "backchannel":
        p = data.find(s.key, "sample.json")
        doc = read_json(p, data, f"{s.key} sample.json") if p is not None else None
        trps = ((doc or {}).get("backchannel") or {}).get("trps") if isinstance(doc, dict) else None
        if isinstance(trps, list) and all(isinstance(t, (int, float)) for t in trps):
            return [], [("TRP", float(t)) for t in trps]
        return [], []
    name = {"pause_handling": "pause.json", "smooth_turn_taking": "turn_taking.json",
            "user_interruption": "interrupt.json"}.get(task)
    if name is None:
        return [], []
    p = data.find(s.key, name)
    if p is None:
        notes.append(f"no {name} (annotation) for this sample")
        return [], []
    doc = read_json(p, data, f"{s.key} {name}")
    try:
        if task == "pause_handling":
            return [(float(x["timestamp"][0]), float(x["timestamp"][1])) for x in doc], []
        if task == "smooth_turn_taking":
            return [], [("E", float(doc[0]["timestamp"][0]))]
        return [], [("S", float(doc[0]["timestamp"][0])), ("R", float(doc[0]["timestamp"][1]))]
    except (TypeError, KeyError, ValueError, IndexError):
        notes.append(f"{name} is not in the expected form; markers not shown")
        return [], []


def _vad(data: RunData, s: Sample) -> tuple[list[tuple[float, float]], str]:
    row = data.rows.get(s.key) or {}
    if isinstance(row.get("segments"), list):
        return [(float(a), float(b)) for a, b in row["segments"]], "VAD (aggregator)"
    segs = common.vad_segments(data, s)
    return (segs, "VAD (asr stage)") if segs is not None else ([], "VAD")


def sample_page(data: RunData, s: Sample) -> str:
    notes: list[str] = []
    task = s.task
    out, why = outcome(data, s)
    row = data.rows.get(s.key) or {}
    paths = {"user": data.find(s.key, "input.wav"), "model": data.find(s.key, "output.wav")}
    user = common.audio_file(paths["user"])
    model = common.audio_file(paths["model"])
    for what, x in (("input.wav (user)", user), ("output.wav (model)", model)):
        if isinstance(x, str):
            notes.append(x)
        elif x is None:
            reason = (data.record.get("missing") or {}).get(s.key)
            notes.append(f"no {what}" + (f": {reason}" if reason else ""))
    user = user if isinstance(user, tuple) else None
    model = model if isinstance(model, tuple) else None
    words = common.words(data, data.find(s.key, "output.json"), notes)
    pauses, markers = _markers(data, s, notes)
    vad, vad_label = _vad(data, s)

    summary = [("task", task), ("outcome", Raw(Markup('<span class="outcome">{}</span>').format(out))),
               ("reason", why), ("latency (s)", fmt(row.get("latency_s"), 3)),
               ("T (s)", fmt(row.get("T_s"), 3))]
    if row.get("rating") is not None:
        summary.append(("rating", row["rating"]))
    viewer = None
    if user is not None or model is not None:
        dur = max([x[0].shape[0] / x[2] for x in (user, model) if x is not None])
        if user is not None:
            dur = user[0].shape[0] / user[2]  # the input window [0, T]
        reason = (data.record.get("missing") or {}).get(s.key, "")
        viewer = timeline.viewer(timeline.Timeline(
            duration=dur, user=(user[0], user[2]) if user else None, model=(model[0], model[2]) if model else None,
            words=words, vad=vad, pauses=pauses, markers=markers, vad_label=vad_label,
            model_note="no model output" + (f" ({scrub(reason)[:90]})" if reason else "")))
    players = []
    if user is not None:
        players.append(common.player(data, s, paths["user"], user, "audio-user", "user (input.wav)"))
    if model is not None:
        players.append(common.player(data, s, paths["model"], model, "audio-model", "model (output.wav)"))
    mrows = [(f"pause {i + 1}", fmt(a, 3), fmt(b, 3)) for i, (a, b) in enumerate(pauses)]
    mrows += [(n, fmt(t, 3), "") for n, t in markers]
    body = templates.render(
        "sample.html", near=__file__, back=common.back_link(data), extra_css=Markup(EXTRA_CSS), key=s.key,
        summary=summary, notes=[scrub(n) for n in notes], viewer=viewer, players=players, markers=mrows,
        words=[(w, fmt(a, 3), fmt(b, 3)) for w, a, b in words], vad_label=vad_label,
        vad=[(fmt(a, 3), fmt(b, 3)) for a, b in vad], statuses=common.statuses(data, s),
        events=Markup(common.events(data, data.find(s.key, "events.jsonl"))))
    return page(f"{s.key}: {out}", body, script=timeline.TIMELINE_JS)


def build(store, record: dict, out: Path) -> int:
    """Write the report of a run into the folder `out` (which exists and is empty)."""
    data = load(store, record)
    samples = common.sample_keys(data, set(data.rows))
    n = common.write_pages(data, out, samples, lambda s: sample_page(data, s))
    (out / INDEX).write_text(index_page(data, samples), encoding="utf-8")
    return n
