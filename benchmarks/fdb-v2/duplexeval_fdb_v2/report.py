"""The HTML report (the orchestrator builds it): an index with the run, each task's numbers and the
session list, and one page per session: both channels' timeline, both channels' players
(input.wav: the examiner, output.wav: the model), then the examiner's turns as a table.

The timeline's text depends on the run's stages:
- without an asr stage: the examiner's turns (bands labelled with their text) and what the
  examiner heard the model say (examiner.json's turns and model_turns);
- with one: the ASR transcript of both channels (the asr stage's input.json: the examiner, and
  output.json: the model), the examiner's as bands of its segments (words split where a gap
  exceeds judge.GAP_S, as the judge segments them) and the model's as words, both also as text
  lanes under the image, aligned with its axis, and as a table with times.
With a judge stage, each session's judgement.json: the judge's per-segment scores ([start, end],
fluency, instruction following) as bands on the model's lane, a lane under the image and a table,
the session's task score, and a note when the judgement did not parse; the index adds the judged
column per task (metrics.json `judged`: score/judged.py) with its 15 s bins, labelled as judge.json
labels it (official only for upstream's prompts with gemini-2.5-pro).

The scorer's VAD intervals of the model's speech are drawn either way. A file that is missing or
cannot be read is said so on the page (and, for the run's own files, under "Problems reading the
run" on the index); the rest is shown as usual. Built from the shared pieces of
duplexeval_common.html; the markup is in templates/index.html, templates/sample.html and
templates/lanes.html (Jinja2, autoescape: every value is escaped there, notes and problems scrubbed
of secrets first)."""

from __future__ import annotations

import json
from pathlib import Path

from duplexeval_common.html import run as common, templates, timeline
from duplexeval_common.html.page import Markup, Raw, fmt, page
from duplexeval_common.ipus import segments_from_words
from duplexeval_common.secrets import scrub

from .judge import GAP_S
from .official import MODEL as OFFICIAL_MODEL
from .score.judged import BINS
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


def _json_file(path: Path | None):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        return None


# ---- the asr stage's transcripts ----

CHANNELS = (("examiner", "input.json"), ("model", "output.json"))


def asr_words(data, key: str, name: str, notes: list[str]) -> list[dict] | None:
    """The words of one channel's ASR output (input.json / output.json: upstream's `chunks` of
    text and [start, end]) as {start, end, text}; None (and a note) when missing or malformed."""
    path = data.find(key, name)
    if path is None:
        notes.append(f"no {name}: the asr stage has no transcript of this channel")
        return None
    doc = _json_file(path)
    chunks = doc.get("chunks") if isinstance(doc, dict) else None
    if not isinstance(chunks, list):
        notes.append(f"{name} (ASR words) is not in the expected form; its transcript is not shown")
        return None
    out = []
    for c in chunks:
        ts = c.get("timestamp") if isinstance(c, dict) else None
        if not (isinstance(ts, list) and len(ts) == 2 and _num(ts[0]) and (ts[1] is None or _num(ts[1]))):
            notes.append(f"{name} (ASR words) is not in the expected form; its transcript is not shown")
            return None
        text = str(c.get("text", "")).strip()
        if text:
            out.append({"start": float(ts[0]), "end": float(ts[0] if ts[1] is None else ts[1]), "text": text})
    return out


def transcripts(data, key: str, notes: list[str]) -> dict[str, list[dict]] | None:
    """{"examiner": segments, "model": segments} of the asr stage (each {start, end, text, words});
    None when the run has no asr stage; a channel that cannot be read has no segments."""
    if "asr" not in data.stage_dirs:
        return None
    out = {}
    for who, name in CHANNELS:
        words = asr_words(data, key, name, notes)
        out[who] = segments_from_words(words, GAP_S) if words else []
    return out


# ---- the judge stage ----

def judge_label(data) -> str | None:
    """The judged column's label, None without a judge stage: judge.json's (judge.py: "official"
    only for upstream's prompts with gemini-2.5-pro, else "judge: NAME (MODEL)") and whose prompts
    it asked (ours: prompts.py, or upstream's eval_prompts.json)."""
    d = data.stage_dirs.get("judge")
    if d is None:
        return None
    doc = _json_file(Path(d) / "judge.json") if (Path(d) / "judge.json").is_file() else None
    if not isinstance(doc, dict):
        data.problems.append("judge.json: not readable (the judged column is not labelled)")
        return "label unknown"
    label = str(doc.get("label") or f"judge: {doc.get('judge')} ({doc.get('model')})")
    if doc.get("official"):
        return f"{label}: upstream's prompts with {doc.get('model')}"
    if doc.get("judge") == "official":
        return f"{label}: upstream's prompts, not with {OFFICIAL_MODEL} (not official)"
    return f"{label}, duplexeval's prompts (not official)"


