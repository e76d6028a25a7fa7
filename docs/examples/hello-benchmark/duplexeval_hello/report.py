"""The HTML report (the orchestrator builds it): an index with the run, the rates and one page
per sample with its timeline, from the shared pieces of duplexeval_common.html."""

from __future__ import annotations

from pathlib import Path

from duplexeval_common.html import run as common, timeline
from duplexeval_common.html.page import escape, fmt, link, page, table


def build(store, record: dict, out: Path) -> int:
    data = common.load(store, record)
    m = data.metrics or {"subsets": {}, "samples": {}}
    samples = common.sample_keys(data, set(m.get("samples", {})))
    rows = [(name, s["task"], fmt(s["unified"]["in_time_rate"]["value"]),
             f"{s['unified']['in_time_rate']['count']}/{s['unified']['in_time_rate']['n']}")
            for name, s in m["subsets"].items()]
    listing = [(link(common.page_path(s), s.key), fmt((m["samples"].get(s.key) or {}).get("gap_s"), 3),
                str((m["samples"].get(s.key) or {}).get("in_time", "-"))) for s in samples]
    for s in samples:
        r = m["samples"].get(s.key) or {}
        user = common.audio_file(data.find(s.key, "input.wav"))
        model = common.audio_file(data.find(s.key, "output.wav"))
        notes: list[str] = []
        words = common.words(data, data.find(s.key, "output.json"), notes)
        body = [f"<h1>{escape(s.key)}</h1>", table(["", ""], [("gap (s)", fmt(r.get("gap_s"), 3)),
                                                             ("in time", str(r.get("in_time", "-")))], left=2)]
        if isinstance(user, tuple):
            tl = timeline.Timeline(duration=user[0].shape[0] / user[2], user=(user[0], user[2]),
                                   model=(model[0], model[2]) if isinstance(model, tuple) else None,
                                   words=words, markers=[("E", r["turn_end_s"])] if "turn_end_s" in r else [])
            body.append(timeline.viewer(tl))
        p = out / common.page_path(s)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(page(s.key, common.EXTRA_CSS + "\n".join(body), script=timeline.TIMELINE_JS), encoding="utf-8")
    body = [f"<h1>hello: {escape(record.get('model'))} on {escape(record.get('dataset'))}</h1>", common.EXTRA_CSS,
            "<h2>Run</h2>", common.run_table(data), "<h2>Metrics</h2>",
            table(["subset", "task", "in_time_rate", "count/n"], rows, left=2),
            "<h2>Missing</h2>", common.missing_section(data),
            "<h2>Samples</h2>", table(["sample", "gap (s)", "in time"], listing, left=1)]
    (out / common.INDEX).write_text(page("hello report", "\n".join(body)), encoding="utf-8")
    return len(samples)
