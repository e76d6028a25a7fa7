"""The HTML report of a Full-Duplex-Bench v1.5 run (the `report` hook; `duplexeval report`): an
index with the run, per task both columns side by side, a figure of the behaviour rates and of the
stop and response latency distributions, and one page per sample with the overlap run's timeline
above the clean run's, the overlap window marked on both, the behaviour label and the sample's
numbers, and the overlap run's players (linked from the store). Built from the run's stage folders
through duplexeval_common.html and templates/index.html, templates/sample.html (Jinja2, autoescape);
a missing or unreadable piece is named on its page, never a stop.
"""

from __future__ import annotations

from pathlib import Path

from duplexeval_common.html import run as common, templates, timeline
from duplexeval_common.html.page import Markup, Raw, figure_png, fmt, matplotlib, page

from .score.report import subset_lines


def _rows(data) -> dict[str, dict]:
    """samples.jsonl of the aggregate stage by sample id."""
    from duplexeval_common.jsonio import read_jsonl
    d = data.stage_dirs.get("aggregate")
    p = d / "samples.jsonl" if d is not None else None
    if p is None or not p.is_file():
        return {}
    try:
        return {r["sample_id"]: r for r in read_jsonl(p) if isinstance(r, dict) and "sample_id" in r}
    except (OSError, ValueError, RecursionError) as exc:
        data.problems.append(f"samples.jsonl: not readable ({exc})")
        return {}


def behaviour_figure(metrics: dict) -> Raw | None:
    """Per task, the share of each behaviour label with its 95% Wilson interval."""
    subs = [(n, s) for n, s in metrics["subsets"].items() if (s["unified"].get("behaviour") or {}).get("rates")]
    if not subs:
        return None
    plt = matplotlib()
    labels = list(subs[0][1]["unified"]["behaviour"]["rates"])
    fig, ax = plt.subplots(figsize=(9.0, 3.4))
    width = 0.8 / max(1, len(subs))
    for i, (name, s) in enumerate(subs):
        rates = s["unified"]["behaviour"]["rates"]
        xs = [j + i * width for j in range(len(labels))]
        vals = [rates[lab]["value"] or 0.0 for lab in labels]
        lo = [v - (rates[lab]["interval"] or [v, v])[0] for v, lab in zip(vals, labels)]
        hi = [(rates[lab]["interval"] or [v, v])[1] - v for v, lab in zip(vals, labels)]
        ax.bar(xs, vals, width, yerr=[lo, hi], capsize=3, label=name)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(labels))], labels, fontsize=8)
    ax.set_ylim(0, 1)
    ax.set_ylabel("share of labelled samples")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return figure_png(fig, "behaviour label rates per task, 95% Wilson intervals")


def latency_figure(rows: dict[str, dict]) -> Raw | None:
    """Per task, the observed stop latencies (from the overlap's start) and response latencies
    (from its end), one point per sample."""
    by_task: dict[str, tuple[list, list]] = {}
    for r in rows.values():
        u = r.get("unified")
        if not r.get("eligible") or not u:
            continue
        stop, resp = by_task.setdefault(r["task"], ([], []))
        if u.get("stop_observed"):
            stop.append(u["stop_s"])
        if u.get("outcome") == "response":
            resp.append(u["latency_s"])
    if not by_task:
        return None
    plt = matplotlib()
    fig, axes = plt.subplots(1, 2, figsize=(10.0, 3.2), sharey=True)
    tasks = sorted(by_task)
    for ax, k, title in ((axes[0], 0, "stop latency from the overlap's start (s)"),
                         (axes[1], 1, "response latency from the overlap's end (s)")):
        for i, t in enumerate(tasks):
            vals = by_task[t][k]
            ax.plot(vals, [i] * len(vals), "o", alpha=0.6)
        ax.set_yticks(range(len(tasks)), tasks, fontsize=8)
        ax.set_title(title, fontsize=9)
    fig.tight_layout()
    return figure_png(fig, "stop and response latency per sample and task")