def judgement(data, key: str, r: dict, notes: list[str]) -> dict | None:
    """The session's judgement.json (judge.py), else what samples.jsonl kept of it; None without a
    judge stage."""
    if "judge" not in data.stage_dirs:
        return None
    path = data.find(key, "judgement.json")
    doc = _json_file(path) if path is not None else None
    if isinstance(doc, dict):
        return doc
    notes.append("judgement.json is not a JSON object; the judge's scores are not shown" if path is not None
                 else "no judgement.json: the judge did not judge this session")
    return r.get("judgement") if isinstance(r.get("judgement"), dict) else {}


def events(j: dict) -> list[tuple[float, float, object, object, str]]:
    """(start, end, fluency, instruction following, the segment's text or '') of each judged segment."""
    texts = {(round(x["start"], 3), round(x["end"], 3)): str(x.get("text", ""))
             for x in j.get("segments") or [] if isinstance(x, dict) and _num(x.get("start")) and _num(x.get("end"))}
    out = []
    for ev in j.get("events") or []:
        if not (isinstance(ev, list) and len(ev) >= 3 and isinstance(ev[0], list) and len(ev[0]) >= 2
                and _num(ev[0][0]) and _num(ev[0][1])):
            continue
        a, b = float(ev[0][0]), float(ev[0][1])
        out.append((a, b, ev[1], ev[2], texts.get((round(a, 3), round(b, 3)), "")))
    return out


def _score(x) -> str:
    return fmt(x, 2) if _num(x) else "-"


def lane_rows(duration: float, rows: list[tuple[str, list[tuple[float, float, str]]]]) -> tuple[float, list[dict]]:
    """The geometry of the text lanes (lanes): the label column's width and, per row, its label and
    items ({cls, left, width (% of the image's width), start, end, text}), each item placed at its
    times clipped to the session (one ending before it starts is left out)."""
    g = timeline.geometry(0.0, max(duration, 1e-3))
    span = (g["x1"] - g["x0"]) / (g["t1"] - g["t0"])
    out = []
    for label, items in rows:
        cls = "seg judged" if label.startswith("judge") else "seg"
        placed = []
        for a, b, text in items:
            lo, hi = max(a, 0.0), min(b, duration)
            if hi < lo:
                continue
            placed.append({"cls": cls, "left": 100 * (g["x0"] + lo * span), "width": 100 * max(hi - lo, 0.05) * span,
                           "start": a, "end": b, "text": text})
        out.append({"label": label, "items": placed})
    return 100 * g["x0"], out


def lanes(duration: float, rows: list[tuple[str, list[tuple[float, float, str]]]]) -> Raw:
    """Text lanes under the timeline image, on its x axis (templates/lanes.html, with their style):
    one row per (label, [(start, end, text)]), each item placed at its times (its whole text in its
    tooltip); the judge's row (F: fluency, I: instruction following, as on the timeline's bands) is
    drawn in the model's colour."""
    width, placed = lane_rows(duration, rows)
    return Raw(templates.macro("lanes.html", "lanes", near=__file__)(width, placed))


def _judged_summary(j: dict | None, label: str | None, task: str) -> list[tuple]:
    if j is None:
        return []
    ev = events(j)
    return [("judge", label or "-"), ("judgement", str(j.get("status") or "-")),
            ("task score", _score(j.get("task_score")) if _num(j.get("task_score"))
             else ("- (no task score for daily)" if task == "daily" else "-")),
            ("judged segments", str(len(ev)))]


def _unparsed(j: dict) -> dict | None:
    """The note of a judgement that did not parse: its status and the replies that did not (scrubbed
    of secrets); None for any other judgement."""
    if j.get("status") != "unparsed":
        return None
    bad = [q for q in j.get("requests") or [] if isinstance(q, dict) and q.get("status") != "ok"]
    return {"status": j.get("status"),
            "replies": [(str((q.get("prompt") or {}).get("id", "-")), str(q.get("status")),
                         scrub(str(q.get("raw") or ""))[:400]) for q in bad]}


