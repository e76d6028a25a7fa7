"""The HTML report (the orchestrator builds it): an index with the run, each task's numbers and the
session list, and one page per session: both channels' timeline with the examiner's turns (bands
labelled with their text) and the model's speech (the scorer's VAD intervals, and what the
examiner heard it say), both channels' players (input.wav: the examiner, output.wav: the model),
then the examiner's turns as a table. A file that is missing or cannot be read is said so on the
page (and, for the run's own files, under "Problems reading the run" on the index); the rest is
shown as usual. Built from the shared pieces of duplexeval_common.html."""

from __future__ import annotations

import json
from pathlib import Path

from duplexeval_common.html import run as common, timeline
from duplexeval_common.html.page import escape, fmt, page, table
from duplexeval_common.secrets import scrub

from .score.pool import UNIFIED

SESSION_ROWS = ("response_rate", "response_latency_s", "overlap_rate", "model_talk_over", "examiner_talk_over",
                "turns_completed", "goals_reached_share")


def _rows(data) -> dict:
    """{session key: its samples.jsonl row} of the aggregate stage (empty when it is absent; a line
    that is not a JSON object is left out and named among the problems)."""
    agg = data.stage_dirs.get("aggregate")
    path = Path(agg) / "samples.jsonl" if agg else None
    if path is None or not path.is_file():
        return {}
    out = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        data.problems.append(f"samples.jsonl: not readable ({type(exc).__name__})")
        return {}
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            r = json.loads(line)
        except ValueError:
            r = None
        if isinstance(r, dict) and isinstance(r.get("sample_id"), str):
            out[r["sample_id"]] = r
        else:
            data.problems.append(f"samples.jsonl line {n}: not readable (not a session row)")
    return out


def _examiner(data, key: str, notes: list[str]) -> dict:
    path = data.find(key, "examiner.json")
    if path is None:
        notes.append("no examiner.json: the examiner's turns are not known")
        return {}
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        doc = None
    if not isinstance(doc, dict):
        notes.append("examiner.json is not a JSON object; the examiner's turns are not shown")
        return {}
    return doc


