"""The parts of a run's HTML report every benchmark's report shares: the run's record and its
stages' folders read once (RunData), the run and stage tables, the missing samples, a sample's
audio, words, runner events and stage statuses. A benchmark's report module (its `report` hook:
`build(store, record, out)`) composes its index and sample pages from these, page.py and
timeline.py. A piece that is missing or unreadable is named on the page; it never stops the report.

Audio (player): a sample page at samples/<subset>/<id>.html links its WAVs by relative path
through samples/<subset>/<id>/<name>, a relative symbolic link to the stage's file in the store
(a window of it, as MTR's round pages show, is written there as a file of its own). The page's URL
is the same from the store and from the run folder's samples/ link, and the links are relative,
so it opens from either and after the home folder is moved as a whole. Inside
`self_contained(keys)` the report is built for a bundle instead (bundle(): one file to send): only
those samples' pages (every sample's when keys is None), their audio inlined, and their links
pointing into the bundle.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable
from urllib.parse import quote

from duplexeval_common.errors import DuplexEvalError
from duplexeval_common.samples import Sample, id_sort_key
from duplexeval_common.secrets import scrub

from . import templates, timeline
from .page import CSP, STYLE, Markup, Raw, data_uri, fmt, link, player as _player, wav_bytes

INDEX = "report.html"
SAMPLES_DIR = "samples"
MAX_EVENTS = 400  # events listed on a sample page (the rest are counted)

EXTRA_CSS = """<style>
.outcome{font-weight:600}.note{background:#fff6d5;border:1px solid #e9d48a;padding:.4rem .6rem;margin:.5rem 0}
figure{display:inline-block;margin:.3rem 1rem .3rem 0}figcaption{font-size:.85rem;color:#556}
pre{white-space:pre-wrap;font-size:.8rem}
table.subset td:nth-child(3),table.subset th:nth-child(3){text-align:left}
""" + timeline.TIMELINE_CSS + "</style>"


@dataclass(frozen=True)
class Media:
    """How a report's sample pages get their audio: linked files (the default) or, for a
    self-contained bundle, data: URIs; `only`: the samples whose pages are written (None: all)."""
    bundle: bool = False
    only: frozenset[str] | None = None


_MEDIA: contextvars.ContextVar[Media] = contextvars.ContextVar("duplexeval_report_media", default=Media())


@contextlib.contextmanager
def _media(media: Media):
    token = _MEDIA.set(media)
    try:
        yield
    finally:
        _MEDIA.reset(token)


def self_contained(keys: Iterable[str] | None = None):
    """A context: reports built inside are for a bundle of the samples `keys`, every sample's when
    None (see the module docstring)."""
    return _media(Media(bundle=True, only=None if keys is None else frozenset(keys)))


def only_pages(keys: Iterable[str]):
    """A context: reports built inside write the whole index but the sample pages of `keys` only,
    their audio linked as usual (a preview of a large run; the scale test builds a 727-sample
    index this way)."""
    return _media(Media(bundle=False, only=frozenset(keys)))


@dataclass
class RunData:
    """A run's record and what its stages hold, read once for the index and every sample page
    (a benchmark's report adds what it reads of its own files)."""
    record: dict
    stage_dirs: dict[str, Path] = field(default_factory=dict)      # stage name -> folder
    stage_records: dict[str, dict] = field(default_factory=dict)   # stage name -> stage.json
    metrics: dict | None = None                                   # the aggregate stage's metrics.json
    tasks: dict[str, str] = field(default_factory=dict)           # sample key -> task (the manifests')
    problems: list[str] = field(default_factory=list)             # files that could not be read
    media: Media = field(default_factory=_MEDIA.get)              # linked or inlined audio
    out: Path | None = None                                       # the report folder (write_pages)

    @property
    def order(self) -> list[str]:
        return [s["name"] for s in self.record.get("stages", [])]

    def find(self, key: str, name: str) -> Path | None:
        """A sample's file: the last stage of the run that has it (the later stage wins, as
        duplexeval_common.samples.Inputs merges them)."""
        for stage in reversed(self.order):
            d = self.stage_dirs.get(stage)
            if d is not None:
                p = d / "samples" / key / name
                if p.is_file():
                    return p
        return None


def read_json(path: Path, data: RunData, what: str):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        data.problems.append(f"{what}: not readable ({type(exc).__name__}: {str(exc)[:120]})")
        return None


def load(store, record: dict, data: RunData | None = None) -> RunData:
    """The stages' folders and records, the tasks the manifests give each sample, and the
    aggregate stage's metrics.json."""
    data = data or RunData(record)
    for st in record.get("stages", []):
        d = store.stage_dir(st["key"])
        if not (d / "stage.json").is_file():
            continue
        data.stage_dirs[st["name"]] = d
        rec = read_json(d / "stage.json", data, f"{st['name']} stage.json")
        if isinstance(rec, dict):
            data.stage_records[st["name"]] = rec
        if (d / "manifest.json").is_file():
            doc = read_json(d / "manifest.json", data, f"{st['name']} manifest.json")
            for row in (doc.get("samples") if isinstance(doc, dict) else None) or []:
                if isinstance(row, dict) and isinstance(row.get("task"), str):
                    data.tasks[f"{row.get('subset')}/{row.get('id')}"] = row["task"]
    agg = data.stage_dirs.get("aggregate")
    if agg is not None and (agg / "metrics.json").is_file():
        data.metrics = read_json(agg / "metrics.json", data, "metrics.json")
    return data


def sample_keys(data: RunData, extra: set[str] = frozenset()) -> list[Sample]:
    """Every sample of the run: those any stage lists, those missing, and `extra` (keys a
    benchmark's scores name), each with the task its manifest row gives it."""
    keys = set(extra) | set(data.record.get("missing") or {})
    for rec in data.stage_records.values():
        keys |= set(rec.get("samples") or {})
    out = []
    for k in keys:
        subset, sep, sid = str(k).partition("/")
        try:
            out.append(Sample(subset, sid, data.tasks.get(str(k))))
        except DuplexEvalError:
            data.problems.append(f"sample {str(k)[:80]!r}: not a plain subset/id, left out")
    return sorted(set(out), key=lambda s: (s.subset, *id_sort_key(s.id)))


def page_path(s: Sample) -> str:
    return f"{SAMPLES_DIR}/{s.subset}/{s.id}.html"


def anchor(key: str) -> str:
    """The id of a sample's section in a bundle."""
    return "sample-" + key.replace("/", "--")


def written(data: RunData, s: Sample) -> bool:
    """Whether the report writes a page for sample s (every one, or a bundle's chosen ones)."""
    return data.media.only is None or s.key in data.media.only


def sample_link(data: RunData, s: Sample, text: str | None = None) -> Raw | str:
    """The index's link to a sample's page: its file, in a bundle its section (the samples
    left out of a bundle are plain text)."""
    text = s.id if text is None else text
    if not data.media.bundle:
        return link(page_path(s), text)
    return link("#" + anchor(s.key), text, target="_top") if written(data, s) else text


def back_link(data: RunData) -> Raw:
    """A sample page's link back to the index."""
    if data.media.bundle:
        return link("#report", "back to the report", target="_top")
    return link("../../" + INDEX, "back to the report")


def write_pages(data: RunData, out: Path, samples: Iterable[Sample], render: Callable[[Sample], str]) -> int:
    """Write render(s) to out/samples/<subset>/<id>.html for every sample the report writes (all,
    or a bundle's chosen ones); the number written. Players rendered meanwhile place their audio
    links under `out` (player)."""
    data.out = out
    n = 0
    for s in samples:
        if not written(data, s):
            continue
        p = out / page_path(s)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(render(s), encoding="utf-8")
        n += 1
    return n


def player(data: RunData, s: Sample, path: Path, signal: tuple, element_id: str, label: str,
           start: float = 0.0) -> Raw:
    """An audio player of a sample's file `path` (signal: audio_file(path)), from `start` seconds
    on: a relative link to the file (start 0) or to a WAV of its window written beside the page,
    loaded only when played; inlined in a bundle (or without a report folder)."""
    _, raw, sr = signal
    i = min(int(round(start * sr)), raw.shape[0]) if start > 0 else 0
    if data.media.bundle or data.out is None:
        return _player(element_id, label, data_uri(wav_bytes(raw[i:], sr), "audio/wav"), preload="auto")
    folder = data.out / SAMPLES_DIR / s.subset / s.id
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / path.name
    if i:
        target.write_bytes(wav_bytes(raw[i:], sr))
    else:
        target.unlink(missing_ok=True)
        os.symlink(os.path.relpath(os.path.abspath(path), os.path.abspath(folder)), target)
    return _player(element_id, label, quote(f"{s.id}/{path.name}"))


def sample_list(rows: list[dict], headers: list[str], left: int = 1, cls: str = "samples") -> Raw:
    """The index's list of samples with outcome filters and a search box (templates/samples.html):
    rows of {"outcome": str, "cells": [...]} (a cell is escaped unless it is Raw)."""
    outcomes: dict[str, int] = {}
    for r in rows:
        outcomes[r["outcome"]] = outcomes.get(r["outcome"], 0) + 1
    return Raw(templates.render("samples.html", rows=rows, headers=headers, left=left, cls=cls,
                                outcomes=sorted(outcomes.items())))


def bundle(title: str, index: str, pages: list[tuple[str, str]]) -> str:
    """One self-contained file (templates/bundle.html): the index and each (key, page) in its own
    frame; built from a report made inside self_contained()."""
    return str(templates.render("bundle.html", csp=Markup(CSP), style=Markup(STYLE), title=title, index=index,
                                pages=[{"key": k, "anchor": anchor(k), "html": h} for k, h in pages]))


def _run_macro(name: str):
    return templates.macro("run.html", name)


def run_table(data: RunData) -> Raw:
    r = data.record
    rows = [(k, r.get(k)) for k in ("model", "dataset", "asr", "judge", "limit", "runtime", "status")]
    if r.get("reason"):
        rows.append(("reason", scrub(str(r["reason"]))))
    if data.metrics:
        rows.append(("definitions", data.metrics.get("definitions")))
    stages = [{"name": s.get("name"), "component": s.get("component"), "key": str(s.get("key", ""))[:12],
               "status": s.get("status"), "failed": s.get("failed_samples", 0)} for s in r.get("stages", [])]
    return Raw(_run_macro("run_table")([(k, "-" if v is None else v) for k, v in rows], stages))


def missing_section(data: RunData) -> Raw:
    missing = data.record.get("missing") or {}
    return Raw(_run_macro("missing")([(k, scrub(str(v))) for k, v in sorted(missing.items())]))


def audio_file(path: Path | None):
    """(mono for drawing, the data as read, sample rate) or None; a string names a problem."""
    if path is None:
        return None
    import soundfile as sf
    try:
        data, sr = sf.read(str(path), dtype="float32", always_2d=True)
    except (RuntimeError, OSError, ValueError) as exc:
        return f"{path.name} is not readable audio ({str(exc)[:100]})"
    mono = data[:, 0] if data.shape[1] == 1 else data.mean(axis=1)
    return mono, data, sr


def words(data: RunData, path: Path | None, notes: list[str]) -> list[tuple[str, float, float]]:
    if path is None:
        return []
    doc = read_json(path, data, "output.json")
    try:
        out = []
        for c in doc["chunks"]:
            a, b = c["timestamp"]
            a = float(a)
            out.append((str(c.get("text", "")).strip(), a, a if b is None else float(b)))
        return out
    except (TypeError, KeyError, ValueError):
        notes.append("output.json (ASR words) is not in the expected form; words not shown")
        return []


def vad_segments(data: RunData, s: Sample) -> list[tuple[float, float]] | None:
    """The asr stage's VAD segments of a sample's output (vad.json), or None without one."""
    p = data.find(s.key, "vad.json")
    if p is not None:
        doc = read_json(p, data, f"{s.key} vad.json") or {}
        try:
            return [(float(x["start"]), float(x["end"])) for x in doc.get("segments", [])]
        except (TypeError, KeyError, ValueError, AttributeError):
            pass
    return None


def events(data: RunData, path: Path | None) -> Raw:
    """A sample's runner events as a table (the first MAX_EVENTS; the rest and unreadable lines counted)."""
    show = _run_macro("events")
    if path is None:
        return Raw(show(None, 0, 0))
    rows, bad = [], 0
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        return Raw(show(None, 0, 0, str(exc)))
    for line in lines:
        if not line.strip():
            continue
        try:
            ev = json.loads(line)
        except ValueError:
            ev = None
        if not isinstance(ev, dict):  # not JSON, or JSON but not an object ("[1]" once stopped the report)
            bad += 1
            continue
        t = ev.pop("t", None)
        typ = ev.pop("type", "")
        rows.append((fmt(t, 3) if isinstance(t, (int, float)) else "-", scrub(str(typ)),
                     scrub(json.dumps(ev, sort_keys=True, ensure_ascii=False))))
    return Raw(show(rows[:MAX_EVENTS], max(len(rows) - MAX_EVENTS, 0), bad))


def statuses(data: RunData, s: Sample) -> list[tuple]:
    out = []
    for name in data.order:
        rec = data.stage_records.get(name)
        st = (rec or {}).get("samples", {}).get(s.key)
        if rec is None:
            out.append((name, "not run", ""))
        elif st is None:
            out.append((name, "-", "not a sample of this stage"))
        else:
            out.append((name, st.get("status", "-"), scrub(str(st.get("reason", "")))))
    return out