def sample_page(data, s, r: dict, label: str | None = None) -> str:
    """A session's page; `label`: the judged column's (judge_label, read once by build)."""
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
    asr = transcripts(data, s.key, notes)
    label = label if label is not None else judge_label(data)
    j = judgement(data, s.key, r, notes)
    judged = events(j) if j else []
    ended = ex.get("ended") if isinstance(ex.get("ended"), dict) else {}
    outcome = "scored" if r.get("eligible") else "not scored"
    summary = [("task", s.task or r.get("task") or "-"), ("outcome", outcome)]
    if r.get("eligible"):
        summary += [(k, fmt(r.get(k), 3)) for k in SESSION_ROWS]
    elif r:
        summary.append(("why", scrub(str(r.get("reason")))))
    if ex:
        summary += [("examiner preset", str(ex.get("preset", "-"))),
                    ("examiner ended", f"{ended.get('reason', '-')} at {fmt(ended.get('t'), 2)} s"),
                    ("goals reached", ", ".join(map(str, ex.get("goals_reached") or [])) or "none")]
    summary += _judged_summary(j, label, s.task or r.get("task") or "")
    viewer = lane_html = None
    signal = user or model
    if signal is not None:
        if asr is None:   # the examiner's own record
            spans = [(f"examiner turn {t.get('index')}: {t.get('text', '')}", t["start_s"], t["end_s"], "user")
                     for t in turns]
            heard = [(m.get("text") or "", m["start_s"], m["end_s"]) for m in _timed(ex.get("model_turns"))]
        else:             # the asr stage's transcripts of both channels
            spans = [(f"ASR: {x['text']}", x["start"], x["end"], "user") for x in asr["examiner"]]
            heard = [(w["text"], w["start"], w["end"]) for x in asr["model"] for w in x["words"]]
        spans += [(f"judged {i}: F {_score(f)}, I {_score(k)}", a, b, "model")
                  for i, (a, b, f, k, _) in enumerate(judged)]
        speech = [tuple(x) for x in r.get("model_speech") or [] if isinstance(x, list) and len(x) == 2]
        duration = signal[0].shape[0] / signal[2]
        tl = timeline.Timeline(duration=duration, user=(user[0], user[2]) if user else None,
                               model=(model[0], model[2]) if model else None,
                               model_note="" if model else "no output.wav",
                               words=heard, vad=speech, vad_label="model speech (VAD)", spans=spans,
                               markers=[("E", t["end_s"]) for t in turns])
        viewer = timeline.viewer(tl)
        rows = []
        if asr is not None:
            rows += [(f"{who} (ASR)", [(x["start"], x["end"], x["text"]) for x in asr[who]])
                     for who in ("examiner", "model")]
        if j is not None:
            rows.append(("judge (F / I)", [(a, b, f"F {_score(f)} / I {_score(k)}") for a, b, f, k, _ in judged]))
        if rows:
            lane_html = lanes(duration, rows)
    players = []
    if user is not None:
        players.append(common.player(data, s, paths["user"], user, "audio-user", "examiner (input.wav)"))
    if model is not None:
        players.append(common.player(data, s, paths["model"], model, "audio-model", "model (output.wav)"))
    turn_rows = [(str(t.get("index")), str(t.get("kind")), str(t.get("goal") or "-"), fmt(t.get("start_s"), 2),
                  fmt(t.get("end_s"), 2), str(t.get("yielded")), str(t.get("answered")), str(t.get("text", "")),
                  str(t.get("reply_text") or "-")) for t in turns]
    conv = None
    if asr is not None:
        conv = [(fmt(a, 2), fmt(b, 2), who, text) for a, b, who, text in sorted(
            [(x["start"], x["end"], who, x["text"]) for who in ("examiner", "model") for x in asr[who]],
            key=lambda x: (x[0], x[2]))]
    judged_rows = None if j is None else [(str(i), fmt(a, 2), fmt(b, 2), _score(f), _score(k), text)
                                          for i, (a, b, f, k, text) in enumerate(judged)]
    body = templates.render("sample.html", near=__file__, extra_css=Markup(common.EXTRA_CSS),
                            back=common.back_link(data), key=s.key, summary=summary,
                            notes=[scrub(n) for n in notes], unparsed=_unparsed(j) if j else None,
                            viewer=viewer, lanes=lane_html, players=players, turns=turn_rows,
                            transcripts=conv, label=label, judged=judged_rows)
    return page(f"{s.key}: {outcome}", body, script=timeline.TIMELINE_JS)