def _num(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _timed(items) -> list[dict]:
    """The entries of a list of examiner.json that are objects with numeric start_s and end_s."""
    return [t for t in (items if isinstance(items, list) else [])
            if isinstance(t, dict) and _num(t.get("start_s")) and _num(t.get("end_s"))]


def sample_page(data, s, r: dict) -> str:
    notes: list[str] = []
    paths = {"user": data.find(s.key, "input.wav"), "model": data.find(s.key, "output.wav")}
    user, model = common.audio_file(paths["user"]), common.audio_file(paths["model"])
    for what, x in (("input.wav (examiner)", user), ("output.wav (model)", model)):
        if isinstance(x, str):
            notes.append(x)
        elif x is None:
            notes.append(f"no {what}")
    user = user if isinstance(user, tuple) else None
    model = model if isinstance(model, tuple) else None
    ex = _examiner(data, s.key, notes)
    turns = _timed(ex.get("turns"))
    ended = ex.get("ended") if isinstance(ex.get("ended"), dict) else {}
    outcome = "scored" if r.get("eligible") else "not scored"
    body = [f"<nav>{common.back_link(data)}</nav>", f"<h1>{escape(s.key)}</h1>"]
    summary = [("task", s.task or r.get("task") or "-"), ("outcome", outcome)]
    if r.get("eligible"):
        summary += [(k, fmt(r.get(k), 3)) for k in SESSION_ROWS]
    elif r:
        summary.append(("why", scrub(str(r.get("reason")))))
    if ex:
        summary += [("examiner preset", str(ex.get("preset", "-"))),
                    ("examiner ended", f"{ended.get('reason', '-')} at {fmt(ended.get('t'), 2)} s"),
                    ("goals reached", ", ".join(map(str, ex.get("goals_reached") or [])) or "none")]
    body.append(table(["session", ""], summary, left=2, cls="session"))
    body += [f'<p class="note">{escape(scrub(n))}</p>' for n in notes]
    signal = user or model
    if signal is not None:
        spans = [(f"examiner turn {t.get('index')}: {t.get('text', '')}", t["start_s"], t["end_s"], "user")
                 for t in turns]
        heard = [(m.get("text") or "", m["start_s"], m["end_s"]) for m in _timed(ex.get("model_turns"))]
        speech = [tuple(x) for x in r.get("model_speech") or [] if isinstance(x, list) and len(x) == 2]
        tl = timeline.Timeline(duration=signal[0].shape[0] / signal[2], user=(user[0], user[2]) if user else None,
                               model=(model[0], model[2]) if model else None,
                               model_note="" if model else "no output.wav",
                               words=heard, vad=speech, vad_label="model speech (VAD)", spans=spans,
                               markers=[("E", t["end_s"]) for t in turns])
        body.append(timeline.viewer(tl))
    if user is not None:
        body.append(common.player(data, s, paths["user"], user, "audio-user", "examiner (input.wav)"))
    if model is not None:
        body.append(common.player(data, s, paths["model"], model, "audio-model", "model (output.wav)"))
    if turns:
        body += ["<h2>Examiner turns</h2>", table(
            ["#", "kind", "goal", "start", "end", "yielded", "answered", "text", "reply heard"],
            [(str(t.get("index")), str(t.get("kind")), str(t.get("goal") or "-"), fmt(t.get("start_s"), 2),
              fmt(t.get("end_s"), 2), str(t.get("yielded")), str(t.get("answered")), str(t.get("text", "")),
              str(t.get("reply_text") or "-")) for t in turns], left=3, cls="examiner-turns")]
    return page(f"{s.key}: {outcome}", common.EXTRA_CSS + "\n".join(body), script=timeline.TIMELINE_JS)


def _metric_row(data, name: str, s) -> tuple:
    try:
        return (name, s["task"], f"{s['coverage']['scored']}/{s['coverage']['sessions']}",
                *(fmt(s["unified"][k]["value"], 3) for k, *_ in UNIFIED[:3]),
                fmt(s["examiner"]["talked_over_model"]["value"], 3), fmt(s["examiner"]["ended_early"]["value"], 3))
    except (TypeError, KeyError):
        data.problems.append(f"{name}: metrics.json entry not readable")
        return (name, "-", "-", "-", "-", "-", "-", "-")


def build(store, record: dict, out: Path) -> int:
    data = common.load(store, record)
    m = data.metrics if isinstance(data.metrics, dict) else {}
    subsets = m.get("subsets") if isinstance(m.get("subsets"), dict) else {}
    rows = _rows(data)
    samples = common.sample_keys(data, set(rows))
    metric_rows = [_metric_row(data, name, s) for name, s in sorted(subsets.items())]
    listing = [{"outcome": "scored" if (rows.get(s.key) or {}).get("eligible") else "not scored",
                "cells": [common.sample_link(data, s, s.key),
                          fmt((rows.get(s.key) or {}).get("response_rate"), 3),
                          fmt((rows.get(s.key) or {}).get("response_latency_s"), 3),
                          fmt((rows.get(s.key) or {}).get("overlap_rate"), 3)]} for s in samples]
    n = common.write_pages(data, out, samples, lambda s: sample_page(data, s, rows.get(s.key) or {}))
    metrics_html = (table(["subset", "task", "scored", "response_rate", "response_latency_s", "overlap_rate",
                           "examiner talked over", "examiner ended early"], metric_rows, left=2, cls="fdb-v2-metrics")
                    if metric_rows else "<p>No metrics: the aggregate stage did not complete.</p>")
    body = [f"<h1>fdb-v2 (not official): {escape(record.get('model'))} on {escape(record.get('dataset'))}</h1>",
            common.EXTRA_CSS, "<h2>Run</h2>", common.run_table(data), "<h2>Metrics</h2>", metrics_html,
            "<h2>Missing</h2>", common.missing_section(data),
            "<h2>Sessions</h2>", common.sample_list(listing, ["session", "response rate", "latency (s)", "overlap"],
                                                    left=1, cls="samples fdb-v2-samples")]
    if data.problems:
        body += ["<h2>Problems reading the run</h2>",
                 "<ul>" + "".join(f"<li>{escape(scrub(p))}</li>" for p in data.problems) + "</ul>"]
    (out / common.INDEX).write_text(page(f"fdb-v2 report: {record.get('model')} on {record.get('dataset')}",
                                         "\n".join(body)), encoding="utf-8")
    return n
