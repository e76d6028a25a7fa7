"""The static HTML report of a Full-Duplex-Bench v1.0 run (the benchmark's `report` hook):
report.html (tables, plots, samples) and one page per sample.

Everything comes from the run's record (run.json) and its stages' folders in the store: the
aggregate stage's metrics.json, unified.json and unified-samples.jsonl; the dataset stage's
input.wav and annotations; the runner stage's output.wav and events.jsonl; the asr stage's
output.json (words) and vad.json; every stage's stage.json (each sample's status and reason).
A piece that is missing or unreadable is named on the page; it never stops the report.

`build(store, record, out)` writes out/report.html and out/samples/<subset>/<id>.html and returns
the number of sample pages. The bytes depend only on those inputs (no clock, no paths).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from itertools import zip_longest
from pathlib import Path

from duplexeval_common.html import run as common, timeline
from duplexeval_common.html.page import Raw, escape, fmt, link, page, table
from duplexeval_common.html.run import EXTRA_CSS, INDEX, page_path, read_json
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



def _subset_section(name: str, task: str, s: dict, revision: dict | None, extra: dict | None) -> str:
    from ..score import report as agg
    lines = agg.subset_table(name, task, s, revision)
    head = lines[0].removeprefix("== ")
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
    rows = [(*(a or ("", "")), *(b or ("", "", "", "", ""))) for a, b in zip_longest(off, uni)]
    out = [f'<h3 id="subset-{escape(name)}">{escape(head)}</h3>',
           table([agg.official_head(revision), "value", "unified", "value", "95% interval", "count/n",
                  "bounds / p90"], rows, cls=f"subset subset-{escape(name)}")]
    out += [f'<p class="muted">{escape(x.strip())}</p>' for x in lines if x.startswith("   ineligible:")]
    if extra:
        if extra.get("min_observable_s") is not None:
            out.append(f'<p class="muted">min_observable_s {agg._f(extra["min_observable_s"], 3)} (a '
                       "response_rate_ks with k above it is a lower bound)</p>")
        for note in extra.get("official_notes") or []:
            out.append(f'<p class="muted">note: {escape(note)}</p>')
        for x in extra.get("invalid") or []:
            out.append(f'<p class="bad">excluded: {escape(x.get("sample_id"))}: {escape(x.get("reason"))} '
                       f'({escape(x.get("problem"))})</p>')
    return "\n".join(out)


def _headline(data: RunData) -> str:
    from ..score.report import revision_line
    m = data.metrics
    if not m or not isinstance(m.get("subsets"), dict):
        return '<p class="note">No metrics: the aggregate stage did not complete (metrics.json missing).</p>'
    revision = m.get("official_revision")
    out = [f'<p class="muted">{escape(revision_line(revision))}; left: official column, right: unified '
           "column (value, 95% interval; benchmarks/fdb-v1/README.md defines each)</p>"]
    extras = (data.unified or {}).get("subsets", {}) if isinstance(data.unified, dict) else {}
    tasks = subset_tasks(data)
    for name, s in m["subsets"].items():
        if tasks.get(name) is None:
            continue
        try:
            out.append(_subset_section(name, tasks[name], s, revision, extras.get(name)))
        except (KeyError, TypeError, ValueError) as exc:
            out.append(f'<p class="bad">{escape(name)}: metrics.json entry not readable ({escape(exc)})</p>')
    return "\n".join(out)


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


def _samples_table(data: RunData, samples: list[Sample]) -> str:
    rows = []
    for s in samples:
        out, why = outcome(data, s)
        row = data.rows.get(s.key) or {}
        rows.append((s.subset, link(page_path(s), s.id), Raw(f'<span class="outcome">{escape(out)}</span>'),
                     why, fmt(row.get("latency_s"), 3)))
    return table(["subset", "id", "outcome", "reason", "latency (s)"], rows, left=4, cls="samples")


def index_page(data: RunData, samples: list[Sample]) -> str:
    r = data.record
    body = [f"<h1>duplexeval report: {escape(r.get('model'))} on {escape(r.get('dataset'))}</h1>",
            '<nav><a href="#metrics">metrics</a><a href="#plots">plots</a><a href="#samples">samples</a>'
            '<a href="#missing">missing</a></nav>', EXTRA_CSS,
            "<h2>Run</h2>", common.run_table(data),
            '<h2 id="metrics">Metrics</h2>', _headline(data),
            '<h2 id="plots">Plots</h2>', _plots(data),
            '<h2 id="missing">Missing samples</h2>', common.missing_section(data),
            f'<h2 id="samples">Samples ({len(samples)})</h2>', _samples_table(data, samples)]
    if data.problems:
        body += ["<h2>Problems reading the run</h2>",
                 "<ul>" + "".join(f"<li>{escape(scrub(p))}</li>" for p in data.problems) + "</ul>"]
    return page(f"duplexeval report: {r.get('model')} on {r.get('dataset')}", "\n".join(body))


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
    user = common.audio_file(data.find(s.key, "input.wav"))
    model = common.audio_file(data.find(s.key, "output.wav"))
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

    summary = [("task", task), ("outcome", Raw(f'<span class="outcome">{escape(out)}</span>')),
               ("reason", why), ("latency (s)", fmt(row.get("latency_s"), 3)),
               ("T (s)", fmt(row.get("T_s"), 3))]
    if row.get("rating") is not None:
        summary.append(("rating", row["rating"]))
    body = [f"<nav>{link('../../' + INDEX, 'back to the report')}</nav>", EXTRA_CSS,
            f"<h1>{escape(s.key)}</h1>", table(["sample", ""], summary, left=2)]
    body += [f'<p class="note">{escape(scrub(n))}</p>' for n in notes]
    body.append("<h2>Timeline</h2>")
    if user is None and model is None:
        body.append('<p class="note">No audio: nothing to draw.</p>')
    else:
        dur = max([x[0].shape[0] / x[2] for x in (user, model) if x is not None])
        if user is not None:
            dur = user[0].shape[0] / user[2]  # the input window [0, T]
        reason = (data.record.get("missing") or {}).get(s.key, "")
        tl = timeline.Timeline(duration=dur, user=(user[0], user[2]) if user else None,
                               model=(model[0], model[2]) if model else None, words=words, vad=vad,
                               pauses=pauses, markers=markers, vad_label=vad_label,
                               model_note="no model output" + (f" ({scrub(reason)[:90]})" if reason else ""))
        body.append('<p class="muted">Click the timeline to seek both channels; the red line follows '
                    "the playing audio.</p>")
        body.append(timeline.viewer(tl))
    from duplexeval_common.html.page import audio
    players = []
    if user is not None:
        players.append(audio(user[1], user[2], "audio-user", "user (input.wav)"))
    if model is not None:
        players.append(audio(model[1], model[2], "audio-model", "model (output.wav)"))
    body.append('<div class="players">' + "".join(players) + "</div>")
    body.append("<h2>Markers</h2>")
    mrows = [(f"pause {i + 1}", fmt(a, 3), fmt(b, 3)) for i, (a, b) in enumerate(pauses)]
    mrows += [(n, fmt(t, 3), "") for n, t in markers]
    body.append(table(["marker", "time (s)", "end (s)"], mrows, cls="markers") if mrows
                else '<p class="muted">No annotation markers for this task.</p>')
    body.append(f"<h2>Words (ASR, model channel): {len(words)}</h2>")
    body.append(table(["word", "start (s)", "end (s)"], [(w, fmt(a, 3), fmt(b, 3)) for w, a, b in words],
                      cls="words") if words else '<p class="muted">No words.</p>')
    body.append(f"<h2>{escape(vad_label)} segments: {len(vad)}</h2>")
    body.append(table(["start (s)", "end (s)"], [(fmt(a, 3), fmt(b, 3)) for a, b in vad], left=0,
                      cls="vad") if vad else '<p class="muted">No segments.</p>')
    body.append("<h2>Stages</h2>")
    body.append(table(["stage", "status", "reason"], common.statuses(data, s), left=3))
    body.append("<h2>Runner events</h2>")
    body.append(common.events(data, data.find(s.key, "events.jsonl")))
    body.append(f"<nav>{link('../../' + INDEX, 'back to the report')}</nav>")
    return page(f"{s.key}: {out}", "\n".join(body), script=timeline.TIMELINE_JS)


def build(store, record: dict, out: Path) -> int:
    """Write the report of a run into the folder `out` (which exists and is empty)."""
    data = load(store, record)
    samples = common.sample_keys(data, set(data.rows))
    for s in samples:
        p = out / page_path(s)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(sample_page(data, s), encoding="utf-8")
    (out / INDEX).write_text(index_page(data, samples), encoding="utf-8")
    return len(samples)
