"""The HTML report (the orchestrator builds it): an index with the run, the rates and the sample
list, and one page per sample with its timeline and players, from the shared pieces of
duplexeval_common.html. The markup is in templates/ (package data), rendered with Jinja2 and
autoescape: this module computes the values."""

from __future__ import annotations

from pathlib import Path

from duplexeval_common.html import run as common, templates, timeline
from duplexeval_common.html.page import Markup, fmt, page


def sample_page(data, s, r: dict) -> str:
    paths = {"user": data.find(s.key, "input.wav"), "model": data.find(s.key, "output.wav")}
    user, model = common.audio_file(paths["user"]), common.audio_file(paths["model"])
    notes: list[str] = []
    words = common.words(data, data.find(s.key, "output.json"), notes)
    facts = [("gap (s)", fmt(r.get("gap_s"), 3)), ("in time", str(r.get("in_time", "-")))]
    viewer, players = None, []
    if isinstance(user, tuple):
        tl = timeline.Timeline(duration=user[0].shape[0] / user[2], user=(user[0], user[2]),
                               model=(model[0], model[2]) if isinstance(model, tuple) else None,
                               words=words, markers=[("E", r["turn_end_s"])] if "turn_end_s" in r else [])
        viewer = timeline.viewer(tl)
        players.append(common.player(data, s, paths["user"], user, "audio-user", "user (input.wav)"))
    if isinstance(model, tuple):
        players.append(common.player(data, s, paths["model"], model, "audio-model", "model (output.wav)"))
    body = templates.render("sample.html", near=__file__, back=common.back_link(data),
                            extra_css=Markup(common.EXTRA_CSS), key=s.key, facts=facts, timeline=viewer,
                            players=players, notes=notes)
    return page(s.key, body, script=timeline.TIMELINE_JS)


def build(store, record: dict, out: Path) -> int:
    data = common.load(store, record)
    m = data.metrics or {"subsets": {}, "samples": {}}
    samples = common.sample_keys(data, set(m.get("samples", {})))
    rows = [(name, s["task"], fmt(s["unified"]["in_time_rate"]["value"]),
             f"{s['unified']['in_time_rate']['count']}/{s['unified']['in_time_rate']['n']}")
            for name, s in m["subsets"].items()]
    listing = [{"outcome": str((m["samples"].get(s.key) or {}).get("in_time", "-")),
                "cells": [common.sample_link(data, s, s.key), fmt((m["samples"].get(s.key) or {}).get("gap_s"), 3),
                          str((m["samples"].get(s.key) or {}).get("in_time", "-"))]} for s in samples]
    n = common.write_pages(data, out, samples, lambda s: sample_page(data, s, m["samples"].get(s.key) or {}))
    body = templates.render("index.html", near=__file__, record=record, extra_css=Markup(common.EXTRA_CSS),
                            run_table=common.run_table(data), rows=rows, missing=common.missing_section(data),
                            samples=common.sample_list(listing, ["sample", "gap (s)", "in time"], left=1))
    (out / common.INDEX).write_text(page("hello report", body), encoding="utf-8")
    return n