def _metric_row(data, name: str, s) -> tuple:
    try:
        return (name, s["task"], f"{s['coverage']['scored']}/{s['coverage']['sessions']}",
                *(fmt(s["unified"][k]["value"], 3) for k, *_ in UNIFIED[:3]),
                fmt(s["examiner"]["talked_over_model"]["value"], 3), fmt(s["examiner"]["ended_early"]["value"], 3))
    except (TypeError, KeyError):
        data.problems.append(f"{name}: metrics.json entry not readable")
        return (name, "-", "-", "-", "-", "-", "-", "-")


JUDGED = ("fluency", "instruction_following", "task_score")


def _float(x, nd: int) -> str:
    """A judged number with nd decimals (an integral one too: a bin without seconds is 0), '-' for none."""
    return fmt(float(x), nd) if _num(x) else "-"


def _judged_rows(data, subsets: dict) -> tuple[list[tuple], list[tuple]]:
    """The index's judged column per task (metrics.json `judged`, score/judged.py): (the scores'
    rows, the 15 s bins' rows); the tasks without one are left out."""
    rows, bins = [], []
    for name, s in sorted(subsets.items()):
        j = s.get("judged") if isinstance(s, dict) else None
        if j is None:
            continue
        try:
            rows.append((name, s["task"], f"{j['parsed']}/{j['sessions']}", str(j["unparsed"]), str(j["events"]),
                         *(_float(j[k]["value"], 3) for k in JUDGED),
                         *(f"[{_float(j[k]['interval'][0], 3)}, {_float(j[k]['interval'][1], 3)}]"
                           if j[k].get("interval") else "-" for k in JUDGED)))
            got = {tuple(b["bin"]): b for b in j["bins"]}
            for what, nd in (("fluency", 3), ("instruction_following", 3), ("seconds", 2)):
                bins.append((name, what, *(_float((got.get(b) or {}).get(what), nd) for b in BINS)))
        except (TypeError, KeyError, AttributeError, IndexError):
            data.problems.append(f"{name}: metrics.json judged entry not readable")
            rows.append((name, "-", *["-"] * 9))
    return rows, bins


def judged_section(data, subsets: dict, label: str | None) -> dict | None:
    """The index's judged column (templates/index.html: its label, the scores' and the bins' headers
    and rows; no rows when metrics.json has none), None without a judge stage."""
    if label is None:
        return None
    rows, bins = _judged_rows(data, subsets)
    return {"label": label, "rows": rows, "bins": bins,
            "headers": ["subset", "task", "parsed", "unparsed", "segments", *JUDGED, *(f"{k} 95% CI" for k in JUDGED)],
            "bin_headers": ["subset", "score", *(f"{lo:g}-{hi:g} s" for lo, hi in BINS)]}


def build(store, record: dict, out: Path) -> int:
    data = common.load(store, record)
    m = data.metrics if isinstance(data.metrics, dict) else {}
    subsets = m.get("subsets") if isinstance(m.get("subsets"), dict) else {}
    rows = _rows(data)
    samples = common.sample_keys(data, set(rows))
    metric_rows = [_metric_row(data, name, s) for name, s in sorted(subsets.items())]
    judged = "judge" in data.stage_dirs
    listing = []
    for s in samples:
        r = rows.get(s.key) or {}
        cells = [common.sample_link(data, s, s.key), fmt(r.get("response_rate"), 3),
                 fmt(r.get("response_latency_s"), 3), fmt(r.get("overlap_rate"), 3)]
        if judged:
            j = r.get("judgement") if isinstance(r.get("judgement"), dict) else {}
            cells += [str(j.get("status") or "-"), _score(j.get("task_score"))]
        listing.append({"outcome": "scored" if r.get("eligible") else "not scored", "cells": cells})
    label = judge_label(data)
    n = common.write_pages(data, out, samples, lambda s: sample_page(data, s, rows.get(s.key) or {}, label))
    body = templates.render(
        "index.html", near=__file__, model=record.get("model"), dataset=record.get("dataset"),
        extra_css=Markup(common.EXTRA_CSS), run_table=common.run_table(data), metric_rows=metric_rows,
        judged=judged_section(data, subsets, label), missing=common.missing_section(data),
        sessions=common.sample_list(listing, ["session", "response rate", "latency (s)", "overlap",
                                              *(("judgement", "task score") if judged else ())],
                                    left=1, cls="samples fdb-v2-samples"),
        problems=[scrub(p) for p in data.problems])
    (out / common.INDEX).write_text(page(f"fdb-v2 report: {record.get('model')} on {record.get('dataset')}", body),
                                    encoding="utf-8")
    return n
