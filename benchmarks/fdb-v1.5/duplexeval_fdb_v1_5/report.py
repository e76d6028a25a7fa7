"""The HTML report of a Full-Duplex-Bench v1.5 run (the `report` hook; `duplexeval report`): an
index with the run, per task both columns side by side, a figure of the behaviour rates and of the
stop and response latency distributions, and one page per sample with the overlap run's timeline
above the clean run's, the overlap window marked on both, the behaviour label and the sample's
numbers. Built from the run's stage folders through duplexeval_common.html; a missing or
unreadable piece is named on its page, never a stop.
"""

from __future__ import annotations

from pathlib import Path

from duplexeval_common.html import run as common, timeline
from duplexeval_common.html.page import Raw, escape, figure_png, fmt, link, matplotlib, page, table

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
    user = common.audio_file(data.find(key, f"{prefix}input.wav"))
    model = common.audio_file(data.find(key, f"{prefix}output.wav"))
    if not isinstance(user, tuple):
        notes.append(f"{prefix}input.wav: {user}")
        return None
    words = common.words(data, data.find(key, f"{prefix}output.json"), notes)
    u = row.get("unified") or {}
    segs = u.get("clean_segments" if prefix else "segments") or []
    spans = [("overlap", window[0], window[1], "user")] if window and not prefix else []
    if window and prefix:
        spans = [("overlap window (absent from this input)", window[0], window[1], "user")]
    return timeline.Timeline(duration=user[0].shape[0] / user[2], user=(user[0], user[2]),
                             model=(model[0], model[2]) if isinstance(model, tuple) else None,
                             model_note="" if isinstance(model, tuple) else f"{prefix}output.wav: {model}",
                             words=words, vad=[tuple(x) for x in segs],
                             markers=[("S", window[0]), ("E", window[1])] if window else [], spans=spans)


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
    body = [f"<h1>{escape(s.key)}</h1>", table(["", ""], facts, left=2)]
    top = _timeline(data, s.key, "", window, row, notes)
    clean = _timeline(data, s.key, "clean_", window, row, notes)
    if top is not None:
        body += ["<h2>With the overlap (input.wav, output.wav)</h2>", timeline.viewer(top)]
    if clean is not None:
        body += ["<h2>Clean twin (clean_input.wav, clean_output.wav)</h2>", timeline.figure(clean)]
    for n in notes:
        body.append(f'<p class="note">{escape(n)}</p>')
    body.append("<h2>Runner events</h2>")
    body.append(common.events(data, data.find(s.key, "events.jsonl")))
    return page(s.key, common.EXTRA_CSS + "\n".join(str(b) for b in body), script=timeline.TIMELINE_JS)


def build(store, record: dict, out: Path) -> int:
    data = common.load(store, record)
    metrics = data.metrics if isinstance(data.metrics, dict) and "subsets" in data.metrics else None
    rows = _rows(data)
    samples = common.sample_keys(data, set(rows))
    for s in samples:
        p = out / common.page_path(s)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(sample_page(data, s, rows.get(s.key, {})), encoding="utf-8")
    body = [f"<h1>Full-Duplex-Bench v1.5: {escape(record.get('model'))} on {escape(record.get('dataset'))}</h1>",
            common.EXTRA_CSS, "<h2>Run</h2>", common.run_table(data)]
    if metrics:
        body.append("<h2>Per task: official and unified columns</h2>")
        for name, sub in metrics["subsets"].items():
            body.append(f"<pre>{escape(chr(10).join(subset_lines(name, sub)))}</pre>")
        for fig in (behaviour_figure(metrics), latency_figure(rows)):
            if fig is not None:
                body.append(str(fig))
    else:
        body.append('<p class="note">No metrics.json: the aggregate stage did not complete.</p>')
    listing = [(link(common.page_path(s), s.key), s.task or "-",
                (rows.get(s.key) or {}).get("behaviour") or "-",
                fmt(((rows.get(s.key) or {}).get("unified") or {}).get("stop_s"), 3),
                fmt(((rows.get(s.key) or {}).get("unified") or {}).get("latency_s"), 3)) for s in samples]
    body += ["<h2>Missing</h2>", common.missing_section(data), "<h2>Samples</h2>",
             table(["sample", "task", "behaviour", "stop (s)", "response latency (s)"], listing, left=3)]
    for prob in data.problems:
        body.append(f'<p class="note">{escape(prob)}</p>')
    (out / common.INDEX).write_text(page("Full-Duplex-Bench v1.5 report", "\n".join(str(b) for b in body)),
                                    encoding="utf-8")
    return len(samples)
