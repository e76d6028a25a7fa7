"""The HTML report (the orchestrator builds it): an index with the run, each task's numbers and the
session list, and one page per session: both channels' timeline with the examiner's turns (bands
labelled with their text) and the model's speech (the scorer's VAD intervals, and what the
examiner heard it say), then the examiner's turns as a table. Built from the shared pieces of
duplexeval_common.html."""

from __future__ import annotations

import json
from pathlib import Path

from duplexeval_common.html import run as common, timeline
from duplexeval_common.html.page import escape, fmt, page, table

from .score.pool import UNIFIED


def _rows(data) -> dict:
    """{session key: its samples.jsonl row} of the aggregate stage (empty when it is absent)."""
    agg = data.stage_dirs.get("aggregate")
    path = Path(agg) / "samples.jsonl" if agg else None
    if path is None or not path.is_file():
        return {}
    return {r["sample_id"]: r for r in map(json.loads, path.read_text(encoding="utf-8").splitlines()) if r}


def _examiner(data, key: str) -> dict:
    path = data.find(key, "examiner.json")
    try:
        return json.loads(path.read_text()) if path else {}
    except ValueError:
        return {}


def sample_page(data, s, r: dict) -> str:
    paths = {"user": data.find(s.key, "input.wav"), "model": data.find(s.key, "output.wav")}
    user, model = common.audio_file(paths["user"]), common.audio_file(paths["model"])
    ex = _examiner(data, s.key)
    turns = ex.get("turns") or []
    body = [f"<nav>{common.back_link(data)}</nav>", f"<h1>{escape(s.key)}</h1>"]
    if r.get("eligible"):
        body.append(table(["", ""], [(k, fmt(r.get(k), 3)) for k in
                                     ("response_rate", "response_latency_s", "overlap_rate", "model_talk_over",
                                      "examiner_talk_over", "turns_completed", "goals_reached_share")], left=2))
    elif r:
        body.append(f'<p class="note">not scored: {escape(r.get("reason"))}</p>')
    if isinstance(user, tuple):
        spans = [(f"examiner turn {t.get('index')}: {t.get('text', '')}", t["start_s"], t["end_s"], "user")
                 for t in turns if isinstance(t, dict) and "start_s" in t]
        heard = [(m.get("text") or "", m["start_s"], m["end_s"]) for m in ex.get("model_turns") or []
                 if isinstance(m, dict) and "start_s" in m]
        tl = timeline.Timeline(duration=user[0].shape[0] / user[2], user=(user[0], user[2]),
                               model=(model[0], model[2]) if isinstance(model, tuple) else None,
                               words=heard, vad=[tuple(x) for x in r.get("model_speech", [])],
                               vad_label="model speech (VAD)", spans=spans,
                               markers=[("E", t["end_s"]) for t in turns if isinstance(t, dict) and "end_s" in t])
        body.append(timeline.viewer(tl))
        body.append(common.player(data, s, paths["user"], user, "audio-user", "examiner (input.wav)"))
    if isinstance(model, tuple):
        body.append(common.player(data, s, paths["model"], model, "audio-model", "model (output.wav)"))
    if turns:
        body += ["<h2>Examiner turns</h2>", table(
            ["#", "kind", "goal", "start", "end", "yielded", "answered", "text", "reply heard"],
            [(str(t.get("index")), str(t.get("kind")), str(t.get("goal") or "-"), fmt(t.get("start_s"), 2),
              fmt(t.get("end_s"), 2), str(t.get("yielded")), str(t.get("answered")), str(t.get("text", "")),
              str(t.get("reply_text") or "-")) for t in turns if isinstance(t, dict)], left=3)]
    return page(s.key, common.EXTRA_CSS + "\n".join(body), script=timeline.TIMELINE_JS)


def build(store, record: dict, out: Path) -> int:
    data = common.load(store, record)
    m = data.metrics or {"subsets": {}}
    rows = _rows(data)
    samples = common.sample_keys(data, set(rows))
    metric_rows = [(name, s["task"], f"{s['coverage']['scored']}/{s['coverage']['sessions']}",
                    *(fmt(s["unified"][k]["value"], 3) for k, *_ in UNIFIED[:3]),
                    fmt(s["examiner"]["talked_over_model"]["value"], 3), fmt(s["examiner"]["ended_early"]["value"], 3))
                   for name, s in sorted(m["subsets"].items())]
    listing = [{"outcome": "scored" if (rows.get(s.key) or {}).get("eligible") else "not scored",
                "cells": [common.sample_link(data, s, s.key),
                          fmt((rows.get(s.key) or {}).get("response_rate"), 3),
                          fmt((rows.get(s.key) or {}).get("response_latency_s"), 3),
                          fmt((rows.get(s.key) or {}).get("overlap_rate"), 3)]} for s in samples]
    n = common.write_pages(data, out, samples, lambda s: sample_page(data, s, rows.get(s.key) or {}))
    body = [f"<h1>fdb-v2 (not official): {escape(record.get('model'))} on {escape(record.get('dataset'))}</h1>",
            common.EXTRA_CSS, "<h2>Run</h2>", common.run_table(data), "<h2>Metrics</h2>",
            table(["subset", "task", "scored", "response_rate", "response_latency_s", "overlap_rate",
                   "examiner talked over", "examiner ended early"], metric_rows, left=2),
            "<h2>Missing</h2>", common.missing_section(data),
            "<h2>Sessions</h2>", common.sample_list(listing, ["session", "response rate", "latency (s)", "overlap"],
                                                    left=1)]
    (out / common.INDEX).write_text(page("fdb-v2 report", "\n".join(body)), encoding="utf-8")
    return n