def _timeline(data, key: str, prefix: str, window, row: dict, notes: list[str]):
    """(the Timeline of the overlap run, or of the clean twin with prefix "clean_", or None; the
    user and model audio as audio_file gives them)."""
    user = common.audio_file(data.find(key, f"{prefix}input.wav"))
    model = common.audio_file(data.find(key, f"{prefix}output.wav"))
    if not isinstance(user, tuple):
        notes.append(f"{prefix}input.wav: {user}")
        return None, None, None
    words = common.words(data, data.find(key, f"{prefix}output.json"), notes)
    u = row.get("unified") or {}
    segs = u.get("clean_segments" if prefix else "segments") or []
    spans = [("overlap", window[0], window[1], "user")] if window and not prefix else []
    if window and prefix:
        spans = [("overlap window (absent from this input)", window[0], window[1], "user")]
    tl = timeline.Timeline(duration=user[0].shape[0] / user[2], user=(user[0], user[2]),
                           model=(model[0], model[2]) if isinstance(model, tuple) else None,
                           model_note="" if isinstance(model, tuple) else f"{prefix}output.wav: {model}",
                           words=words, vad=[tuple(x) for x in segs],
                           markers=[("S", window[0]), ("E", window[1])] if window else [], spans=spans)
    return tl, user, model if isinstance(model, tuple) else None


def sample_page(data, s, row: dict) -> str:
    notes: list[str] = []
    u = row.get("unified") or {}
    window = (u["S_s"], u["E_s"]) if "S_s" in u else None
    facts = [("task", s.task or row.get("task")), ("eligible", row.get("eligible")),
             ("reasons", ", ".join(row.get("reasons") or []) or "-"),
             ("overlap window (s)", f"{fmt(window[0], 3)} - {fmt(window[1], 3)}" if window else "-"),
             ("behaviour label", row.get("behaviour") or ("unparsed" if "content_tag" in row else "not judged")),
             ("exercised (speaking at S)", u.get("exercised")), ("stop (s)", fmt(u.get("stop_s"), 3)),
             ("stop also in the clean run", u.get("stop_in_clean")), ("outcome at E", u.get("outcome")),
             ("response latency (s)", fmt(u.get("latency_s"), 3)),
             ("yielded during the overlap (s)", fmt(u.get("yielded_s"), 3))]
    if row.get("problem"):
        facts.append(("problem", row["problem"]))
    top, user, model = _timeline(data, s.key, "", window, row, notes)
    clean, _, _ = _timeline(data, s.key, "clean_", window, row, notes)
    players = []
    if user is not None:
        players.append(common.player(data, s, data.find(s.key, "input.wav"), user, "audio-user", "user (input.wav)"))
    if model is not None:
        players.append(common.player(data, s, data.find(s.key, "output.wav"), model, "audio-model",
                                     "model (output.wav)"))
    body = templates.render("sample.html", near=__file__, back=common.back_link(data),
                            extra_css=Markup(common.EXTRA_CSS), key=s.key, facts=facts,
                            top=timeline.viewer(top) if top is not None else None,
                            clean=timeline.figure(clean) if clean is not None else None, players=players,
                            notes=notes, events=Markup(common.events(data, data.find(s.key, "events.jsonl"))))
    return page(s.key, body, script=timeline.TIMELINE_JS)


def _outcome(row: dict) -> str:
    """A sample's outcome for the index's filters: its behaviour label, else why it has none."""
    if not row:
        return "missing"
    if not row.get("eligible", True):
        return "ineligible"
    return row.get("behaviour") or ("unparsed" if "content_tag" in row else "not judged")


def build(store, record: dict, out: Path) -> int:
    data = common.load(store, record)
    metrics = data.metrics if isinstance(data.metrics, dict) and "subsets" in data.metrics else None
    rows = _rows(data)
    samples = common.sample_keys(data, set(rows))
    n = common.write_pages(data, out, samples, lambda s: sample_page(data, s, rows.get(s.key, {})))
    listing = []
    for s in samples:
        row = rows.get(s.key) or {}
        u = row.get("unified") or {}
        listing.append({"outcome": _outcome(row), "cells": [
            common.sample_link(data, s, s.key), s.task or "-", row.get("behaviour") or "-",
            fmt(u.get("stop_s"), 3), fmt(u.get("latency_s"), 3)]})
    figures = [f for f in (behaviour_figure(metrics), latency_figure(rows)) if f is not None] if metrics else []
    body = templates.render(
        "index.html", near=__file__, record=record, extra_css=Markup(common.EXTRA_CSS),
        run_table=common.run_table(data),
        subsets=None if metrics is None else ["\n".join(subset_lines(k, v)) for k, v in metrics["subsets"].items()],
        figures=figures, missing=Markup(common.missing_section(data)),
        samples=common.sample_list(listing, ["sample", "task", "behaviour", "stop (s)", "response latency (s)"],
                                   left=3),
        problems=data.problems)
    (out / common.INDEX).write_text(page("Full-Duplex-Bench v1.5 report", body), encoding="utf-8")
    return n
